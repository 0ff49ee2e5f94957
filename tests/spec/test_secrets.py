"""The ML ecosystem's credentials are refused wherever they could reach a node or a PR comment:
by detectors added to detect-secrets for the tokens it lacks, the keyword
detector on env entries, stack-file values scanned, and every message redacted (shape errors
echo their input)."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.cli import main
from accelstack.spec.secrets import redact, secret_kinds

from .. import factories
from ..conftest import STACKS
from ..helpers_git import git

NGC_LEGACY = base64.b64encode(
    b"aB3dE5gH7jK9mN1pQ3sT5vW7yZ:1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d"
).decode()

#: id -> (kind, text holding the credential, the part that must never be shown)
CASES = {
    "Hugging Face Token": ("Hugging Face Token", "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567"),
    "Hugging Face org token": (
        "Hugging Face Token",
        "api_org_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567",
    ),
    "Weights & Biases API Key": (
        "Weights & Biases API Key",
        "WANDB_API_KEY=" + "0123456789abcdef" * 2 + "01234567",
    ),
    "Anthropic API Key": ("Anthropic API Key", "sk-ant-api03-" + "Ab1Cd2Ef3G" * 9 + "-AA"),
    "OpenAI API Key": ("OpenAI API Key", "sk-proj-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0UvWx" * 3),
    "GitHub Token": ("GitHub Token", "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ0aB3dE5gH7"),
    "GitHub OAuth token": ("GitHub Token", "gho_" + "Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa"),
    "GitLab Token": ("GitLab Token", "glpat-" + "aB3dE5gH7jK9mN1pQ3sT"),
    "GitHub Fine-grained Token": (
        "GitHub Fine-grained Token",
        "github_pat_11ABCDEFG0abcdefghijkl_" + "aB3" * 19 + "xy",
    ),
    "npm Access Token": ("npm Access Token", "npm_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"),
    "Databricks Token": ("Databricks Token", "dapi" + "0123456789abcdef" * 2),
    "Docker Hub Access Token": (
        "Docker Hub Access Token",
        "dckr_pat_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ_",
    ),
    "Groq API Key": ("Groq API Key", "gsk_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ" * 2),
    "Replicate API Token": ("Replicate API Token", "r8_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ0aB3dE5gH7j"),
    "NVIDIA API Key": ("NVIDIA NGC API Key", "nvapi-" + "aB3dE5gH7jK9mN1p" * 4),
    "NGC legacy key": ("NVIDIA NGC API Key", NGC_LEGACY),
    "AWS Secret Access Key": (
        "AWS Secret Access Key",
        "aws_secret_access_key=" + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    "bare AWS secret key": ("AWS Secret Access Key", "Zq8/Tn2+Lw5Vb9Xc1Rt7Hy3Jk6Mp4Ds0Fa8Gu2Ei"),
    "password argument": ("Password", "--db-password=Hunter2Xyz"),
    "password flag": ("Password", "--password Hunter2Xyz"),
    "GCP Service Account Key": (
        "GCP Service Account Key",
        '{"type": "service_account", "private_key_id": "' + "a1" * 20 + '", "private_key": "k"}',
    ),
}
TOKENS = {case: text for case, (_, text) in CASES.items()}
SECRET_PART = {
    case: text.split("=", 1)[-1] if text.startswith(("WANDB", "aws_", "--db")) else text
    for case, text in TOKENS.items()
}
SECRET_PART["password flag"] = "Hunter2Xyz"
SECRET_PART["GCP Service Account Key"] = "a1" * 20
#: what the detector library reports of a token: only its prefix (masking that left the body)
BODY = {case: TOKENS[case][4:] for case in ("GitHub Token", "GitHub OAuth token")}
BODY["GitLab Token"] = TOKENS["GitLab Token"][6:]


def _spec(tmp_path: Path, edit: Any) -> Path:
    data = factories.preset("trn1-finetune")
    edit(data)
    return factories.write_spec(tmp_path, data, "trn1-finetune")


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_token_kind_is_detected_and_redacted(case: str) -> None:
    kind = CASES[case][0]
    assert kind in secret_kinds(TOKENS[case])
    shown = redact(f"error: x: found {TOKENS[case]!r}")
    assert SECRET_PART[case] not in shown and f"<redacted: {kind}" in shown


@pytest.mark.parametrize("case", sorted(BODY))
def test_the_whole_token_is_masked_not_the_prefix_the_library_reports(case: str) -> None:
    shown = redact(f"error: pools[0].nodes: found {TOKENS[case]!r} (a token)")
    assert BODY[case] not in shown and BODY[case][:12] not in shown
    assert shown == f"error: pools[0].nodes: found '<redacted: {CASES[case][0]}>' (a token)"


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_token_in_the_spec_is_refused_and_never_echoed(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["workload"].setdefault("env", {})["RUN_NOTE"] = TOKENS[case]

    spec = _spec(tmp_path, edit)
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "workload.env.RUN_NOTE: looks like a credential" in err and CASES[case][0] in err
    assert SECRET_PART[case] not in err


def test_the_keyword_detector_judges_env_entries_by_their_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path, lambda d: d["workload"].setdefault("env", {}).update(DB_PASS="hunter2"))
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "workload.env.DB_PASS: looks like a credential (Secret Keyword" in err
    assert "hunter2" not in err
    ok = _spec(tmp_path, lambda d: d["workload"].setdefault("env", {}).update(NCCL_DEBUG="INFO"))
    assert main(["validate", str(ok)]) == 0


def test_a_shape_error_never_echoes_a_credential(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token = TOKENS["GitHub Token"]
    spec = _spec(tmp_path, lambda d: d["pools"][0].update(nodes=token))
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "pools[0].nodes" in err and token[4:] not in err and "<redacted" in err
    assert main(["check", str(spec), "--format", "json"]) == 2
    out = capsys.readouterr().out
    assert token[4:] not in out and "<redacted" in json.loads(out)["stacks"][0]["errors"][0]


def test_a_shape_error_in_the_pr_comment_is_redacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "stacks").mkdir()
    shutil.copy(STACKS / "trn1-finetune.yaml", tmp_path / "stacks" / "trn1-finetune.yaml")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    git(tmp_path, "checkout", "-qb", "pr")
    token = TOKENS["Anthropic API Key"]
    spec = tmp_path / "stacks" / "trn1-finetune.yaml"
    spec.write_text(spec.read_text().replace("    nodes: 1\n", f"    nodes: {token}\n"))
    git(tmp_path, "commit", "-qam", "head")
    monkeypatch.chdir(tmp_path)
    code = main(["diff", "main", "HEAD", "--format", "github-comment"])
    out = capsys.readouterr().out
    assert code == 2 and "pools[0].nodes" in out and token not in out


def test_a_credential_in_a_stack_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "stacks").mkdir()
    shutil.copy(STACKS / "trn1-finetune.yaml", tmp_path / "stacks" / "trn1-finetune.yaml")
    (tmp_path / "Pulumi.yaml").write_text("name: proj\nruntime: python\n")
    token = TOKENS["npm Access Token"]
    (tmp_path / "Pulumi.prod.yaml").write_text(
        yaml.safe_dump(
            {
                "config": {
                    "proj:note": token,
                    "proj:ok": {"secure": "v1:abc"},
                    "aws:region": "us-east-1",
                }
            }
        )
    )
    assert main(["check", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Pulumi.prod.yaml: config.proj:note: looks like a credential (npm Access Token" in err
    assert token not in err and "proj:ok" not in err
