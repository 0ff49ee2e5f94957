"""Update semantics from the pinned provider: the replacement and node-roll tables name inputs of
the pinned pulumi-aws (a snapshot of its SDK's input names, tied to pyproject's requirement), and
the FSx throughput tier is an in-place update, not a replacement of the protected file system."""

from __future__ import annotations

import importlib.metadata
import json
from typing import Any

import pytest
import yaml

from accelstack.plan.diff import diff_resources
from accelstack.plan.updates import lustre_requests, operation, problems
from tests.conftest import ROOT
from tools import provider_snapshot

SNAPSHOT = ROOT / "accelstack" / "catalog" / "provider_inputs.json"
TABLE = ROOT / "accelstack" / "catalog" / "replacements.yaml"
LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"


def snapshot() -> dict[str, Any]:
    return json.loads(SNAPSHOT.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@pytest.mark.slow
def test_the_snapshot_follows_the_pin_in_pyproject() -> None:
    """Moving `pulumi-aws` in pyproject.toml fails here until the snapshot is regenerated
    (python tools/provider_snapshot.py --write) and the tables re-checked against it."""
    snap = snapshot()
    assert snap["requirement"] == provider_snapshot.requirement()
    installed = importlib.metadata.version("pulumi_aws")
    if installed == snap["version"]:
        assert provider_snapshot.snapshot() == snap  # the checked-in file is what the SDK says


def test_every_table_key_is_an_input_of_the_pinned_provider() -> None:
    inputs = snapshot()["inputs"]
    table = yaml.safe_load(TABLE.read_text(encoding="utf-8"))
    missing = [
        (t, k)
        for t, r in table["replace_on_change"].items()
        for k in r["keys"]
        if k not in inputs[t]
    ]
    for t, r in table["node_rolls"]["node_sources"].items():
        named = [*r["keys"], r["instance_type"], *([r["shrink"]] if r.get("shrink") else [])]
        named += [] if str(r["count"]).isdigit() else [r["count"]]
        missing += [(t, k) for k in named if k not in inputs[t]]
    assert missing == []


def test_an_fsx_throughput_tier_change_is_an_update_eks_and_fsx_accept() -> None:
    """Fails on the old table, which listed perUnitStorageThroughput as replace-forcing."""
    old: dict[str, Any] = {
        "deploymentType": "PERSISTENT_2",
        "storageCapacity": 4800,
        "perUnitStorageThroughput": 125,
    }
    new = {**old, "perUnitStorageThroughput": 250}
    base = {
        "resources": [{"type": LUSTRE, "name": "fs", "inputs": old, "options": {"protect": True}}]
    }
    head = {
        "resources": [{"type": LUSTRE, "name": "fs", "inputs": new, "options": {"protect": True}}]
    }
    res = diff_resources(base, head)
    assert res["replaced"] == [] and [r["name"] for r in res["changed"]] == ["fs"]
    keys = yaml.safe_load(TABLE.read_text(encoding="utf-8"))["replace_on_change"][LUSTRE]["keys"]
    assert operation(old, new, replace_keys=keys) == "update"
    (req,) = lustre_requests(old, new)
    assert req.operation == "UpdateFileSystem"
    assert req.params["LustreConfiguration"] == {"PerUnitStorageThroughput": 250}
    assert problems(req, stored=old) == []
    bad = lustre_requests(old, {**new, "perUnitStorageThroughput": 200})[0]
    assert problems(bad, stored=old) != []  # 200 is a PERSISTENT_1 tier
