"""`python -m accelstack.cli`: the same entry point as the `accelstack` script."""

import sys

from accelstack.cli import main

sys.exit(main())
