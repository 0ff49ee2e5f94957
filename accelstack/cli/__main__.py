"""`python -m accelstack.cli`: the same entry point as the `accelstack` script.

`python -m` puts the working directory first on `sys.path`, and the gate runs in the checkout
under review: a committed `pulumi_aws/`, `yaml/` or `components.py` there would be imported by
the gate itself. The entry drops that path before any command runs, as the installed
`accelstack` script (whose `sys.path[0]` is its own folder) and `python -P` never add it
(https://docs.python.org/3/using/cmdline.html#cmdoption-P). What `accelstack.cli` imported to
get here (typer) was imported before: run the installed script, or `python -P -m`.
"""

import os
import sys

if not sys.flags.safe_path and sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from accelstack.cli import main

sys.exit(main())
