"""`diff BASE HEAD` across accelstack versions: a pull request that replaces the kept wheel
(wheels/accelstack-*.whl, what `init` keeps and requirements.txt installs) has its base planned
by the base's own accelstack, and every output names the version that planned each side."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
import yaml

import accelstack
from accelstack.plan.diff_report import render_markdown, render_quiet, render_text

from ..conftest import STACKS
from ..helpers_cli import run_cli
from ..helpers_git import commit_all, git
from ..helpers_wheel import build_wheel

OLD = "0.0.9"
OLD_WHEEL = f"wheels/accelstack-{OLD}-py3-none-any.whl"
NOW = accelstack.__version__


def _keep(repo: Path, name: str, data: bytes) -> None:
    """The project keeps `data` as wheels/`name` (the only wheel) and installs it."""
    shutil.rmtree(repo / "wheels", ignore_errors=True)
    (repo / "wheels").mkdir()
    (repo / "wheels" / name).write_bytes(data)
    (repo / "requirements.txt").write_text(f"./wheels/{name}\n", encoding="utf-8")


def _project(repo: Path, wheel_name: str, wheel: bytes) -> None:
    """main: project `proj`, stack `prod` deploys stacks/trn1-finetune.yaml and keeps `wheel`;
    the test continues on branch `pr`."""
    (repo / "stacks").mkdir()
    shutil.copy(STACKS / "trn1-finetune.yaml", repo / "stacks" / "trn1-finetune.yaml")
    (repo / "Pulumi.yaml").write_text("name: proj\nruntime: python\n", encoding="utf-8")
    prod = {"config": {"aws:region": "us-east-1", "accelstack:spec": "stacks/trn1-finetune.yaml"}}
    (repo / "Pulumi.prod.yaml").write_text(yaml.safe_dump(prod), encoding="utf-8")
    _keep(repo, wheel_name, wheel)
    git(repo, "init", "-q", "-b", "main")
    commit_all(repo, "base")
    git(repo, "checkout", "-qb", "pr")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    monkeypatch.chdir(root)
    monkeypatch.delenv("ACCELSTACK_CEILING", raising=False)
    monkeypatch.delenv("ACCELSTACK_CATALOG_DIR", raising=False)
    return root


def _patched(wheel: Path, out: Path, edits: dict[str, tuple[str, str]]) -> bytes:
    """`wheel` with each member's text edited (old -> new), zipped again as `out`."""
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename in edits:
                old, new = edits[info.filename]
                assert old.encode() in data, f"{info.filename}: {old!r} not found"
                data = data.replace(old.encode(), new.encode(), 1)
            dst.writestr(info, data)
    return out.read_bytes()


def _fake_wheel(main_py: str) -> bytes:
    """A zip laid out like an accelstack wheel whose `python -m accelstack.cli` runs `main_py`."""
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("accelstack/__init__.py", f'__version__ = "{OLD}"\n')
        zf.writestr("accelstack/cli/__init__.py", "")
        zf.writestr("accelstack/cli/__main__.py", main_py)
    return buf.getvalue()


# ---- the upgrade itself, planned by both versions -----------------------------------------------


@pytest.mark.slow
def test_a_wheel_only_upgrade_shows_what_the_new_version_changes(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The old wheel gives system nodes 80 GiB root volumes (a catalog value), the new one
    100: the base, planned by 0.0.9, differs from the head although no input changed."""
    new = build_wheel(tmp_path / "build")
    edits = {
        "accelstack/__init__.py": (f'__version__ = "{NOW}"', f'__version__ = "{OLD}"'),
        "accelstack/catalog/instances.yaml": (
            "system_root_volume_gib: 100",
            "system_root_volume_gib: 80",
        ),
    }
    old = _patched(new, tmp_path / Path(OLD_WHEEL).name, edits)
    _project(repo, Path(OLD_WHEEL).name, old)
    _keep(repo, new.name, new.read_bytes())
    commit_all(repo, "upgrade accelstack")

    code, out, err = run_cli(capsys, "diff", "main", "pr", "--stack", "prod", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["planned_with"] == {
        "base": OLD,
        "head": NOW,
        "base_wheel": OLD_WHEEL,
        "head_keeps": None,
    }
    (stack,) = doc["stacks"]
    assert stack["inputs"] == []  # no spec or stack-config value changed
    (lt,) = stack["resources"]["changed"]
    assert lt["name"] == "trn1-finetune-prod-system-lt"
    assert lt["changes"] == [
        {"key": "blockDeviceMappings[0].ebs.volumeSize", "before": 80, "after": 100}
    ]
    assert [(r["name"], r["action"]) for r in doc["rolls"]] == [
        ("trn1-finetune-prod-system-ng", "rolls")
    ]
    line = f"base planned with accelstack {OLD} ({OLD_WHEEL}, the base's kept wheel), head "
    text = render_text(doc).splitlines()
    assert text[1].startswith(line + f"with {NOW}")
    assert "comes from the upgrade" in text[1]  # first: it explains the rolls below
    # the kept wheel is a program input: named with its change, never quiet
    assert text[2].startswith("PROGRAM INPUTS CHANGED")
    changed = {c["path"]: c["change"] for c in doc["program_changes"]}
    wheel = f"wheels/{new.name}"
    assert changed == {OLD_WHEEL: "deleted", wheel: "added", "requirements.txt": "changed"}
    assert text[6].startswith("NODES ROLL")
    assert render_markdown(doc).splitlines()[2] == f"_{text[1]}_"


# ---- no wheel change: one version names both sides -----------------------------------------------


def test_without_a_wheel_change_one_version_plans_both_sides(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = f"accelstack-{NOW}-py3-none-any.whl"
    _project(repo, name, _fake_wheel("raise SystemExit('never run')\n"))
    spec = repo / "stacks" / "trn1-finetune.yaml"
    spec.write_text(spec.read_text().replace("purpose: neuron-onboarding", "purpose: x"))
    commit_all(repo, "a tag")
    both = f"both sides planned with accelstack {NOW}"

    code, out, err = run_cli(capsys, "diff", "main", "pr", "--stack", "prod", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert render_text(doc).splitlines()[-1] == both  # last: the rolls and replacements first
    assert OLD not in out
    assert doc["planned_with"] == {
        "base": NOW,
        "head": NOW,
        "base_wheel": None,
        "head_keeps": None,
    }
    assert f"_{both}_" in render_markdown(doc, comment=True).splitlines()
    assert f"_{both}_" in render_quiet(doc).splitlines()


def test_a_head_that_keeps_another_version_than_the_running_one_is_named(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both refs keep 0.0.9 (no wheel change: the running accelstack plans both), but the
    head deploys with 0.0.9: the line says so."""
    _project(repo, Path(OLD_WHEEL).name, _fake_wheel("raise SystemExit('never run')\n"))
    (repo / "README.md").write_text("a note\n", encoding="utf-8")
    commit_all(repo, "a note")
    code, out, err = run_cli(capsys, "diff", "main", "pr", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["planned_with"]["head_keeps"] == OLD
    assert render_text(doc).splitlines()[-1] == (
        f"both sides planned with accelstack {NOW} (the head keeps accelstack {OLD}, which "
        "`pulumi up` runs: plan with that version to see what it deploys)"
    )


# ---- reading the old version's output -------------------------------------------------------------

_DOC = {
    "version": 1,
    "stack": "prod",
    "region": "us-east-1",
    "summary": {"resources": 1, "byType": {"aws:s3/bucket:Bucket": 1}},
    "resources": [{"type": "aws:s3/bucket:Bucket", "name": "b", "parent": None, "inputs": {}}],
    "lookups": [],
    "outputs": {},
    "cost": {
        "hourly_usd": 2.0,
        "monthly_usd": 1460.0,
        "estimate": False,
        "ok": False,
        "verdict": "OVER BUDGET",
        "items": [{"resource": "b", "hourly_usd": 2.0}],
        "training": {"run_usd": 10.0},
    },
    "violations": [],
    "warnings": [],
}


def _old_prints(repo: Path, stdout: str, code: int) -> None:
    """main keeps a wheel whose `plan` prints `stdout` and exits `code`; pr keeps another."""
    script = f"import sys\nsys.stdout.write({stdout!r})\nraise SystemExit({code})\n"
    _project(repo, Path(OLD_WHEEL).name, _fake_wheel(script))
    _keep(repo, f"accelstack-{NOW}-py3-none-any.whl", b"the head's wheel")
    commit_all(repo, "upgrade")


def test_an_over_budget_exit_of_the_old_version_is_read(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _old_prints(repo, json.dumps(_DOC), 1)
    code, out, err = run_cli(capsys, "diff", "main", "pr", "--stack", "prod", "--format", "json")
    assert code == 0, err
    (stack,) = json.loads(out)["stacks"]
    assert stack["cost"]["base"]["monthly_usd"] == 1460.0
    assert stack["cost"]["base"]["ok"] is False
    assert stack["resources"]["removed"][0]["monthly_usd"]["base"] == 1460.0


def test_the_old_versions_line_items_and_the_bases_usage_file_are_read(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The base planned by the old version: each line item's quantity and unit price from its
    `plan --format json`, and the usage-priced items of the base ref's usage file (priced by
    the running catalog for the region the old plan names)."""
    item = {
        **_DOC["cost"]["items"][0],
        **{"type": "aws:s3/bucket:Bucket", "what": "S3 Standard, 100 GiB assumed"},
        **{"quantity": 100, "unit": "GiB-month", "unit_usd": 0.023, "rate_of": "s3-standard"},
    }
    doc = {**_DOC, "cost": {**_DOC["cost"], "items": [item]}}
    usage = "version: 0.1\ndefault:\n  s3_buckets:\n    monthly_tier_1_requests: 1000000\n"
    (repo / "accelstack-usage.yaml").write_text(usage, encoding="utf-8")
    _old_prints(repo, json.dumps(doc), 1)
    code, out, err = run_cli(capsys, "diff", "main", "pr", "--stack", "prod", "--format", "json")
    assert code == 0, err
    (stack,) = json.loads(out)["stacks"]
    (billed,) = stack["resources"]["removed"][0]["billed"]
    assert billed["head"] is None
    assert billed["base"]["quantity"] == 100 and billed["base"]["rate_of"] == "s3-standard"
    assert billed["base"]["monthly_usd"] == 1460.0  # $2/h over the old plan's 730 h
    (s3,) = stack["usage"]["base"]["items"]
    assert s3["amount"] == 1_000_000 and s3["monthly_usd"] is not None  # the base has a bucket
    text = render_text(json.loads(out)).split("  removed  aws:s3/bucket:Bucket  b ", 1)[1]
    assert (
        text.splitlines()[1]
        == "             billed: 100 GiB-month of s3-standard at $0.023/GiB-month"
    )


@pytest.mark.parametrize(
    ("stdout", "code"), [("not json", 0), (json.dumps({**_DOC, "cost": {}}), 0)]
)
def test_old_output_that_cannot_be_read_is_one_line(
    repo: Path, capsys: pytest.CaptureFixture[str], stdout: str, code: int
) -> None:
    _old_prints(repo, stdout, code)
    code, out, err = run_cli(capsys, "diff", "main", "pr", "--stack", "prod")
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert f"accelstack {OLD}" in err and "Traceback" not in err


def test_a_base_wheel_that_is_no_zip_is_one_line(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(repo, Path(OLD_WHEEL).name, b"not a zip")
    _keep(repo, f"accelstack-{NOW}-py3-none-any.whl", b"the head's wheel")
    commit_all(repo, "upgrade")
    code, out, err = run_cli(capsys, "diff", "main", "pr")
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert OLD_WHEEL in err and "is not a wheel" in err


def test_a_base_that_keeps_two_wheels_is_one_line(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(repo, Path(OLD_WHEEL).name, b"one")
    (repo / "wheels" / "accelstack-0.0.8-py3-none-any.whl").write_bytes(b"two")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "two wheels")
    git(repo, "branch", "-f", "main")
    _keep(repo, f"accelstack-{NOW}-py3-none-any.whl", b"the head's wheel")
    commit_all(repo, "upgrade")
    code, out, err = run_cli(capsys, "diff", "main", "pr")
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert "keeps 2 accelstack wheels" in err and OLD_WHEEL in err


def test_the_old_version_inherits_no_accelstack_or_aws_setting(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The base's accelstack prints its document only when it sees none of our ACCELSTACK_*
    or AWS_* variables but the pinned date and the cache directory (else output the diff
    refuses)."""
    monkeypatch.setenv("ACCELSTACK_DEBUG", "1")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-key")
    script = (
        "import os, sys\n"
        "seen = [k for k in os.environ if k.startswith(('ACCELSTACK_', 'AWS_'))]\n"
        "seen.remove('ACCELSTACK_TODAY')  # kept: the date the test suite pins\n"
        "seen.remove('ACCELSTACK_CACHE_DIR')  # kept: the suite's cache directory\n"
        f"sys.stdout.write('leaked ' + ' '.join(seen) if seen else {json.dumps(_DOC)!r})\n"
    )
    _project(repo, Path(OLD_WHEEL).name, _fake_wheel(script))
    _keep(repo, f"accelstack-{NOW}-py3-none-any.whl", b"the head's wheel")
    commit_all(repo, "upgrade")
    code, out, err = run_cli(capsys, "diff", "main", "pr", "--stack", "prod", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["stacks"][0]["cost"]["base"]["monthly_usd"] == 1460.0
