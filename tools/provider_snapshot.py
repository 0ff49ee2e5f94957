"""Snapshot the input names of the pinned pulumi-aws provider for the resource types that
accelstack/catalog/replacements.yaml describes, into accelstack/catalog/provider_inputs.json.

    python tools/provider_snapshot.py [--write]

The provider's schema JSON is not shipped with the Python SDK, and ForceNew (which inputs a
change replaces) is not in the SDK either: it is a property of the bridged Terraform provider,
which replacements.yaml cites field by field. What the installed SDK does carry is every input
name (`pulumi.getter(name=...)` on each `<Resource>Args` property, nested `<Resource><Field>Args`
classes included), so the snapshot records those with the SDK version and the requirement in
pyproject.toml; tests/plan/test_updates_provider.py fails when the pin moves and the snapshot does not,
or when a table key is not an input of the pinned provider.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "accelstack" / "catalog" / "replacements.yaml"
SNAPSHOT = ROOT / "accelstack" / "catalog" / "provider_inputs.json"
PYPROJECT = ROOT / "pyproject.toml"


def requirement() -> str:
    """The pulumi-aws requirement of pyproject.toml's runtime dependencies."""
    found = re.search(r'"(pulumi-aws[^"]*)"', PYPROJECT.read_text(encoding="utf-8"))
    if found is None:
        raise SystemExit("pyproject.toml names no pulumi-aws requirement")
    return found.group(1)


def table_types() -> list[str]:
    data = yaml.safe_load(TABLE.read_text(encoding="utf-8"))
    types = set(data["replace_on_change"]) | set(data["node_rolls"]["node_sources"])
    types.add(data["node_rolls"]["launch_template"]["type"])
    return sorted(types)


def _args_class(token: str) -> Any:
    """`aws:fsx/lustreFileSystem:LustreFileSystem` -> pulumi_aws.fsx.LustreFileSystemArgs."""
    _, module, name = token.split(":")
    package = importlib.import_module(f"pulumi_aws.{module.split('/')[0]}")
    return getattr(package, f"{name}Args"), package, name


def _inputs(cls: Any, package: Any, prefix: str, stem: str, depth: int = 0) -> list[str]:
    out = []
    for attr, value in vars(cls).items():
        if not isinstance(value, property):
            continue
        api = getattr(value.fget, "_pulumi_name", attr)
        out.append(prefix + api)
        nested_name = f"{stem}{''.join(p.capitalize() for p in attr.split('_'))}Args"
        nested = getattr(package, nested_name, None)
        if nested is not None and depth < 1:
            out += _inputs(nested, package, f"{prefix}{api}.", stem, depth + 1)
    return out


def snapshot() -> dict[str, Any]:
    inputs = {}
    for token in table_types():
        cls, package, name = _args_class(token)
        inputs[token] = sorted(_inputs(cls, package, "", name))
    return {
        "provider": "pulumi-aws",
        "version": importlib.metadata.version("pulumi_aws"),
        "requirement": requirement(),
        "source": "tools/provider_snapshot.py: input names of the installed pulumi_aws SDK "
        "(pulumi.getter names of each <Resource>Args and its nested <Resource><Field>Args)",
        "inputs": inputs,
    }


def main(argv: list[str]) -> int:
    text = json.dumps(snapshot(), indent=1, sort_keys=True) + "\n"
    if "--write" in argv:
        SNAPSHOT.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
