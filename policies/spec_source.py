"""Which spec a `pulumi preview` deploys, read by the pack at preview time (no hand-kept config).

In order: policy config `spec` (optional), the stack's config `accelstack:spec` (the analyzer
receives the stack's config; PULUMI_CONFIG), else `stacks/<stack>.yaml` (PULUMI_STACK). The
stack's other `accelstack:` keys (AMI pins) and `aws:region` are applied as the program applies
them (`accelstack.stackconfig`). A relative
path is looked up from the working directory, then from the directory holding `policies/` (the
project root when the pack lives in the project). The resolved stack carries the same resource
names as the program (`accelstack.resolve.deployment_name`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from accelstack.cost.ceiling import Ceiling
from accelstack.errors import AccelstackError
from accelstack.resolve import Stack
from accelstack.stackconfig import KNOWN_KEYS, REGION_KEY, SPEC_KEY, spec_pointer

PACK_ROOT = Path(__file__).resolve().parent.parent


def _stack_config(key: str) -> Any:
    import pulumi

    value = pulumi.runtime.get_config(key)
    return value if value not in (None, "") else None


def stack_config() -> dict[str, Any]:
    """The stack's config keys the program reads (`accelstack.stackconfig`)."""
    return {k: _stack_config(k) for k in (*KNOWN_KEYS, REGION_KEY)}


def spec_path(policy_config: Mapping[str, Any]) -> Path:
    """The spec file of the stack under preview; raises one line when none can be named."""
    pulumi_stack = os.environ.get("PULUMI_STACK")
    named = policy_config.get("spec")
    if not named and (pulumi_stack or _stack_config(SPEC_KEY)):
        source = f"Pulumi.{pulumi_stack}.yaml"
        named = spec_pointer(stack_config(), pulumi_stack or "", source, Path.cwd())
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
    """The resolved stack the preview deploys, exactly as the program resolves it (names,
    region, AMI pins: `accelstack.stackconfig.resolve_deployment`)."""
    from accelstack.catalog import load_catalog
    from accelstack.spec import load_spec
    from accelstack.stackconfig import resolve_deployment

    catalog = load_catalog()
    path = spec_path(policy_config)
    pulumi_stack = os.environ.get("PULUMI_STACK") or load_spec(path).name
    return resolve_deployment(path, pulumi_stack, stack_config(), catalog)


def ceiling_for_preview(policy_config: Mapping[str, Any]) -> Ceiling | None:
    """The organisation ceiling: policy config `ceiling` (a file), else ACCELSTACK_CEILING, else
    accelstack-ceiling.yaml in the working directory or beside `policies/`."""
    from accelstack.cost.ceiling import CEILING_FILE, find_ceiling

    named = policy_config.get("ceiling")
    if named:
        path = Path(str(named))
        return find_ceiling(path if path.exists() else PACK_ROOT / path)
    root = Path.cwd() if (Path.cwd() / CEILING_FILE).is_file() else PACK_ROOT
    return find_ceiling(None, root)
