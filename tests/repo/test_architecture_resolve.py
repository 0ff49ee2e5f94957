"""`resolve` is the only resolver: outside accelstack/resolve, the inventory and the catalog,
code reads the resolved `Stack` and its pools, never the raw spec or the catalog through a
stack (`stack.spec...`, `stack.catalog...`), and no fact `resolve` puts on the pool (memory
fit, NeuronCores) is computed again.

The reads that remain are listed below, each module with the most reads it may hold and why;
a new read fails here: put the fact on the `Stack` (accelstack/resolve/stack.py) instead."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from ..conftest import ROOT

PACKAGE = ROOT / "accelstack"
#: Where the spec meets the catalog: these build the resolved facts.
RESOLVERS = ("accelstack/resolve/", "accelstack/inventory.py", "accelstack/catalog/")

_CANDIDATES = "asks the catalog about types the stack does not run (compare's candidates)"
_EDIT = "builds a what-if stack as an edit of the stack's spec, resolved by resolve"
_PRICES = "passes the catalog to the pricing and estimate functions, which read rates by region"
#: module -> (most reads of `<stack>.spec` / `<stack>.catalog`, why)
ALLOWED: dict[str, tuple[int, str]] = {
    "accelstack/cost/compare.py": (
        12,
        f"{_EDIT} (retarget_spec); {_CANDIDATES}; the Capacity Block limits, node-group "
        "limits and on-demand capacity threshold sizing holds candidates to; the layout "
        "search's catalog",
    ),
    "accelstack/render/trial.py": (4, f"{_EDIT} (the trial stack); the trial's image"),
    "accelstack/cost/guard.py": (
        6,
        f"{_PRICES}; Capacity Block windows and block counts; estimated rates' price spans",
    ),
    "accelstack/cost/pricing.py": (2, _PRICES),
    "accelstack/cost/rundata.py": (2, _PRICES),
    "accelstack/render/artifacts.py": (2, "the templates' `spec`; the chart rows they name"),
    "accelstack/preflight/checks.py": (3, "compares catalog facts with what the account says"),
    "accelstack/preflight/scale_checks.py": (2, "compares catalog limits with the account's"),
    "accelstack/plan/lookups.py": (2, "the offline plan's mocks answer from the catalog"),
    "accelstack/plan/rules/network.py": (1, "the system nodes' type row (address budget)"),
    "accelstack/plan/rules/plugins.py": (1, "matches planned Helm releases to chart rows"),
    "accelstack/render/runbook.py": (1, "names the spec file the runbook edits"),
}
#: Calls that compute a fact `resolve` puts on the pool -> the modules allowed to call them
RESOLVED_CALLS: dict[str, dict[str, str]] = {
    "memory_fit": {
        "accelstack/cost/estimate.py": "estimate_training also serves the MFU records, "
        "which have no stack",
        "accelstack/cost/calibrate.py": "a calibration record must fit the nodes it ran on; "
        "a record has no stack",
    },
    "neuron_cores": {},
    # what a node gives a pod (accelstack/resolve/node.py): `pool.pod`, `pool.hugepages_2mi`,
    # `pool.python_env`
    "pod_resources": {},
    "node_hugepages_2mi": {},
    "python_env": {},
    "workload_fit": {
        "accelstack/cost/estimate.py": "estimate_training's path for the MFU records (no `fit`)",
    },
}
#: Modules whose estimate_training calls may leave out `fit` (the pool's memory fit): the
#: public training records, which have no stack and so no resolved pool.
RECORD_ESTIMATES = {"accelstack/cost/mfu.py": "reproduces the MFU records' estimates"}


def _stack_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """`stack`, and every parameter or local annotated `Stack`."""
    names = {"stack"}
    for arg in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs):
        if arg.annotation is not None and ast.unparse(arg.annotation).strip("'\"") == "Stack":
            names.add(arg.arg)
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and ast.unparse(node.annotation) == "Stack"
        ):
            names.add(node.target.id)
    return names


def _is_stack(node: ast.expr, names: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in names or node.id.endswith("_stack")
    if isinstance(node, ast.Attribute):  # self.stack, args.stack
        return node.attr == "stack" or node.attr.endswith("_stack")
    return False


def stack_reads(source: str) -> list[tuple[int, str]]:
    """(line, expression) of every read of `.spec` or `.catalog` on a stack."""
    out = set()
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        names = _stack_names(fn)
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ("spec", "catalog")
                and _is_stack(node.value, names)
            ):
                out.add((node.lineno, ast.unparse(node)))
    return sorted(out)


def package_files(package: Path) -> list[Path]:
    """Every module of the package as it installs: the walk follows its links
    (accelstack/components, accelstack/policypack are links to top-level folders; on Python
    3.11 `Path.rglob` does not follow them). Named by their path inside the package."""
    out = []
    for folder, dirs, files in os.walk(package, followlinks=True):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        out += [Path(folder) / f for f in files if f.endswith(".py")]
    return sorted(out)


def _modules() -> list[tuple[str, str]]:
    out = []
    for path in package_files(PACKAGE):
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith(RESOLVERS):
            out.append((rel, path.read_text(encoding="utf-8")))
    return out


#: The program's entry: it wires render's node launch scripts into `build`, as the CLI's
#: `program()` does; it builds no component and reads the resolved stack like them.
PROGRAM_ENTRY = "accelstack/components/entry.py"


def raw_reads(source: str) -> list[tuple[int, str]]:
    """(line, expression) of every `.spec` or `.catalog` read, on anything: a component reads
    the resolved `Stack` and its pools only (a pool's `.spec` is the raw spec row too)."""
    return sorted(
        {
            (node.lineno, ast.unparse(node))
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and node.attr in ("spec", "catalog")
        }
    )


def forbidden_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import of accelstack.render, and of the catalog's loader or
    `Catalog` (its row types, as annotations, are fine)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = {a.name for a in node.names}
            if node.module.startswith("accelstack.render") or (
                node.module.startswith("accelstack.catalog")
                and names & {"Catalog", "load_catalog", "catalog_file"}
            ):
                out.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            out += [
                (node.lineno, a.name) for a in node.names if a.name.startswith("accelstack.render")
            ]
    return out


def component_findings(package: Path) -> list[str]:
    """What a component reads or imports that is not a resolved fact, in every module of
    `package`/components (walked through the link)."""
    found = []
    for path in package_files(package / "components"):
        rel = f"{package.name}/components/{path.relative_to(package / 'components').as_posix()}"
        source = path.read_text(encoding="utf-8")
        reads = [f"{line}: {expr}" for line, expr in raw_reads(source)]
        if rel != PROGRAM_ENTRY:
            reads += [f"{line}: import {mod}" for line, mod in forbidden_imports(source)]
        found += [f"{rel}:{r}" for r in reads]
    return found


@pytest.mark.slow
def test_no_module_reads_the_spec_or_catalog_through_a_stack() -> None:
    found = []
    for rel, source in _modules():
        reads = stack_reads(source)
        most, _ = ALLOWED.get(rel, (0, ""))
        if len(reads) > most:
            where = ", ".join(f"{line}: {expr}" for line, expr in reads)
            found.append(f"{rel} reads {len(reads)} (allowed {most}): {where}")
    assert found == [], "read the resolved Stack instead (put the fact there):\n" + "\n".join(found)


@pytest.mark.slow
def test_the_allow_list_is_no_longer_than_needed() -> None:
    """Each listed module still holds exactly as many reads as it is allowed (lower the
    number, or drop the entry, when a read moves onto the Stack)."""
    counts = {rel: len(stack_reads(source)) for rel, source in _modules()}
    stale = {rel: (counts.get(rel), most) for rel, (most, _) in ALLOWED.items()}
    assert {rel: c for rel, c in stale.items() if c[0] != c[1]} == {}


def _calls(source: str, name: str) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == name)
            or (isinstance(node.func, ast.Attribute) and node.func.attr == name)
        )
    ]


@pytest.mark.slow
def test_resolved_pool_facts_are_computed_only_by_resolve() -> None:
    """The memory fit and the NeuronCores are fields of the resolved pool; consumers read
    `pool.memory_fit`, `pool.neuron_cores`, `pool.procs_per_node`, `pool.cores_per_process`."""
    found = []
    for rel, source in _modules():
        for name, allowed in RESOLVED_CALLS.items():
            lines = _calls(source, name)
            if lines and rel not in allowed:
                found.append(f"{rel}:{lines[0]} calls {name}()")
    assert found == []


def _calls_without(source: str, name: str, keyword: str) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == name
        and keyword not in {k.arg for k in node.keywords}
    ]


@pytest.mark.slow
def test_a_stacks_estimate_reads_the_pools_memory_fit() -> None:
    """estimate_training works the memory fit out only for a record: a stack's estimate passes
    `fit=pool.memory_fit`."""
    found = [
        f"{rel}:{lines[0]} calls estimate_training() without fit="
        for rel, source in _modules()
        if rel not in RECORD_ESTIMATES
        and (lines := _calls_without(source, "estimate_training", "fit"))
    ]
    assert found == []


def stack_replaces(source: str) -> list[int]:
    """Lines of `replace(<stack>, ...)` / `dataclasses.replace(<stack>, ...)`: a changed
    resolved stack is built by resolve (a spec edit resolved again, or a `Stack.with_*`)."""
    out = set()
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        names = _stack_names(fn)
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Call)
                and node.args
                and (
                    (isinstance(node.func, ast.Name) and node.func.id == "replace")
                    or (isinstance(node.func, ast.Attribute) and node.func.attr == "replace")
                )
                and _is_stack(node.args[0], names)
            ):
                out.add(node.lineno)
    return sorted(out)


@pytest.mark.slow
def test_no_module_outside_resolve_replaces_a_stack() -> None:
    found = [
        f"{rel}:{lines[0]} calls replace() on a Stack"
        for rel, source in _modules()
        if (lines := stack_replaces(source))
    ]
    assert found == [], "build the changed stack in accelstack/resolve (a Stack.with_*)"


def test_the_checks_see_a_read() -> None:
    """The scanners find what they are for (a check that found nothing proves nothing)."""
    source = (
        "def f(stack, other: Stack, pool):\n"
        "    a = stack.spec.workload\n"
        "    b = other.catalog.defaults\n"
        "    c = self.stack.spec\n"
        "    d = pool.spec.name\n"  # the pool's own spec row is not a stack read
        "    return memory_fit(cat, 't', 1, 'bf16')\n"
    )
    assert [line for line, _ in stack_reads(source)] == [2, 3, 4]
    assert _calls(source, "memory_fit") == [6]


def test_the_checks_see_a_replace_and_an_estimate_without_fit() -> None:
    source = (
        "def f(stack, other: Stack, pool, cache):\n"
        "    a = replace(stack, image='x')\n"
        "    b = dataclasses.replace(other, image='x')\n"
        "    c = replace(pool, nodes=1)\n"  # a pool is not a stack
        "    d = cache.image.replace('a', 'b')\n"  # str.replace on a non-stack
        "    e = estimate_training(cat, 't', 1, wl)\n"
        "    return estimate_training(cat, 't', 1, wl, fit=pool.memory_fit)\n"
    )
    assert stack_replaces(source) == [2, 3]
    assert _calls_without(source, "estimate_training", "fit") == [6]


@pytest.mark.slow
def test_components_read_only_resolved_facts() -> None:
    """No component reads the raw spec or the catalog (`stack.spec`, `stack.catalog`, a pool's
    `.spec`), imports render (pod sizing, huge pages and the node environment are resolved
    facts: accelstack/resolve/node.py) or loads the catalog; the program's entry alone imports
    render, to hand `build` its node launch scripts."""
    assert component_findings(PACKAGE) == [], "put the fact on the resolved Stack or pool"


def test_the_walk_sees_every_component_through_the_link() -> None:
    seen = {p.name for p in package_files(PACKAGE / "components")}
    assert (PACKAGE / "components").is_symlink()
    assert seen == {p.name for p in (ROOT / "components").glob("*.py")} and "cluster.py" in seen


def test_a_planted_read_in_a_component_fails(tmp_path: Path) -> None:
    """A tree laid out like the repository (components/ at the top, the package's link to
    it): a read of the raw spec, of a pool's spec row, and a render import each fail."""
    (tmp_path / "components").mkdir()
    (tmp_path / "accelstack").mkdir()
    (tmp_path / "accelstack" / "components").symlink_to("../components")
    (tmp_path / "components" / "quiet.py").write_text("def f(stack):\n    return stack.name\n")
    (tmp_path / "components" / "planted.py").write_text(
        "from accelstack.render.pods import precompile_key\n\n\n"
        "def f(stack, pool):\n    x = stack.spec.network\n    return pool.spec.nodes, x\n"
    )
    found = component_findings(tmp_path / "accelstack")
    planted = "/".join(("accelstack", "components", "planted.py"))  # a made-up module
    assert found == [
        f"{planted}:5: stack.spec",
        f"{planted}:6: pool.spec",
        f"{planted}:1: import accelstack.render.pods",
    ]
