"""The CLI's error boundary, plan failures as one line with the right exit
code, atomic writes that never follow a symlink, `render -o DIR` ownership, and a broken
catalog file reported as one line by every command."""

from __future__ import annotations

import dataclasses
import errno
import gc
import json
import logging
import os
import re
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import accelstack.catalog.load as catalog_mod
from accelstack.cli import main
from accelstack.errors import AccelstackError
from accelstack.files import WriteError, write_text_atomic
from accelstack.plan import PlanError, PlanInputError, run_plan
from accelstack.render.output import MANIFEST
from accelstack.resolve import Stack, resolve
from accelstack.spec import load_spec

from ..conftest import ROOT, STACKS

TINY = STACKS / "trn1-finetune.yaml"
MULTI = STACKS / "trn1-multinode.yaml"
STANDALONE = STACKS / "trn1-standalone.yaml"  # renders a script and a README only
INTERNAL = "(run with --debug for the traceback)"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


def leftovers(directory: Path) -> list[str]:
    """Temporary files a write could have left behind."""
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


@pytest.fixture(scope="module")
def tiny_stack() -> Stack:
    return resolve(load_spec(TINY))


# The error boundary
# ---------------------------------------------------------------------------------------


def _boom(*args: Any, **kwargs: Any) -> Any:
    raise KeyError("foo")


def test_unexpected_exception_is_one_line_naming_command_and_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("accelstack.render.render", _boom)
    code, _, err = run(capsys, "render", str(TINY), "-o", str(tmp_path / "o"))
    assert code == 1
    assert one_line(err) == f"error: render {TINY}: internal error: KeyError: 'foo' {INTERNAL}"
    assert not (tmp_path / "o").exists()


def test_internal_error_in_validate_and_subgroup_commands(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("accelstack.cli.spec_cmds.load_spec", _boom)
    code, _, err = run(capsys, "validate", str(TINY))
    assert code == 1
    assert one_line(err).startswith(f"error: validate {TINY}: internal error: KeyError")
    monkeypatch.setattr("accelstack.catalog.refresh.refresh_file", _boom)
    code, _, err = run(capsys, "prices", "refresh", "--file", str(tmp_path / "p.yaml"))
    assert code == 1
    assert one_line(err).startswith(f"error: prices refresh {tmp_path / 'p.yaml'}: internal")


def test_validate_reports_every_spec_when_one_crashes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from accelstack.cli import spec_cmds

    real = spec_cmds.load_spec

    def flaky(path: Path, *args: Any) -> Any:
        if Path(path) == TINY:
            raise RecursionError("maximum recursion depth exceeded")
        return real(path, *args)

    monkeypatch.setattr(spec_cmds, "load_spec", flaky)
    code, out, err = run(capsys, "validate", str(TINY), str(MULTI))
    assert code == 1
    assert f"ok: {MULTI}" in out
    assert one_line(err).startswith(f"error: validate {TINY}: internal error: RecursionError")


@pytest.mark.parametrize("how", ["option", "env"])
def test_debug_prints_the_traceback(
    how: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setattr("accelstack.render.render", _boom)
    argv = ["render", str(TINY), "-o", str(tmp_path / "o")]
    if how == "option":
        argv.insert(0, "--debug")
    else:
        monkeypatch.setenv("ACCELSTACK_DEBUG", "1")
    code, _, err = run(capsys, *argv)
    assert code == 1
    assert err.startswith("Traceback (most recent call last):")
    assert "in _boom" in err
    assert err.splitlines()[-1].startswith(f"error: render {TINY}: internal error: KeyError")


def test_no_traceback_without_debug_even_after_a_debug_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("accelstack.render.render", _boom)
    run(capsys, "--debug", "render", str(TINY), "-o", str(tmp_path / "o"))
    code, _, err = run(capsys, "render", str(TINY), "-o", str(tmp_path / "o"))
    assert code == 1 and "Traceback" not in err
    one_line(err)


def test_interrupt_is_one_line_exit_130(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr("accelstack.cli.spec_cmds.load_spec", interrupted)
    code, _, err = run(capsys, "validate", str(TINY))
    assert code == 130
    assert one_line(err) == f"error: validate {TINY}: interrupted"


def test_values_cannot_forge_lines_or_escape_codes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def forged(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("x\x1b[2Kerror: \udc80 forged")

    monkeypatch.setattr("accelstack.cli.spec_cmds.load_spec", forged)
    code, _, err = run(capsys, "validate", str(TINY))
    assert code == 1
    line = one_line(err)
    assert "\x1b" not in line and "\\x1b[2K" in line and "\\udc80" in line


def test_accelstack_error_lines_are_escaped(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def bad(*args: Any, **kwargs: Any) -> Any:
        raise AccelstackError("spec.yaml: name: 'a\x1b]0;pwned\x07' is not allowed")

    monkeypatch.setattr("accelstack.cli.spec_cmds.load_spec", bad)
    code, _, err = run(capsys, "validate", str(TINY))
    assert code == 2
    assert "\x1b" not in err and "\x07" not in err and "\\x1b]0;pwned\\x07" in err


def test_check_reports_every_spec_when_one_crashes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("trn1-finetune", "trn1-multinode"):
        shutil.copy(STACKS / f"{name}.yaml", tmp_path)

    import accelstack.plan

    real_plan = accelstack.plan.run_plan

    def fake_plan(stack: Stack, build: Any, **kwargs: Any) -> Any:
        if stack.name == "trn1-finetune":
            raise RecursionError("maximum recursion depth exceeded")
        return real_plan(stack, build, **kwargs)

    monkeypatch.setattr("accelstack.plan.run_plan", fake_plan)
    code, out, err = run(capsys, "check", str(tmp_path))
    assert code == 1
    assert re.search(r"ok   \S*trn1-multinode\.yaml: \d+ resources", out)
    assert "1 of 2 specs passed" in out
    assert (
        one_line(err)
        .strip()
        .startswith(f"check {tmp_path / 'trn1-finetune.yaml'}: internal error: RecursionError")
    )


# Plan failures: one line, the first real cause, exit 2 when the input caused them
# ---------------------------------------------------------------------------------------


def _failing_apply_program(count: int) -> Callable[[Stack], dict[str, Any]]:
    """A program whose one failing apply feeds `count` resources (each of which fails)."""

    def build(stack: Stack) -> dict[str, Any]:
        import pulumi_aws as aws

        def bad_cidr(_: Any) -> str:
            raise ValueError("bad cidr")

        base = aws.ec2.Vpc("base", cidr_block="10.0.0.0/16")
        for i in range(count):
            aws.ec2.Subnet(f"s{i}", vpc_id=base.id, cidr_block=base.id.apply(bad_cidr))
        return {}

    return build


def test_plan_failure_names_the_cause_not_a_consumer_and_no_flood(
    tiny_stack: Stack,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="asyncio")
    with pytest.raises(PlanError) as err:
        run_plan(tiny_stack, _failing_apply_program(40), guard=False)
    gc.collect()
    message = str(err.value)
    assert message.startswith("trn1-finetune: the program failed: ValueError: bad cidr (at ")
    assert "in bad_cidr)" in message and "While processing" not in message
    assert err.value.exit_code == 1
    assert not [r for r in caplog.records if r.name == "asyncio" and r.levelno >= logging.ERROR]
    assert "Future exception was never retrieved" not in capfd.readouterr().err


def test_plan_failure_on_the_cli_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("accelstack.cli.planning.program", lambda: _failing_apply_program(5))
    code, _, err = run(capsys, "plan", str(TINY))
    gc.collect()
    assert code == 1
    line = one_line(err + capsys.readouterr().err)
    assert line.startswith("error: trn1-finetune: the program failed: ValueError: bad cidr")


def test_repeated_value_in_one_name_is_bad_input(tiny_stack: Stack) -> None:
    def build(stack: Stack) -> dict[str, Any]:
        import pulumi_aws as aws

        for _ in range(2):  # as a spec listing the same admin ARN twice does
            aws.eks.AccessEntry("admin-1", cluster_name="c", principal_arn="arn:aws:iam::1:role/a")
        return {}

    with pytest.raises(PlanInputError, match="declared twice with the same inputs") as err:
        run_plan(tiny_stack, build, guard=False)
    assert err.value.exit_code == 2


def test_input_caused_plan_failure_exits_2_on_the_cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def repeated(stack: Stack) -> dict[str, Any]:
        import pulumi_aws as aws

        for _ in range(2):
            aws.eks.AccessEntry("admin-1", cluster_name="c", principal_arn="arn:aws:iam::1:role/a")
        return {}

    monkeypatch.setattr("accelstack.cli.planning.program", lambda: repeated)
    code, _, err = run(capsys, "plan", str(TINY))
    assert code == 2
    assert "AccessEntry 'admin-1' is declared twice with the same inputs" in one_line(err)


def test_debug_shows_the_plan_failure_cause(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("accelstack.cli.planning.program", lambda: _failing_apply_program(2))
    code, _, err = run(capsys, "--debug", "plan", str(TINY))
    gc.collect()
    assert code == 1
    assert "Traceback (most recent call last):" in err and "in bad_cidr" in err
    assert err.splitlines()[-1].startswith("error: trn1-finetune: the program failed: ValueError")


def _ssm_program(parameter: str) -> Callable[[Stack], dict[str, Any]]:
    def build(stack: Stack) -> dict[str, Any]:
        import pulumi
        import pulumi_aws as aws

        ami = aws.ssm.get_parameter_output(name=parameter).insecure_value
        aws.ec2.LaunchTemplate("lt", image_id=ami)
        return {"ami": pulumi.Output.from_input(ami)}

    return build


def test_lookup_refused_for_a_spec_value_is_bad_input(tiny_stack: Stack) -> None:
    param = "/aws/service/eks/optimized-ami/9.99/amazon-linux-2023/x86_64/neuron/image_id"
    with pytest.raises(PlanError) as err:  # the program asked for it: a bug, exit 1
        run_plan(tiny_stack, _ssm_program(param), guard=False)
    assert type(err.value) is PlanError and err.value.exit_code == 1
    spec = tiny_stack.spec
    wants = spec.model_copy(
        update={"cluster": spec.cluster.model_copy(update={"kubernetes_version": "9.99"})}
    )
    stack = dataclasses.replace(tiny_stack, spec=wants)
    with pytest.raises(PlanInputError, match="no EKS-optimized AMI for Kubernetes 9.99") as err2:
        run_plan(stack, _ssm_program(param), guard=False)
    assert err2.value.exit_code == 2


def test_standalone_dlami_parameters_of_the_catalog_are_answered(tiny_stack: Stack) -> None:
    """A p5 standalone spec validated and then failed in plan: its DLAMI parameter ends in
    /ami-id, which the offline answers refused."""
    for kind in tiny_stack.catalog.device_kinds.values():
        if kind.standalone_ami_parameter:
            plan = run_plan(tiny_stack, _ssm_program(kind.standalone_ami_parameter), guard=False)
            assert plan.outputs["ami"].startswith("ami-")


# Atomic writes
# ---------------------------------------------------------------------------------------


def _disk_full_after(monkeypatch: pytest.MonkeyPatch, good_writes: int = 0) -> None:
    """os.write to files writes half of the first chunk, then fails with ENOSPC."""
    real = os.write
    calls = {"n": 0}

    def write(fd: int, data: Any) -> int:
        if fd <= 2:
            return real(fd, data)
        calls["n"] += 1
        if calls["n"] <= good_writes:
            return real(fd, data)
        if calls["n"] == good_writes + 1 and len(data) > 1:
            return real(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", write)


def test_disk_full_leaves_the_old_file_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "f.txt"
    target.write_text("old\n")
    _disk_full_after(monkeypatch)
    with pytest.raises(WriteError) as err:
        write_text_atomic(target, "new " * 1000)
    assert str(err.value) == f"{target}: cannot write: No space left on device"
    assert err.value.exit_code == 2  # a full disk is the target's state: one line, exit 2
    monkeypatch.undo()
    assert target.read_text() == "old\n"
    assert leftovers(tmp_path) == []


def test_write_refuses_directory_and_symlinks(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("keep\n")
    elsewhere.chmod(0o600)
    (tmp_path / "link").symlink_to(elsewhere)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere.txt")
    for name, reason in (
        ("d", "is a directory"),
        ("link", "is a symbolic link"),
        ("dangling", "is a symbolic link"),
    ):
        with pytest.raises(WriteError, match=reason) as err:
            write_text_atomic(tmp_path / name, "x", mode=0o755)
        assert err.value.exit_code == 2 and "\n" not in str(err.value)
    assert elsewhere.read_text() == "keep\n"
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o600
    assert not (tmp_path / "nowhere.txt").exists()
    assert leftovers(tmp_path) == []


def test_unwritable_directory_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr("tempfile.mkstemp", denied)  # what a read-only directory answers
    with pytest.raises(WriteError) as err:
        write_text_atomic(tmp_path / "f.txt", "x")
    assert str(err.value) == f"{tmp_path / 'f.txt'}: cannot write: Permission denied"
    assert err.value.exit_code == 2
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_directory_for_real(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(WriteError, match="Permission denied"):
            write_text_atomic(ro / "f.txt", "x")
    finally:
        ro.chmod(0o700)
    assert list(ro.iterdir()) == []


def test_text_that_cannot_be_encoded_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(WriteError, match=r"'\\udc80', which is not valid in UTF-8"):
        write_text_atomic(tmp_path / "launch.sh", "echo \udc80\n", mode=0o755)
    assert list(tmp_path.iterdir()) == []


def test_mode_and_replacement(tmp_path: Path) -> None:
    target = tmp_path / "s.sh"
    write_text_atomic(target, "a", mode=0o755)
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    write_text_atomic(target, "b")  # keeps the existing mode
    assert target.read_text() == "b" and stat.S_IMODE(target.stat().st_mode) == 0o755


# Commands that write
# ---------------------------------------------------------------------------------------


def test_schema_output_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "d").mkdir()
    code, _, err = run(capsys, "schema", "-o", str(tmp_path / "d"))
    assert code == 2 and one_line(err) == f"error: {tmp_path / 'd'}: cannot write: is a directory"
    (tmp_path / "dangling.json").symlink_to(tmp_path / "nowhere.json")
    code, _, err = run(capsys, "schema", "-o", str(tmp_path / "dangling.json"))
    assert code == 2 and "is a symbolic link" in one_line(err)
    assert not (tmp_path / "nowhere.json").exists()
    (tmp_path / "f").write_text("x")
    code, _, err = run(capsys, "schema", "-o", str(tmp_path / "f" / "s.json"))
    assert code == 2 and "cannot write" in one_line(err)
    _disk_full_after(monkeypatch)
    code, _, err = run(capsys, "schema", "-o", str(tmp_path / "s.json"))
    assert code == 2 and "No space left on device" in one_line(err)
    assert not (tmp_path / "s.json").exists() and leftovers(tmp_path) == []


def test_new_writes_both_files_or_neither(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(STACKS, tmp_path / "stacks")
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text("keep\n")
    (tmp_path / "Pulumi.mine.yaml").symlink_to(elsewhere)
    argv = ["new", "mine", "--from", "trn1-finetune", "--dir", str(tmp_path)]
    code, _, err = run(capsys, *argv, "--force")
    assert code == 2 and "Pulumi.mine.yaml: cannot write: is a symbolic link" in one_line(err)
    assert elsewhere.read_text() == "keep\n" and not (tmp_path / "stacks" / "mine.yaml").exists()
    (tmp_path / "Pulumi.mine.yaml").unlink()
    _disk_full_after(monkeypatch, good_writes=1)  # the spec file lands, the Pulumi file not
    code, _, err = run(capsys, *argv)
    assert code == 2 and "No space left on device" in one_line(err)
    monkeypatch.undo()
    assert not (tmp_path / "stacks" / "mine.yaml").exists()
    assert not (tmp_path / "Pulumi.mine.yaml").exists()
    assert leftovers(tmp_path) == [] and leftovers(tmp_path / "stacks") == []


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_prices_refresh_file_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from accelstack.catalog.refresh import AwsPriceSource, Quote

    class Source:
        calls = 0

        def quote(self, region: str, instance_type: str, option: str) -> Quote | None:
            Source.calls += 1
            return Quote(0.1, "test") if option == "on-demand" else None

    monkeypatch.setattr(AwsPriceSource, "from_boto3", classmethod(lambda cls, day: Source()))
    original = (catalog_mod.CATALOG_DIR / "prices.yaml").read_text()
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text(original)
    (tmp_path / "link.yaml").symlink_to(elsewhere)
    argv = ["prices", "refresh", "--region", "us-east-1", "--types", "m6i.large", "--file"]
    code, _, err = run(capsys, *argv, str(tmp_path / "link.yaml"))
    assert code == 2 and "is a symbolic link" in one_line(err)
    assert elsewhere.read_text() == original
    code, _, err = run(capsys, *argv, str(tmp_path))
    assert code == 2 and one_line(err) == f"error: {tmp_path}: cannot write: is a directory"
    target = tmp_path / "prices.yaml"
    target.write_text(original[: len(original) // 2])
    code, _, err = run(capsys, *argv, str(target))  # refused before any AWS call
    assert code == 2
    assert one_line(err).startswith(f"error: {target}: cannot refresh a broken file: prices.yaml")
    target.write_text(original)
    _disk_full_after(monkeypatch)
    code, _, err = run(capsys, *argv, str(target))
    assert code == 2 and "No space left on device" in one_line(err)
    monkeypatch.undo()
    assert target.read_text() == original and leftovers(tmp_path) == []
    assert Source.calls > 0  # the last run did reach the (fake) price source


# render -o DIR
# ---------------------------------------------------------------------------------------


def _render(capsys: pytest.CaptureFixture[str], spec: Path, out: Path, *extra: str) -> Any:
    return run(capsys, "render", str(spec), "-o", str(out), *extra)


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_render_refuses_a_directory_it_did_not_write(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "README.md").write_text("mine\n")
    code, _, err = _render(capsys, TINY, out)
    assert code == 2
    assert one_line(err) == (
        f"error: {out}: cannot write: is not empty (1 entries) and was not written by "
        "accelstack render; choose an empty directory or pass --force"
    )
    assert (out / "README.md").read_text() == "mine\n" and sorted(os.listdir(out)) == ["README.md"]
    code, _, err = _render(capsys, TINY, out, "--force")
    assert code == 0, err
    manifest = json.loads((out / MANIFEST).read_text())
    assert "README.md" in manifest["files"] and (out / "README.md").read_text() != "mine\n"


def test_render_manifest_and_stale_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    code, _, err = _render(capsys, MULTI, out)
    assert code == 0, err
    first = json.loads((out / MANIFEST).read_text())["files"]
    import hashlib

    for name, digest in first.items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest
    (out / "notes.txt").write_text("user file\n")  # not render's: never removed
    stale = sorted(set(first) - {"README.md", "launch-trn1.sh"})
    assert stale, "the multinode preset renders Kubernetes manifests"
    edited = stale[0]
    (out / edited).write_text("edited by hand\n")
    code, out_text, err = _render(capsys, STANDALONE, out)  # no Kubernetes manifests
    assert code == 0, err
    second = json.loads((out / MANIFEST).read_text())["files"]
    gone = [n for n in first if n not in second]
    for name in gone:
        assert (out / name).exists() == (name == edited), name
    assert f"kept {edited}" in out_text
    assert (out / "notes.txt").read_text() == "user file\n"


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_render_refuses_foreign_file_of_an_artifact_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    assert _render(capsys, TINY, out)[0] == 0
    first = json.loads((out / MANIFEST).read_text())["files"]
    (out / "notes.txt").write_text("x")
    assert _render(capsys, TINY, out)[0] == 0  # an unrelated user file is fine
    manifest = json.loads((out / MANIFEST).read_text())
    victim = sorted(first)[0]
    del manifest["files"][victim]
    (out / MANIFEST).write_text(json.dumps(manifest))
    (out / victim).write_text("someone else's\n")
    code, _, err = _render(capsys, TINY, out)
    assert code == 2 and "was not written by accelstack render" in one_line(err)
    assert (out / victim).read_text() == "someone else's\n"


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_render_never_follows_a_symlink(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _render(capsys, TINY, out)[0] == 0
    script = next(n for n in os.listdir(out) if n.endswith(".sh"))
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    victim.chmod(0o600)
    (out / script).unlink()
    (out / script).symlink_to(victim)
    for extra in ((), ("--force",)):
        code, _, err = _render(capsys, TINY, out, *extra)
        assert code == 2 and "is a symbolic link" in one_line(err)
    assert victim.read_text() == "precious\n"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o600


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_killed_render_leaves_no_truncated_script(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    real = os.replace

    def killed(src: Any, dst: Any) -> None:
        if str(dst).endswith(".sh"):
            raise KeyboardInterrupt  # the process dies while writing the script
        real(src, dst)

    monkeypatch.setattr(os, "replace", killed)
    code, _, err = _render(capsys, MULTI, out)
    assert code == 130
    monkeypatch.undo()
    # the render is staged beside DIR and swapped in at the end: a killed first render leaves
    # no DIR at all, and no stage or lock beside it
    assert not out.exists() and os.listdir(tmp_path) == []
    code, _, err = _render(capsys, MULTI, out)
    assert code == 0, err


def test_render_of_unencodable_text_creates_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from accelstack.render import Artifact

    def rendered(stack: Stack, bucket: Any, *_: Any) -> list[Artifact]:
        return [
            Artifact("README.md", "index", "ok\n"),
            Artifact("launch-x.sh", "script", "echo '\udc80'\n", executable=True),
        ]

    monkeypatch.setattr("accelstack.render.render", rendered)
    code, _, err = _render(capsys, TINY, tmp_path / "out")
    assert code == 2 and "launch-x.sh: cannot write: holds '\\udc80'" in one_line(err)
    assert not (tmp_path / "out").exists()


def test_render_refuses_a_symlinked_folder_on_the_way(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from accelstack.render import Artifact

    monkeypatch.setattr(
        "accelstack.render.render",
        lambda stack, bucket, *_: [Artifact("sub/run.sh", "script", "true\n", executable=True)],
    )
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "sub").symlink_to(elsewhere)
    code, _, err = _render(capsys, TINY, out, "--force")
    assert code == 2 and f"{out / 'sub'}: cannot write: is a symbolic link" in one_line(err)
    assert list(elsewhere.iterdir()) == []


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_render_ignores_names_outside_dir_in_a_manifest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    assert _render(capsys, TINY, out)[0] == 0
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    (out / MANIFEST).write_text(json.dumps({"version": 1, "files": {"../outside.txt": "0"}}))
    code, _, err = _render(capsys, TINY, out)
    assert code == 2 and "lists a file name outside the directory" in one_line(err)
    assert outside.read_text() == "keep\n"


# A broken catalog file
# ---------------------------------------------------------------------------------------


@pytest.fixture
def broken_catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, int], Path]:
    base = tmp_path / "catalog"
    base.mkdir()
    for f in catalog_mod.CATALOG_DIR.glob("*.yaml"):
        shutil.copy(f, base / f.name)
    monkeypatch.setattr(catalog_mod, "CATALOG_DIR", base)

    def cut(name: str, keep: int) -> Path:
        text = (base / name).read_text()
        (base / name).write_text(text[:keep] if keep >= 0 else text[: len(text) // 2])
        return base / name

    return cut


COMMANDS = [
    ["validate", str(TINY)],
    ["plan", str(TINY)],
    ["check", str(STACKS)],
    ["price", str(TINY)],
    ["compare", str(TINY)],
    ["preflight", str(TINY)],
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "keep"), [("prices.yaml", -1), ("instances.yaml", 2000)])
@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: a[0])
def test_truncated_catalog_is_one_line_in_every_command(
    name: str,
    keep: int,
    argv: list[str],
    broken_catalog: Callable[[str, int], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = broken_catalog(name, keep)
    code, _, err = run(capsys, *argv)
    assert code == 2
    line = one_line(err)
    assert line.startswith(f"error: {path}: ") and "Traceback" not in err


def test_truncated_catalog_in_render_and_new(
    broken_catalog: Callable[[str, int], Path],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    path = broken_catalog("prices.yaml", 40)
    code, _, err = _render(capsys, TINY, tmp_path / "o")
    assert code == 2 and one_line(err).startswith(f"error: {path}: ")
    code, _, err = run(capsys, "new", "x-y-z", "--from", str(TINY), "--dir", str(tmp_path))
    assert code == 2 and one_line(err).startswith(f"error: {path}: ")
    assert not (tmp_path / "o").exists() and not (tmp_path / "stacks").exists()


@pytest.mark.slow
def test_every_truncation_of_a_catalog_file_is_one_catalog_error(tmp_path: Path) -> None:
    from accelstack.catalog import load_catalog
    from accelstack.errors import CatalogError

    for name in ("prices.yaml", "instances.yaml", "offerings.yaml"):
        lines = (catalog_mod.CATALOG_DIR / name).read_text().splitlines(True)
        for i in range(0, len(lines), max(1, len(lines) // 25)):
            base = tmp_path / f"{name}-{i}"
            base.mkdir()
            for f in catalog_mod.CATALOG_DIR.glob("*.yaml"):
                shutil.copy(f, base / f.name)
            (base / name).write_text("".join(lines[:i]))
            try:
                load_catalog(base)
            except CatalogError as exc:
                assert str(exc).startswith(str(base / name)), str(exc)
                assert "\n" not in str(exc)


def test_the_docs_describe_the_boundary() -> None:
    text = (ROOT / "docs" / "plan.md").read_text()
    assert "PlanInputError" in text and "--debug" in text
