"""Redaction by span (accelstack/redaction): the whole token is masked wherever a detector
fires, whatever hides it (zero-width characters, escapes, base64, a private key over several
lines, a password in an argument list), ordinary values are left alone, and every echoed value
is bounded."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from accelstack.cli import main
from accelstack.errors import Problem, shown
from accelstack.redaction import (
    RUN_LIMIT,
    VALUE_LIMIT,
    credential_kinds,
    masked,
    redact,
    redact_line,
)

from .. import factories

HF = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567"
GITHUB = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ0aB3dE5gH7"


def _zero_width(token: str, mark: str = "\u200b") -> str:
    return mark.join(token[i : i + 5] for i in range(0, len(token), 5))


@pytest.mark.parametrize("mark", ["\u200b", "\u2060", "\ufeff", "\u00ad", "\u200d"])
def test_a_token_split_by_invisible_characters_is_found_and_masked_whole(mark: str) -> None:
    split = _zero_width(GITHUB, mark)
    assert credential_kinds(split) == ["GitHub Token"]
    out = redact(f"found {split} here")
    assert out == "found <redacted: GitHub Token> here"
    # as repr echoes it: the invisible characters written as escapes
    out = redact(f"found {split!r} here")
    assert out == "found '<redacted: GitHub Token>' here", out


def test_a_base64_wrapped_token_is_found_and_the_whole_run_masked() -> None:
    for raw in (HF.encode(), HF.encode() + b"\n"):  # `echo -n` and `echo`
        wrapped = base64.b64encode(raw).decode()
        assert credential_kinds(wrapped) == ["Hugging Face Token"]
        assert redact(f"x={wrapped};") == "x=<redacted: Hugging Face Token>;"
    urlsafe = base64.urlsafe_b64encode(GITHUB.encode() + b"\xff").decode()
    assert credential_kinds(urlsafe) == []  # not UTF-8 text: nothing to read
    plain = base64.b64encode(b"just some ordinary configuration text").decode()
    assert credential_kinds(plain) == [] and redact(plain) == plain


def test_a_private_key_is_masked_from_begin_to_end_over_every_line() -> None:
    text = (
        "error: x: '-----BEGIN RSA PRIVATE KEY-----\n"
        "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\n"
        "aFDrBz9vFqU4yQ==\n"
        "-----END RSA PRIVATE KEY-----' is not a number\n"
        "next line stays"
    )
    out = redact(text)
    assert "MIIE" not in out and "aFDr" not in out and "BEGIN" not in out
    assert out.splitlines()[-2].endswith("' is not a number")
    assert out.splitlines()[-1] == "next line stays"


def test_the_largest_match_wins_and_overlapping_findings_are_one_mask() -> None:
    text = "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    assert redact(f"[{text}]") == "[<redacted: AWS Secret Access Key>]"


@pytest.mark.parametrize(
    "value",
    [
        "password=$DB_PASSWORD",
        "--password=${DB_PASSWORD}",
        "--password-stdin",
        "--password <secret>",
        "--password {{ .Values.password }}",
        "0123456789abcdef0123456789abcdef01234567",  # a git commit id (40 hex)
        "site/content/en/docs/tasks/run/trainjobs",  # a 40-character path
        "meta-llama/Meta-Llama-3-70B-Instruct",
        "s3://my-bucket/checkpoints/run-2026-11-22",
        "111122223333.dkr.ecr.us-east-2.amazonaws.com/torchneuron-training:2.14.3",
        "arn:aws:iam::111122223333:role/accelstack-deployer",
        "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS",
    ],
)
def test_ordinary_values_and_references_are_left_alone(value: str) -> None:
    assert credential_kinds(value) == [] and redact(value) == value


def _refused(tmp_path: Path, edit: Any, capsys: pytest.CaptureFixture[str]) -> str:
    data = factories.preset("trn1-finetune")
    edit(data)
    spec = factories.write_spec(tmp_path, data, "trn1-finetune")
    assert main(["validate", str(spec)]) == 2
    return capsys.readouterr().err


def test_the_spec_rule_reads_through_every_disguise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["workload"]["args"] = [
            "--run-name",
            "demo",
            "--password",
            "Hunter2Xyz",
            _zero_width(HF),
            base64.b64encode(GITHUB.encode()).decode(),
        ]

    err = _refused(tmp_path, edit, capsys)
    assert "workload.args[1]" not in err  # --run-name demo: an ordinary option
    assert "workload.args[3]: looks like a credential (Password)" in err
    assert "workload.args[4]: looks like a credential (Hugging Face Token)" in err
    assert "workload.args[5]: looks like a credential (GitHub Token)" in err
    assert "Hunter2Xyz" not in err and "aBcDe" not in err


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_every_echoed_value_is_bounded_and_a_credential_is_masked_whole() -> None:
    long = "x" * 100_000
    assert len(shown(long)) == VALUE_LIMIT + 5  # quotes and "..."
    assert shown(f"note {HF} end") == "'<redacted: Hugging Face Token>'"
    assert masked(f"note {HF}") == "<redacted: Hugging Face Token>"
    line = str(Problem("stacks/a.yaml", "pools[0].name", f"{long} is not a name"))
    assert len(line) < 2 * RUN_LIMIT and line.endswith("... is not a name")
    assert len(redact_line(f"error: {long}")) < 2 * RUN_LIMIT
    assert redact('{"userData": "' + long + '"}') == '{"userData": "' + long + '"}'


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
@pytest.mark.parametrize(
    "path",
    [
        "pools[0].instance_type",
        "region",
        "pools[0].name",
        "workload.precision",
        "workload.image",
        "availability_zone",
    ],
)
def test_a_huge_value_never_makes_a_huge_error_line(
    path: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def edit(data: dict[str, Any]) -> None:
        *parents, leaf = path.replace("[0]", ".0").split(".")
        node: Any = data
        for key in parents:
            node = node[int(key)] if key.isdigit() else node[key]
        node[leaf] = "x" * 100_000

    err = _refused(tmp_path, edit, capsys)
    assert path in err
    assert max(len(line) for line in err.splitlines()) < 1_000, err[:2000]
