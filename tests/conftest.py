"""Shared fixtures. Topic-specific helpers live in tests/helpers_*.py, not here."""

from __future__ import annotations

import atexit
import gc
import os
import shutil
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from accelstack.catalog import Catalog, load_catalog

from . import planmemo

if TYPE_CHECKING:
    from accelstack.plan import Plan
    from accelstack.resolve import Stack

#: tests/ itself: its data (golden/, fixtures/, shims/) is found from here, wherever a test lives
TESTS_DIR = Path(__file__).resolve().parent
ROOT = TESTS_DIR.parent
STACKS = ROOT / "stacks"
PRESETS = sorted(STACKS.glob("*.yaml"))
UPDATE_GOLDEN = os.environ.get("ACCELSTACK_UPDATE_GOLDEN") == "1"

# Tests never reach AWS: no credentials from the developer's machine, a fake region default.
for var in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
    os.environ.pop(var, None)
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
# The bundled catalog only: a developer's catalog overlay must not change what tests see.
os.environ.pop("ACCELSTACK_CATALOG_DIR", None)
# Facts that change with time (EKS support windows) are judged on a pinned date, so golden
# files do not drift; tests that need another date set ACCELSTACK_TODAY themselves.
os.environ["ACCELSTACK_TODAY"] = "2026-11-22"
# A rendered Neuron node script keeps its graph cache under the preset's /fsx path unless told
# otherwise: every script the suite runs writes it into a temporary directory, never onto the
# machine's /fsx (tests that check the cache path set their own).
os.environ["ACCELSTACK_NEFF_CACHE_DIR"] = tempfile.mkdtemp(prefix="accelstack-neff-cache-")
# The parsed-catalog cache (accelstack/catalog/cache.py) of the run in a temporary directory,
# never the developer's ~/.cache: made once by the controlling process, which xdist's workers
# (and the commands tests start) inherit, and removed when it exits.
if "PYTEST_XDIST_WORKER" not in os.environ:
    os.environ["ACCELSTACK_CACHE_DIR"] = tempfile.mkdtemp(prefix="accelstack-cache-")
    atexit.register(shutil.rmtree, os.environ["ACCELSTACK_CACHE_DIR"], True)
# A stack planned again by the same program answers from the plan made before (before any test
# module imports run_plan; tests/planmemo.py says why that holds).
planmemo.install()
# A test process keeps a large heap alive (botocore's service models, moto's backends, the
# catalog, every imported module), and a full collection walks all of it. With the collector's
# default young generation (700 objects) the suite's allocations started such a collection
# every second or so: about 45 s of CPU in a `make test` run, up to a third of some catalog,
# preflight and CLI tests. 10,000 keeps young collections cheap and full ones rare; a worker's
# memory grows by under a tenth. (Plans already run with the collector off:
# accelstack/plan/engine.py.)
gc.set_threshold(10_000, 10, 10)
# moto's EC2 backend copies its bundled catalogue of public AMIs (thousands of objects) into
# every region and account a test touches; no test or accelstack call reads them (AMIs are
# resolved from SSM parameters, answered by botocore's Stubber).
os.environ.setdefault("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")


class _PlanAwarePatch(pytest.MonkeyPatch):
    """pytest's MonkeyPatch that empties the suite's store of plans (tests/planmemo.py): what it
    patches may be the program, whose plans the store holds only while its code stays the
    same."""

    def setattr(self, *args: Any, **kwargs: Any) -> None:
        planmemo.forget()
        super().setattr(*args, **kwargs)

    def delattr(self, *args: Any, **kwargs: Any) -> None:
        planmemo.forget()
        super().delattr(*args, **kwargs)

    def setitem(self, *args: Any, **kwargs: Any) -> None:
        planmemo.forget()
        super().setitem(*args, **kwargs)

    def undo(self) -> None:
        planmemo.forget()
        super().undo()


@pytest.fixture
def monkeypatch() -> Iterator[pytest.MonkeyPatch]:
    """pytest's own fixture (a MonkeyPatch undone after the test), plan-aware (above)."""
    patch = _PlanAwarePatch()
    yield patch
    patch.undo()


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog()


@cache
def planned_preset(stem: str) -> tuple[Stack, Plan]:
    """A preset resolved and planned once per test session (the program under the mocks is
    the suite's slowest step). Shared: tests change copies (dataclasses.replace), never it."""
    from accelstack.resolve import resolve
    from accelstack.spec import load_spec
    from tests.helpers_plan import plan_stack

    stack = resolve(load_spec(STACKS / f"{stem}.yaml"))
    return stack, plan_stack(stack)


def require_torch() -> None:
    """Skip the calling test module unless torch is installed. Found, not imported: the tests
    run torch in torchrun subprocesses, and importing it at collection costs seconds."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        pytest.skip("run `pip install torch==2.13.0` (CPU build)", allow_module_level=True)


def preset_ids() -> list[str]:
    return [p.stem for p in PRESETS]


def compare_golden(actual: str, golden: Path) -> None:
    """Compare text with a golden file; ACCELSTACK_UPDATE_GOLDEN=1 rewrites it instead."""
    if UPDATE_GOLDEN or not golden.exists():
        if not UPDATE_GOLDEN and os.environ.get("CI"):
            pytest.fail(f"golden file {golden} is missing; run `make golden` and commit it")
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(actual)
        return
    expected = golden.read_text()
    if actual != expected:
        import difflib

        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(True), actual.splitlines(True), str(golden), "actual", n=2
            )
        )
        pytest.fail(f"{golden} differs (run `make golden` if intended):\n{diff[:6000]}")


# --- `make test-fast`: the unit tests, without plans or torchrun ---------------------------
#: What makes a test plan a stack (the program under Pulumi's mocks) or run a plan command.
PLAN_CALLS = (
    "plan_stack(",
    "run_plan(",
    "planned_preset(",
    "run_program(",
    '"plan"',
    '"check"',
    '"diff"',
)


def _function_sources(module: object) -> dict[str, str]:
    """The source (decorators included) of each function defined at the module's top level,
    read from its file once: `inspect.getsource` per function re-tokenizes the file for each
    one, which made collecting the suite take seconds."""
    import ast

    path = getattr(module, "__file__", None)
    if path is None:
        return {}
    try:
        text = Path(path).read_text()
    except OSError:
        return {}
    lines = text.splitlines(keepends=True)
    sources: dict[str, str] = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            sources[node.name] = "".join(lines[start - 1 : node.end_lineno])
    return sources


def _other_test_module(fn: object, module: Any) -> Any:
    """The test module (not conftest) that defines `fn`, where that is not `module`."""
    import sys

    home = sys.modules.get(getattr(fn, "__module__", None) or "")
    if not callable(fn) or home is None or home is module:
        return None
    name = home.__name__
    return home if name.startswith("tests.") and name != "tests.conftest" else None


def _planning_helpers(module: Any, known: dict[str, set[str]] | None = None) -> set[str]:
    """The module's functions (fixtures included) that plan, directly or through another: one
    of its own, or a helper imported from another test module that plans there. `known`:
    the answers so far, by module name."""
    known = {} if known is None else known
    if module.__name__ in known:
        return known[module.__name__]
    known[module.__name__] = set()  # an import cycle between test modules ends here
    sources = _function_sources(module)
    planning = {n for n, src in sources.items() if any(c in src for c in PLAN_CALLS)}
    for name, fn in vars(module).items():
        home = _other_test_module(fn, module)
        if home is not None and getattr(fn, "__name__", None) in _planning_helpers(home, known):
            planning.add(name)
    grew = True
    while grew:
        more = {n for n, src in sources.items() if any(f"{h}(" in src for h in planning)}
        grew = not more <= planning
        planning |= more
    known[module.__name__] = planning
    return planning


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that plans with `plan` (`make test-fast` runs `-m "not plan and not
    slow"`): its own code, a helper or a fixture of its module (or a helper it imports from
    another test module) calls the plan engine."""
    helpers: dict[str, set[str]] = {}
    for item in items:
        module = getattr(item, "module", None)
        name = getattr(item, "originalname", item.name)
        if module is None:
            continue
        planning = _planning_helpers(module, helpers)  # once per module
        fixtures = set(getattr(item, "fixturenames", ()))
        if name in planning or fixtures & planning:
            item.add_marker(pytest.mark.plan)
