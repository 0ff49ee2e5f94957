"""Discovery: `accelstack instances` from the catalog alone, the Mermaid chart in `compare
--format markdown`, shell completion, examples in --help, and "did you mean" only when the
suggestion is close."""

from __future__ import annotations

import json

import pytest

from accelstack.catalog import load_catalog
from accelstack.errors import did_you_mean, edit_distance

from .. import factories
from ..conftest import STACKS
from ..helpers_cli import run_cli


def test_instances_json_is_derived_from_the_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    cat = load_catalog()
    code, out, _ = run_cli(capsys, "instances", "--format", "json")
    assert code == 0
    rows = {r["instance_type"]: r for r in json.loads(out)}
    assert set(rows) == set(cat.accelerated_types())  # every accelerated type, nothing else
    for name, row in rows.items():
        inst = cat.instances[name]
        assert (row["chips"], row["efa_interfaces"], row["vcpus"]) == (
            inst.chips,
            inst.efa_interfaces,
            inst.vcpus,
        )
        assert row["accelerator_memory_gib"] == inst.accelerator_memory_gib
        assert set(row["regions"]) == set(cat.regions_offering(name))
        for option, by_region in row["prices"].items():
            for region, price in by_region.items():
                rate = cat.instance_rate(region, name, option)
                assert (price["usd"], price["estimate"]) == (rate.usd, rate.estimate)
    trn2 = rows["trn2.48xlarge"]
    assert trn2["prices"]["on-demand"]["us-east-2"]["usd"] > 0
    assert trn2["regions"]["us-east-2"]  # the zones offering it
    code, out, _ = run_cli(capsys, "instances", "--all", "--format", "json")
    assert len(json.loads(out)) == len(cat.instances)


def test_instances_text_region_and_unknown_type(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "instances", "--region", "us-east-2")
    assert code == 0
    head = out.splitlines()[0].split()
    assert head[:3] == ["type", "accelerator", "chips"] and "on-demand" in head
    assert any(
        line.startswith("trn2.48xlarge") and "(us-east-2)" in line for line in out.splitlines()
    )
    code, out, _ = run_cli(capsys, "instances", "--type", "p5.48xlarge", "--format", "markdown")
    assert out.startswith("| type | accelerator |") and "| p5.48xlarge " in out
    code, _, err = run_cli(capsys, "instances", "--type", "p4d.24xlarge")
    assert code == 2 and "did you mean" not in err
    assert "'p4d.24xlarge' is not in the catalog; supported: p5.48xlarge" in err
    code, _, err = run_cli(capsys, "instances", "--region", "us-east2")
    assert code == 2 and "did you mean 'us-east-2'?" in err


def test_unsupported_type_lists_the_supported_ones(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    data = factories.preset("trn1-finetune")
    data["pools"][0]["instance_type"] = "p4d.24xlarge"
    spec = tmp_path / "trn1-finetune.yaml"  # type: ignore[operator]
    spec.write_text(yaml.safe_dump(data))
    code, _, err = run_cli(capsys, "validate", str(spec))
    assert code == 2 and "did you mean" not in err
    assert "'p4d.24xlarge' is not a supported instance type (supported: p5.48xlarge" in err


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [
        ("trn2.48xlagre", "trn2.48xlarge"),  # a swap
        ("trn2.48xl", "trn2.48xlarge"),  # a prefix
        ("valdate", "validate"),
        ("us-east2", "us-east-2"),
        ("p4d.24xlarge", None),  # another family: no suggestion
        ("p4de.24xlarge", None),
    ],
)
def test_did_you_mean_only_when_close(typed: str, suggested: str | None) -> None:
    choices = [*load_catalog().accelerated_types(), "validate", "us-east-2"]
    hint = did_you_mean(typed, choices)
    assert hint == (f"; did you mean '{suggested}'?" if suggested else "")
    assert edit_distance("ab", "ba") == 1 and edit_distance("p4d.24xlarge", "p5.4xlarge") == 3


def test_compare_markdown_has_a_mermaid_chart(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys, "compare", str(STACKS / "llama3-70b-trn2.yaml"), "--format", "markdown"
    )
    assert code == 0
    chart = out.split("```mermaid\n", 1)[1].split("```", 1)[0].splitlines()
    assert chart[0] == "xychart-beta"
    labels = chart[2].split("[", 1)[1].rstrip("]").split(", ")
    bars = [int(x) for x in chart[4].split("[", 1)[1].rstrip("]").split(", ")]
    assert len(labels) == len(bars) >= 2 and bars == sorted(bars)  # cheapest first
    assert labels[0].startswith('"trn2.48xlarge ')
    assert int(chart[3].rsplit(" ", 1)[1]) > max(bars)  # the axis holds every bar


def test_completion_and_examples_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    import subprocess
    import sys
    from pathlib import Path

    script = Path(sys.executable).parent / "accelstack"
    # the shell named on the command line, not detected from the parent process (`make test`
    # runs under sh, which typer cannot complete): typer's own switch for that
    named = {**__import__("os").environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    done = subprocess.run(
        [str(script), "--show-completion", "bash"],
        env=named,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and "_ACCELSTACK_COMPLETE=complete_bash" in done.stdout
    words = {"_ACCELSTACK_COMPLETE": "complete_bash", "COMP_WORDS": "accelstack ins"}
    done = subprocess.run(
        [str(script)],
        env={**__import__("os").environ, **words, "COMP_CWORD": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.stdout.split() == ["instances"]  # completes a command name
    for command in ("plan", "check", "diff", "price", "compare", "instances", "render"):
        code, out, _ = run_cli(capsys, command, "--help")
        assert code == 0 and "Examples:" in out and f"accelstack {command} " in out, command


@pytest.mark.parametrize(
    ("argv", "types"),
    [
        (["--accelerator", "H100:8"], ["p5.48xlarge"]),
        (["--accelerator", "h100"], ["p5.48xlarge", "p5.4xlarge"]),
        (
            ["--accelerator", "nvidia"],
            ["p5.48xlarge", "p5.4xlarge", "p5e.48xlarge", "p5en.48xlarge"],
        ),
        (["--accelerator", "Trainium2"], ["trn2.48xlarge", "trn2u.48xlarge"]),
        (["--accelerator", "trainium"], ["trn1.2xlarge", "trn1.32xlarge", "trn1n.32xlarge"]),
        (["--chips", "1"], ["p5.4xlarge", "trn1.2xlarge"]),
        (
            ["--accelerator", "neuron", "--chips", "16", "--type", "trn2.48xlarge"],
            ["trn2.48xlarge"],
        ),
    ],
)
def test_instances_filter_by_accelerator_and_chips(
    argv: list[str], types: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "instances", *argv, "--format", "json")
    assert code == 0, err
    assert [r["instance_type"] for r in json.loads(out)] == types


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--accelerator", "h1000"],
            "--accelerator: 'h1000' is not an accelerator of the catalog; did you mean 'h100'?",
        ),
        (
            ["--accelerator", "H100:eight"],
            "--accelerator: chip count 'eight' is not a positive whole number",
        ),
        (["--accelerator", "H100:0"], "chip count '0' is not a positive whole number"),
        (["--sort", "spto"], "--sort: 'spto' is not a purchase option; did you mean 'spot'?"),
    ],
)
def test_instances_filters_refuse_bad_values_in_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "instances", *argv)
    assert code == 2 and out == "" and message in err and len(err.splitlines()) == 1


def test_instances_every_region_sorted_by_a_purchase_option(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cat = load_catalog()
    code, out, _ = run_cli(
        capsys,
        "instances",
        "--accelerator",
        "H100:8",
        "--by-region",
        "--sort",
        "spot",
        "--format",
        "json",
    )
    assert code == 0
    rows = json.loads(out)
    assert {r["region"] for r in rows} == set(cat.regions_offering("p5.48xlarge"))
    spot = [r["prices"]["spot"]["usd"] for r in rows if "spot" in r["prices"]]
    assert spot == sorted(spot) and len(spot) >= 2  # cheapest region first ...
    assert all("spot" not in r["prices"] for r in rows[len(spot) :])  # ... none last
    for r in rows[: len(spot)]:
        rate = cat.instance_rate(r["region"], "p5.48xlarge", "spot")
        assert r["prices"]["spot"]["usd"] == rate.usd
        assert r["zones"] == list(cat.zones_offering(r["region"], "p5.48xlarge"))
    # the same order in the text table, one line per region
    code, out, _ = run_cli(
        capsys, "instances", "--accelerator", "H100:8", "--by-region", "--sort", "spot"
    )
    regions = [line.split("  8  ")[1].split()[0] for line in out.splitlines()[1 : len(rows) + 1]]
    assert regions == [r["region"] for r in rows]


def test_instances_price_a_chip_hour(capsys: pytest.CaptureFixture[str]) -> None:
    cat = load_catalog()
    code, out, _ = run_cli(
        capsys, "instances", "--type", "trn2.48xlarge", "--per-chip", "--format", "json"
    )
    price = json.loads(out)[0]["prices"]["on-demand"]["us-east-2"]
    rate = cat.instance_rate("us-east-2", "trn2.48xlarge", "on-demand")
    assert price["usd_per_chip"] == pytest.approx(rate.usd / 16)
    code, out, _ = run_cli(capsys, "instances", "--type", "trn2.48xlarge", "--per-chip")
    assert f"${rate.usd / 16:,.2f}" in out.splitlines()[1]
    assert out.rstrip().endswith(
        "prices: USD per chip-hour, cheapest region; * = estimate; - = none"
    )
    # sorted by a chip-hour: the 1-chip and the 16-chip types compare per chip, not per instance
    code, out, _ = run_cli(
        capsys,
        "instances",
        "--accelerator",
        "trainium",
        "--sort",
        "on-demand",
        "--per-chip",
        "--format",
        "json",
    )
    per_chip = [
        min(p["usd_per_chip"] for p in r["prices"]["on-demand"].values()) for r in json.loads(out)
    ]
    assert per_chip == sorted(per_chip)


def _complete(words: str) -> list[str]:
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {
        **os.environ,
        "_ACCELSTACK_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - 1),
    }
    script = Path(sys.executable).parent / "accelstack"
    done = subprocess.run([str(script)], env=env, capture_output=True, text=True, check=False)
    return done.stdout.split()


@pytest.mark.slow  # the CLI in subprocesses
def test_completion_of_presets_types_regions_options_and_accelerators() -> None:
    presets = sorted(p.stem for p in STACKS.glob("llama3*.yaml"))
    assert _complete("accelstack init x --from llama3") == presets
    assert _complete("accelstack new x --from trn1-") == [
        "trn1-finetune",
        "trn1-multinode",
        "trn1-standalone",
    ]
    assert _complete("accelstack new x --instance-type p5en") == ["p5en.48xlarge"]
    assert _complete("accelstack instances --type trn2") == ["trn2.48xlarge", "trn2u.48xlarge"]
    assert _complete("accelstack instances --region us-west") == ["us-west-1", "us-west-2"]
    assert _complete("accelstack instances --sort savings") == [
        "savings-plan-1y",
        "savings-plan-3y",
    ]
    assert _complete("accelstack instances --accelerator trainium") == [
        "trainium",
        "trainium2",
        "trainium3",
    ]
