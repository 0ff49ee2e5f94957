"""The built wheel, installed into a clean virtualenv, works from an empty directory.

Tests never reach the network, and installing the Pulumi SDKs (hundreds of MB) into each venv
would take minutes, so the venv gets its dependencies another way: `python -m venv` (no system site-packages),
the wheel installed with `pip --no-deps`, then exactly the wheel's declared dependency
closure (its Requires-Dist, followed transitively through the installed metadata) linked in
from the test environment. Anything the code imports but the wheel does not declare (click,
a test extra) is absent, as it would be after `pip install accelstack` from an index. An
`init` project's own requirements.txt is installed the same way, with every index turned off.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import json
import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from ..conftest import ROOT
from ..helpers_program import fill
from ..helpers_wheel import build_editable, build_wheel, source_copy

pytestmark = pytest.mark.slow


def _closure(requires: list[str]) -> dict[str, md.Distribution]:
    """Installed distributions needed by `requires` (no extras of the root), transitively."""
    found: dict[str, md.Distribution] = {}
    todo = [(r, "") for r in requires]
    while todo:
        text, extra = todo.pop()
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        dist = md.distribution(req.name)
        key = dist.metadata["Name"].lower().replace("_", "-")
        extras = sorted(req.extras)
        if key in found and not extras:
            continue
        found[key] = dist
        for sub in dist.requires or []:
            todo.extend((sub, e) for e in ["", *extras])
    return found


def _link(dists: dict[str, md.Distribution], site: Path) -> None:
    """Symlink each distribution's top-level entries (and its .dist-info) into `site`; one
    the venv has already (pip and setuptools of `python -m venv`) stays as it is."""
    src_site = Path(sysconfig.get_paths()["purelib"])
    present = {_canonical(p.name.split("-")[0]) for p in site.glob("*.dist-info")}
    for key, dist in dists.items():
        if _canonical(key) in present:
            continue
        tops = {Path(str(f)).parts[0] for f in dist.files or []}
        for top in sorted(tops):
            if top in ("..", "__pycache__") or top.endswith(".pth"):
                continue
            target = site / top
            if not target.exists() and (src_site / top).exists():
                target.symlink_to(src_site / top)


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(base)
    env_dir = base / "venv"
    _fresh_venv(env_dir, ["install", "-q", "--no-deps", "--no-index", str(wheel)], base)
    return env_dir


def _fresh_venv(
    env_dir: Path, pip_args: list[str], cwd: Path, own_pip: bool = False
) -> subprocess.CompletedProcess[str]:
    """A clean venv with `pip <pip_args>` run into it from `cwd`, then the declared dependency
    closure of the accelstack it installed linked in. Raises if pip fails. `own_pip`: the venv
    as `python -m venv` makes it (its bundled pip and, on Python 3.11, setuptools 65.5), pip
    run from there; else a venv without pip, filled by the test environment's pip."""
    venv = [sys.executable, "-m", "venv", *([] if own_pip else ["--without-pip"]), str(env_dir)]
    subprocess.run(venv, check=True)
    python = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    pip = [str(python), "-m", "pip"] if own_pip else [sys.executable, "-m", "pip", "--python"]
    done = subprocess.run(
        [*pip, *([] if own_pip else [str(python)]), *pip_args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    (info,) = site.glob("accelstack-*.dist-info")
    _link(_closure(md.PathDistribution(info).requires or []), site)
    return done


def _run(venv: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    return subprocess.run(
        [str(venv / "bin" / "accelstack"), *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_clean_venv_has_no_undeclared_packages(venv: Path, tmp_path: Path) -> None:
    """The fixture itself is clean: test extras and click are not importable there."""
    probe = "import importlib.util as u; print([m for m in ('click', 'pytest', 'moto') if u.find_spec(m)])"
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe], cwd=tmp_path, capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


def test_installed_wheel_runs_every_offline_command_from_an_empty_directory(
    venv: Path, tmp_path: Path
) -> None:
    version = _run(venv, tmp_path, "--version")
    assert version.returncode == 0 and version.stdout.strip() == "accelstack 0.1.0", version.stderr
    new = _run(venv, tmp_path, "new", "team-w", "--from", "trn1-finetune")
    assert new.returncode == 0, new.stderr
    spec = "stacks/team-w.yaml"
    assert (tmp_path / "schema" / "spec.schema.json").is_file()
    plan = _run(venv, tmp_path, "plan", spec, "--format", "json")
    assert plan.returncode == 0, plan.stderr
    assert json.loads(plan.stdout)["stack"] == "team-w"
    price = _run(venv, tmp_path, "price", spec)
    assert price.returncode == 0 and "verdict: " in price.stdout, price.stderr
    render = _run(venv, tmp_path, "render", spec, "-o", "out")
    assert render.returncode == 0, render.stderr
    assert (tmp_path / "out" / "README.md").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "Pulumi.team-w.yaml",
        "out",
        "schema",
        "stacks",
    ]


def _imports(tree: ast.AST) -> set[str]:
    """Top-level module names imported anywhere in `tree`, except under `if TYPE_CHECKING:`."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


#: Programs the package ships to run on the nodes, in the training image (which has torch), and
#: never imports: render reads them as text and copies them beside the trial scripts, where they
#: import their siblings by the copied names (`accelstack_trial`, `accelstack_shape`).
NODE_SIDE = {"accelstack/trial/reference.py": "the reference benchmark (torch)"}


def test_no_command_imports_a_node_side_program() -> None:
    for path in (ROOT / "accelstack").rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        imported = {
            f"{n.module}.{a.name}" if isinstance(n, ast.ImportFrom) else a.name
            for n in ast.walk(tree)
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in n.names
        }
        assert not {"accelstack.trial.reference", "accelstack.trial.reference.*"} & imported, path


def test_every_import_of_the_package_is_a_declared_dependency() -> None:
    """Lazy imports too (preflight's botocore, the components' Pulumi SDKs): each third-party
    module the package imports belongs to a distribution in the declared dependency closure."""
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    closure = set(_closure(declared))
    owners = md.packages_distributions()
    modules: set[str] = set()
    for path in (ROOT / "accelstack").rglob("*.py"):
        if path.relative_to(ROOT).as_posix() not in NODE_SIDE:
            modules |= _imports(ast.parse(path.read_text(), str(path)))
    third_party = {m for m in modules if m != "accelstack" and m not in sys.stdlib_module_names}
    missing = {
        m: owners.get(m)
        for m in sorted(third_party)
        if not any(d.lower().replace("_", "-") in closure for d in owners.get(m, []))
    }
    assert third_party >= {"pulumi", "typer", "boto3", "botocore"}
    assert missing == {}, f"imported but not declared in [project].dependencies: {missing}"


#: Run the project's __main__.py under the plan engine's mocks inside the clean venv.
_RUN_PROJECT = """
import runpy, sys
import pulumi
from accelstack.plan import run_plan
from accelstack.resolve import resolve
from accelstack.spec import load_spec
def program(_):
    # a new project has no AMI pins yet (`accelstack amis pin` needs AWS): follow the alias
    pulumi.runtime.set_all_config({"aws:region": "us-east-1", "accelstack:allowUnpinnedAmis": "true"})
    runpy.run_path("__main__.py", run_name="__main__")
    return {}
plan = run_plan(resolve(load_spec("stacks/team-i.yaml")), build=program, guard=False)
print(len(plan.resources), sorted({r.name for r in plan.resources})[0])
"""


#: Pin the project's AMIs as `accelstack amis pin` would (offline: the plan's fake ids).
_PIN = """
from pathlib import Path
from accelstack.plan import fake_ami
from accelstack.preflight.amis import write_pins
from accelstack.resolve import resolve
from accelstack.spec import load_spec
stack = resolve(load_spec("stacks/team-i.yaml"))
write_pins(Path("Pulumi.team-i.yaml"), {p: fake_ami(p) for p in stack.ami_parameters})
"""

#: What the project's policies/__main__.py imports, from the installed wheel.
_PACK = """
import accelstack.policypack.budget_policies as bp
from pathlib import Path
print(sorted(p.name for p in bp.POLICIES), bp.__file__)
assert (Path(bp.__file__).parent / "PulumiPolicy.yaml").is_file()
"""


def test_installed_wheel_inits_a_project_whose_program_runs(venv: Path, tmp_path: Path) -> None:
    init = _run(venv, tmp_path, "init", "proj", "--from", "trn1-finetune", "--stack", "team-i")
    assert init.returncode == 0, init.stderr
    project = tmp_path / "proj"
    assert "accelstack amis pin stacks/team-i.yaml --stack team-i" in init.stdout
    # check reads Pulumi.team-i.yaml as the program does: no AMI pins yet, so it says so
    check = _run(venv, project, "check", ".")
    assert check.returncode == 0 and "no accelstack:amis yet" in check.stdout, check.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    # the user fills the placeholders and pins the AMIs (what `amis pin` writes, offline here)
    spec = project / "stacks" / "team-i.yaml"
    spec.write_text(fill(spec.read_text()))
    pinned = subprocess.run(
        [str(venv / "bin" / "python"), "-c", _PIN],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert pinned.returncode == 0, pinned.stderr[-2000:]
    check = _run(venv, project, "check", ".")
    assert check.returncode == 0 and "1 of 1 specs passed" in check.stdout, check.stderr
    # the CrossGuard pack: in the project, importing its policies from the installed wheel
    assert (project / "policies" / "PulumiPolicy.yaml").is_file()
    pack = subprocess.run(
        [str(venv / "bin" / "python"), "-c", _PACK],
        cwd=project / "policies",
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert pack.returncode == 0, pack.stderr[-2000:]
    assert "accelstack-budget" in pack.stdout and "site-packages" in pack.stdout
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", _RUN_PROJECT],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    count, first = out.stdout.split()
    assert int(count) > 10 and first.startswith("team-i-")


def _entries(wheel: Path | bytes) -> dict[str, bytes]:
    """Archive path -> bytes of a wheel, without its RECORD (hashes differ only by order)."""
    import io

    source = io.BytesIO(wheel) if isinstance(wheel, bytes) else wheel
    with zipfile.ZipFile(source) as zf:
        return {n: zf.read(n) for n in zf.namelist() if not n.endswith(".dist-info/RECORD")}


def test_an_init_project_installs_accelstack_from_its_own_wheel_without_an_index(
    venv: Path, tmp_path: Path
) -> None:
    """No public index has accelstack: the project keeps the wheel and requirements.txt names
    it by path, so a fresh virtualenv installs it with every index turned off (the Pulumi
    SDKs, which an index does carry, come from the test environment as in the fixture)."""
    init = _run(venv, tmp_path, "init", "proj", "--from", "trn1-finetune", "--stack", "team-r")
    assert init.returncode == 0, init.stderr
    project = tmp_path / "proj"
    (kept,) = (project / "wheels").iterdir()
    assert kept.name == "accelstack-0.1.0-py3-none-any.whl"
    requirements = [
        line
        for line in (project / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert requirements == [f"./wheels/{kept.name}"]
    # repacked from the installed files: the same files as the wheel the venv was built from
    (built,) = venv.parent.glob("accelstack-*.whl")
    assert _entries(kept) == _entries(built)
    # a second fresh virtualenv, as the README's first command, CI and `pulumi up` make it
    second = tmp_path / "venv2"
    args = ["install", "--no-index", "--no-deps", "-r", "requirements.txt"]
    installed = _fresh_venv(second, args, project)
    assert "accelstack" in installed.stdout
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    where = subprocess.run(
        [str(second / "bin" / "python"), "-c", "import accelstack; print(accelstack.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert where.returncode == 0 and str(second) in where.stdout, where.stderr
    help_ = _run(second, project, "--help")
    assert help_.returncode == 0 and "init" in help_.stdout, help_.stderr
    check = _run(second, project, "check", ".")
    assert check.returncode == 0 and "no accelstack:amis yet" in check.stdout, check.stderr
    # the documented refresh: same bytes for the same version, an older wheel goes
    stale = project / "wheels" / "accelstack-0.0.9-py3-none-any.whl"
    stale.write_bytes(kept.read_bytes())
    before = kept.read_bytes()
    refresh = _run(second, project, "wheel", ".")
    assert refresh.returncode == 0, refresh.stderr
    assert kept.read_bytes() == before and not stale.exists()


def test_init_and_wheel_work_in_the_runtime_only_venv_of_make_demo(tmp_path: Path) -> None:
    """`make demo`: `python3 -m venv .venv` (Python 3.11: setuptools 65.5, older than the
    setuptools>=77 pyproject.toml's license expression needs) and `pip install -e .`, whose
    isolated build environment made the editable wheel; no torch, no test extras, no network.
    `init` and `wheel` write the checkout's wheel there without building through pip."""
    src = source_copy(tmp_path)
    editable = build_editable(src, tmp_path / "dist")
    demo = tmp_path / "demo-venv"
    args = ["install", "-q", "--no-deps", "--no-index", str(editable)]
    _fresh_venv(demo, args, tmp_path, own_pip=True)
    probe = "import setuptools; print(setuptools.__version__)"
    old = subprocess.run(
        [str(demo / "bin" / "python"), "-c", probe], capture_output=True, text=True
    )
    assert int(old.stdout.split(".")[0]) < 77, old.stdout + old.stderr  # as `make demo` has it
    where = tmp_path / "elsewhere"
    where.mkdir()
    init = _run(demo, where, "init", "proj", "--from", "trn1-finetune", "--stack", "team-d")
    assert init.returncode == 0, init.stderr
    (kept,) = (where / "proj" / "wheels").iterdir()
    assert kept.name == "accelstack-0.1.0-py3-none-any.whl"
    built = build_wheel(tmp_path / "reference")  # what setuptools builds from the same sources
    assert _entries(kept).keys() == _entries(built).keys()
    package = [n for n in _entries(built) if ".dist-info/" not in n]
    assert all(_entries(kept)[n] == _entries(built)[n] for n in package)
    before = kept.read_bytes()
    refresh = _run(demo, where / "proj", "wheel", ".")
    assert refresh.returncode == 0, refresh.stderr
    assert kept.read_bytes() == before
    # the kept wheel installs with every index off, and that install runs
    second = tmp_path / "venv2"
    _fresh_venv(
        second, ["install", "--no-index", "--no-deps", "-r", "requirements.txt"], where / "proj"
    )
    check = _run(second, where / "proj", "check", ".")
    assert check.returncode == 0 and "no accelstack:amis yet" in check.stdout, check.stderr
