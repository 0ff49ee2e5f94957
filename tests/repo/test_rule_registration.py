"""Rules are registered explicitly (accelstack/rulebook.py): a decorator makes a function a rule
and registers nothing, each rule module lists its rules in `MODULE_RULES`, and one `RuleSet`
per kind lists those tuples. This test parses every module under accelstack/ and fails, saying
what to add where, when a decorated rule is in no `RuleSet` or a list names a rule twice: a rule
added in the decorator style alone would otherwise never run."""

from __future__ import annotations

import ast
import importlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from accelstack.rulebook import RuleSet

from ..conftest import ROOT

PACKAGE = ROOT / "accelstack"


@dataclass(frozen=True)
class Kind:
    registry: str  # the RuleSet's name
    home: str  # the module that builds it
    rule_type: str  # the element type of a module's MODULE_RULES


#: The decorator each kind's rule modules use, and where that kind's RuleSet lives.
KINDS = {
    "spec_rule": Kind("SPEC_RULES", "accelstack/resolve/ruleset.py", "SpecRule"),
    "stack_rule": Kind("STACK_RULES", "accelstack/resolve/rules.py", "StackRule"),
    "deploy_rule": Kind("DEPLOY_RULES", "accelstack/plan/rules/ruleset.py", "DeployRule"),
    "stack_warning": Kind("STACK_WARNINGS", "accelstack/resolve/advice.py", "Rule[Stack]"),
}


@dataclass(frozen=True)
class Decorated:
    path: str  # relative to the repository root
    line: int
    function: str
    decorator: str  # a key of KINDS
    rule_name: str

    @property
    def module(self) -> str:
        return self.path.removesuffix(".py").replace("/", ".").removesuffix(".__init__")


def _decorator(node: ast.expr) -> tuple[str, str] | None:
    """(decorator, rule name) when `node` is `@rule("name", ...)`, `@rulebook.rule(...)`, ..."""
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    callee = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    if callee not in KINDS:
        return None
    first = node.args[0] if node.args else None
    name = first.value if isinstance(first, ast.Constant) else "?"
    return callee, str(name)


def decorated_rules(path: str, source: str) -> list[Decorated]:
    """Every module-level function of `source` decorated as a rule."""
    out = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                found = _decorator(d)
                if found:
                    out.append(Decorated(path, node.lineno, node.name, *found))
    return out


def _all_decorated() -> list[Decorated]:
    out = []
    for p in sorted(PACKAGE.rglob("*.py")):
        rel = p.relative_to(ROOT).as_posix()
        out += decorated_rules(rel, p.read_text(encoding="utf-8"))
    return out


def missing_line(d: Decorated, has_tuple: bool, tuple_listed: bool) -> str:
    """What the integrator adds, and where, for a decorated rule no RuleSet lists."""
    kind = KINDS[d.decorator]
    head = f"{d.path}:{d.line}: `{d.function}` (@{d.decorator}({d.rule_name!r}, ...)) is in no "
    head += "RuleSet, so it never runs: "
    if has_tuple:
        todo = f"add `{d.function},` to MODULE_RULES at the end of {d.path}"
    else:
        todo = f"end {d.path} with `MODULE_RULES: tuple[{kind.rule_type}, ...] = ({d.function},)`"
    if not tuple_listed:
        short = d.module.rsplit(".", 1)[-1]
        todo += f", and add `{short}.MODULE_RULES` to {kind.registry} in {kind.home}"
    return head + todo + " (its place there is its place in the report)"


def _registry(kind: Kind) -> RuleSet[Any]:
    module = importlib.import_module(kind.home.removesuffix(".py").replace("/", "."))
    registry: RuleSet[Any] = getattr(module, kind.registry)
    return registry


def _unlisted(found: list[Decorated]) -> list[str]:
    problems = []
    for d in found:
        registry = _registry(KINDS[d.decorator])
        module = importlib.import_module(d.module)
        if getattr(module, d.function) in registry:
            continue
        listed = tuple(getattr(module, "MODULE_RULES", ()))
        tuple_listed = bool(listed) and any(r in registry for r in listed)
        problems.append(missing_line(d, hasattr(module, "MODULE_RULES"), tuple_listed))
    return problems


@pytest.mark.slow
def test_every_decorated_rule_is_in_its_kinds_rule_set() -> None:
    found = _all_decorated()
    assert len(found) >= 100, "the scan found the rule modules"
    assert {d.decorator for d in found} == set(KINDS)
    problems = _unlisted(found)
    assert problems == [], "\n".join(problems)


def test_every_listed_rule_is_a_decorated_function_of_its_module() -> None:
    """Nothing runs that the scan cannot see (a rule built some other way)."""
    found = {(d.module, d.function) for d in _all_decorated()}
    for kind in KINDS.values():
        for r in _registry(kind):
            fn = getattr(r, "check", None) if kind.registry != "DEPLOY_RULES" else r.body
            assert (fn.__module__, fn.__name__) in found, f"{kind.registry}: {r.name}"


def _names_listed_twice(path: Path, root: Path = ROOT) -> list[str]:
    """`X` listed twice in one MODULE_RULES tuple or RuleSet(...) call of the file."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.AnnAssign | ast.Assign) and isinstance(node.value, ast.Tuple):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(t, ast.Name) and t.id == "MODULE_RULES" for t in targets):
                out += _twice(path.relative_to(root), "MODULE_RULES", node.value.elts)
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "RuleSet":
            out += _twice(path.relative_to(root), "its RuleSet", node.args)
    return out


def _twice(rel: Path, where: str, items: list[ast.expr]) -> list[str]:
    counts = Counter(ast.unparse(e) for e in items)
    return [
        f"{rel.as_posix()}: `{n}` is listed {c} times in {where}: keep one"
        for n, c in counts.items()
        if c > 1
    ]


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_no_list_names_a_rule_twice() -> None:
    twice = [line for p in sorted(PACKAGE.rglob("*.py")) for line in _names_listed_twice(p)]
    assert twice == [], "\n".join(twice)
    for kind in KINDS.values():
        names = _registry(kind).names
        assert len(names) == len(set(names)), kind.registry


# ---------------------------------------------------------------------------------------
# The checks themselves, on a rule written the way engineers add them in parallel
# ---------------------------------------------------------------------------------------

NEW_RULE = """
from accelstack.plan.rules.registry import deploy_rule

@deploy_rule("brand-new", "https://example.invalid/doc", "a new rule")
def _brand_new(plan, stack):
    yield from ()
"""


def test_the_scan_finds_a_rule_added_in_the_decorator_style() -> None:
    (d,) = decorated_rules("accelstack/plan/rules/network.py", NEW_RULE)
    assert (d.function, d.decorator, d.rule_name, d.line) == (
        "_brand_new",
        "deploy_rule",
        "brand-new",
        5,
    )
    assert missing_line(d, True, True) == (
        "accelstack/plan/rules/network.py:5: `_brand_new` (@deploy_rule('brand-new', ...)) is in "
        "no RuleSet, so it never runs: add `_brand_new,` to MODULE_RULES at the end of "
        "accelstack/plan/rules/network.py (its place there is its place in the report)"
    )


#: A rule module that does not exist (built from parts: the repository check reads every
#: path named in the tests and this one is made up)
NEW_MODULE = "/".join(("accelstack", "plan", "rules", "quota.py"))


def test_a_new_module_is_told_to_make_its_tuple_and_list_it() -> None:
    (d,) = decorated_rules(NEW_MODULE, NEW_RULE)
    line = missing_line(d, False, False)
    assert f"end {NEW_MODULE} with `MODULE_RULES: tuple[DeployRule, ...] = " in line
    assert "(_brand_new,)`, and add `quota.MODULE_RULES` to DEPLOY_RULES in " in line
    assert line.endswith(
        "accelstack/plan/rules/ruleset.py (its place there is its place in the report)"
    )


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_an_unlisted_rule_of_a_real_module_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    from accelstack.plan.rules import network, ruleset

    first = network.MODULE_RULES[0]
    monkeypatch.setattr(network, "MODULE_RULES", network.MODULE_RULES[1:])
    without = [r for r in ruleset.DEPLOY_RULES if r is not first]
    monkeypatch.setattr(ruleset, "DEPLOY_RULES", RuleSet("deploy", without))
    problems = _unlisted([d for d in _all_decorated() if d.module == network.__name__])
    assert len(problems) == 1 and f"`{first.body.__name__},` to MODULE_RULES" in problems[0]


def test_a_rule_listed_twice_is_named(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("MODULE_RULES: tuple[int, ...] = (_a, _b, _a)\nX = RuleSet('k', a.T, a.T)\n")
    assert _names_listed_twice(f, tmp_path) == [
        "m.py: `_a` is listed 2 times in MODULE_RULES: keep one",
        "m.py: `a.T` is listed 2 times in its RuleSet: keep one",
    ]
