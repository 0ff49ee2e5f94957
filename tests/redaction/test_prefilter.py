"""The pre-filter in front of detect-secrets (accelstack/redaction/__init__.py `MAYBE_CREDENTIAL`):
every line any detector reports passes it, so skipping the others changes no finding; a
preset's `validate` then never imports the library."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accelstack import redaction as secrets
from accelstack.redaction.detectors import plugins

from ..conftest import PRESETS, ROOT


def _patterns() -> list[tuple[Any, Any]]:
    return [(plugin, p) for plugin in plugins() for p in plugin.denylist]


def test_the_prefilter_covers_exactly_the_detectors_that_run() -> None:
    assert {type(p).__name__ for p in plugins()} == secrets.COVERED_DETECTORS


@pytest.mark.slow  # ~60 patterns x 40 generated matches
def test_every_line_a_detector_reports_passes_the_prefilter() -> None:
    for plugin, pattern in _patterns():
        _check_pattern(plugin, pattern)


def _check_pattern(plugin: Any, pattern: Any) -> None:
    @settings(
        max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )
    @given(st.from_regex(pattern))
    def check(text: str) -> None:
        for line in text.splitlines() or [text]:
            if any(True for _ in plugin.analyze_string(line)):
                assert secrets.may_hold_credential(line), (type(plugin).__name__, line)

    check()


def test_the_documented_examples_are_flagged_and_ordinary_values_are_not() -> None:
    flagged = [
        "AKIAIOSFODNN7EXAMPLE",
        "https://user:hunter2@example.com/x",
        "-----BEGIN RSA PRIVATE KEY-----",
        "api_key = 'x'",
        "hf_" + "a" * 34,
        "xoxb-1234-abcd",
    ]
    assert all(secrets.may_hold_credential(x) for x in flagged)
    ordinary = [
        "trn2.48xlarge",
        "us-east-2",
        "arn:aws:iam::111122223333:role/accelstack-deployer",
        "111122223333.dkr.ecr.us-east-2.amazonaws.com/torchneuron-training:2.14.3",
        "s3://my-bucket/checkpoints",
        "meta-llama/Meta-Llama-3-70B",
    ]
    assert [x for x in ordinary if secrets.may_hold_credential(x)] == []


@pytest.mark.slow
def test_validating_every_preset_imports_no_detector_library() -> None:
    code = (
        "import sys, json, contextlib, io\n"
        "from accelstack.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    rc = main(['validate', *{[str(p) for p in PRESETS]!r}])\n"
        "print(json.dumps([rc, 'detect_secrets' in sys.modules]))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout.splitlines()[-1]) == [0, False]
