"""The catalog's YAML parser: libyaml's safe loader (C) where PyYAML was built with it, else the
pure-Python one. Both build the same documents (tests/repo/test_inner_loop.py compares them on every
catalog file); the C one parses the catalog about ten times faster, which was a third of
`accelstack validate`."""

from __future__ import annotations

from typing import Any

import yaml

SafeLoader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """yaml.safe_load, with the faster loader."""
    return yaml.load(text, Loader=SafeLoader)  # a safe loader: no arbitrary objects
