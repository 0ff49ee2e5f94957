"""Which spec a `pulumi preview` deploys, read by the pack at preview time (no hand-kept config).

In order: policy config `spec` (optional), the stack's config `accelstack:spec` (the analyzer
receives the stack's config; PULUMI_CONFIG), else `stacks/<stack>.yaml` (PULUMI_STACK). A relative
path is looked up from the working directory, then from the directory holding `policies/` (the
project root when the pack lives in the project). The resolved stack carries the same resource
names as the program (`accelstack.resolve.deployment_name`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from accelstack.errors import AccelstackError
from accelstack.resolve import Stack

PACK_ROOT = Path(__file__).resolve().parent.parent


def _stack_config(key: str) -> str | None:
    import pulumi

    value = pulumi.runtime.get_config(key)
    return value if isinstance(value, str) and value else None


def spec_path(policy_config: Mapping[str, Any]) -> Path:
    """The spec file of the stack under preview; raises one line when none can be named."""
    named = policy_config.get("spec") or _stack_config("accelstack:spec")
    pulumi_stack = os.environ.get("PULUMI_STACK")
    if not named and pulumi_stack:
        named = f"stacks/{pulumi_stack}.yaml"
    if not named:
        raise AccelstackError(
            "no spec: set config accelstack:spec, policy config spec, or name the stack after "
            "its spec (stacks/<stack>.yaml)"
        )
    path = Path(str(named))
    if path.is_absolute() or path.exists():
        return path
    beside = PACK_ROOT / path
    return beside if beside.exists() else path


def stack_for_preview(policy_config: Mapping[str, Any]) -> Stack:
    """The resolved stack the preview deploys (names as the program derives them)."""
    from accelstack.catalog import load_catalog
    from accelstack.resolve import deployment_name, resolve
    from accelstack.spec import load_spec

    catalog = load_catalog()
    spec = load_spec(spec_path(policy_config), catalog)
    pulumi_stack = os.environ.get("PULUMI_STACK") or spec.name
    return resolve(spec, catalog, name=deployment_name(spec.name, pulumi_stack))
