"""Snapshot the input names of the pinned pulumi-aws provider for every resource type the program
emits (the types of tools/provider_replacements.py, plus the node sources of
accelstack/catalog/replacements.yaml), into accelstack/catalog/provider_inputs.json.

    python tools/provider_snapshot.py [--write]

The provider's schema JSON is not shipped with the Python SDK, and ForceNew (which inputs a
change replaces) is not in the SDK either: it is a property of the bridged Terraform provider,
which tools/provider_replacements.py reads from the provider's source. What the installed SDK does
carry is every input name (`pulumi.getter(name=...)` on each `<Resource>Args` property, and the
nested `...Args` classes each property's annotation names), so the snapshot records those, nested
paths included (`launchTemplate.id`), the ones that hold a list (`lists`), with the SDK version
and the requirement in pyproject.toml. tests/plan/test_updates_provider.py fails when the pin moves
and the snapshot does not, or when a table key is not an input of the pinned provider.
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
MAX_DEPTH = 4  # nested blocks deeper than this are not diffed field by field
_ARGS = re.compile(r"ForwardRef\('(\w+Args)'\)")


def requirement(package: str = "pulumi-aws") -> str:
    """The requirement of pyproject.toml's runtime dependencies for `package`."""
    found = re.search(rf'"({re.escape(package)}[<>=!~][^"]*)"', PYPROJECT.read_text("utf-8"))
    if found is None:
        raise SystemExit(f"pyproject.toml names no {package} requirement")
    return found.group(1)


def table_types() -> list[str]:
    """Every pulumi-aws type the program emits, and the node sources of the roll table."""
    from tools.provider_replacements import TYPES

    data = yaml.safe_load(TABLE.read_text(encoding="utf-8"))
    types = set(TYPES) | set(data["node_rolls"]["node_sources"])
    types.add(data["node_rolls"]["launch_template"]["type"])
    return sorted(types)


def _args_class(token: str) -> tuple[Any, Any]:
    """`aws:fsx/lustreFileSystem:LustreFileSystem` -> the `LustreFileSystemArgs` of the module
    that defines the resource class (a package may also export a nested type of that name: the
    legacy Bucket's `BucketVersioningArgs`), and that module (the nested Args it names)."""
    _, module, name = token.split(":")
    package = importlib.import_module(f"pulumi_aws.{module.split('/')[0]}")
    defining = sys.modules[getattr(package, name).__module__]
    # the SDK names a resource's args `<Name>InitArgs` where a nested type took `<Name>Args`
    args = getattr(defining, f"{name}InitArgs", None) or getattr(defining, f"{name}Args")
    return args, defining


def _inputs(cls: Any, package: Any, prefix: str, depth: int = 0) -> dict[str, bool]:
    """{dotted input name: holds a list} of one Args class and the Args classes it names."""
    out: dict[str, bool] = {}
    for attr, value in vars(cls).items():
        if not isinstance(value, property):
            continue
        api = getattr(value.fget, "_pulumi_name", attr)
        annotation = repr((value.fget.__annotations__ or {}).get("return", ""))
        out[prefix + api] = "Sequence[" in annotation
        nested = {n for n in _ARGS.findall(annotation)}
        for name in sorted(nested):
            inner = getattr(package, name, None)
            if inner is not None and depth < MAX_DEPTH:
                out |= _inputs(inner, package, f"{prefix}{api}.", depth + 1)
    return out


def sdk_inputs(token: str) -> dict[str, bool]:
    """{dotted input name: holds a list} of one pulumi-aws resource type."""
    cls, package = _args_class(token)
    return _inputs(cls, package, "")


def snapshot() -> dict[str, Any]:
    inputs, lists = {}, {}
    for token in table_types():
        found = sdk_inputs(token)
        inputs[token] = sorted(found)
        lists[token] = sorted(k for k, is_list in found.items() if is_list)
    return {
        "provider": "pulumi-aws",
        "version": importlib.metadata.version("pulumi_aws"),
        "requirement": requirement(),
        "source": "tools/provider_snapshot.py: input names of the installed pulumi_aws SDK "
        "(pulumi.getter names of each <Resource>Args (or InitArgs) and of the nested Args classes its "
        "properties' annotations name)",
        "inputs": inputs,
        "lists": lists,
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
