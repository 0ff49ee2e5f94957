"""The layout holds: small functions, one installed top-level package, a Pulumi-free core.

(The import layering itself is import-linter's job: `make lint` runs `lint-imports` with the
contracts in pyproject.toml.)"""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ..conftest import ROOT
from ..helpers_wheel import build_wheel

MAX_FUNCTION_LINES = 60


def _long_functions(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    out.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length})")
    return out


@pytest.mark.slow
@pytest.mark.parametrize("folder", ["accelstack", "components"])
def test_no_function_is_longer_than_60_lines(folder: str) -> None:
    assert _long_functions(ROOT / folder) == []


def test_the_length_check_sees_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "m.py").write_text(f"def f():\n{body}\n")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert _long_functions(tmp_path) == [f"m.py:1 f ({MAX_FUNCTION_LINES + 1})"]
    finally:
        ROOT = saved


@pytest.mark.slow
def test_the_core_imports_no_pulumi() -> None:
    """Validation, pricing and rendering work without the Pulumi toolchain loaded."""
    code = (
        "import sys\n"
        "import accelstack.spec, accelstack.catalog, accelstack.resolve, accelstack.render\n"
        "import accelstack.cost.guard, accelstack.cost.compare, accelstack.preflight\n"
        "import accelstack.plan, accelstack.cli\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0].startswith('pulumi')"
        " or m.startswith('accelstack.components')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_the_wheel_installs_only_the_accelstack_package(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"accelstack"}
    assert "accelstack/components/program.py" in names
    assert "accelstack/templates/neuron-xla-node.sh.j2" in names
    assert "accelstack/templates/_fabric_check.sh.j2" in names
    assert "accelstack/presets/llama3-70b-trn2.yaml" in names
    assert "accelstack/catalog/prices.yaml" in names
    assert "accelstack/catalog/provider_replacements.json" in names  # `diff` reads it
    assert not any(n.startswith("components/") for n in names)


def _command_imports(path: Path) -> list[str]:
    """`accelstack.cli.<y>_cmds` modules that `path` imports (at any depth: function-level
    imports count), other than itself."""
    own = f"accelstack.cli.{path.stem}"
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        modules = {".".join(n.split(".")[:3]) for n in names}
        for module in sorted(modules):
            if module.startswith("accelstack.cli.") and module.endswith("_cmds") and module != own:
                found.append((node.lineno, f"{path.name}:{node.lineno} imports {module}"))
    return [line for _, line in sorted(found)]


def test_no_command_module_imports_another_command_module() -> None:
    """CLI command modules stay thin (parse, call, print): a helper two commands share lives
    in a core module or a shared cli module (cli/planning.py, cli/specfiles.py), never in
    another command's module."""
    commands = sorted((ROOT / "accelstack" / "cli").glob("*_cmds.py"))
    assert len(commands) >= 10
    assert [line for path in commands for line in _command_imports(path)] == []


def test_the_command_import_check_sees_one(tmp_path: Path) -> None:
    bad = tmp_path / "diff_cmds.py"
    bad.write_text(
        "def f():\n    from accelstack.cli.plan_cmds import planned_row\n"
        "from accelstack.cli import spec_cmds\nimport accelstack.cli.init_cmds\n"
        "from accelstack.cli.diff_cmds import x\nfrom accelstack.cli.planning import y\n",
        encoding="utf-8",
    )
    assert _command_imports(bad) == [
        "diff_cmds.py:2 imports accelstack.cli.plan_cmds",
        "diff_cmds.py:3 imports accelstack.cli.spec_cmds",
        "diff_cmds.py:4 imports accelstack.cli.init_cmds",
    ]


def _private_imports(path: Path) -> list[str]:
    """`file:line imports module.name` for each underscore name imported from another
    accelstack module (inside functions too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("accelstack"):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{path.name}:{node.lineno} imports {node.module}.{alias.name}")
    return found


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_no_module_imports_another_modules_private_names() -> None:
    """A name two modules share is public in the module that owns it; an underscore name is
    that module's own (a command module reaching into another's helpers is the first step
    to the CLI holding application logic)."""
    modules = sorted((ROOT / "accelstack").rglob("*.py"))
    assert len(modules) > 100
    assert [line for path in modules for line in _private_imports(path)] == []


def test_the_private_import_check_sees_one(tmp_path: Path) -> None:
    bad = tmp_path / "plan_cmds.py"
    bad.write_text(
        "def f():\n    from accelstack.cli.stackrefs import _from_ref, refs_at\n"
        "from accelstack.plan import __version__\nfrom os import _exit\n",
        encoding="utf-8",
    )
    assert _private_imports(bad) == ["plan_cmds.py:2 imports accelstack.cli.stackrefs._from_ref"]
