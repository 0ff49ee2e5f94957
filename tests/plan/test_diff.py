"""`accelstack diff`: resources added / changed / replaced / removed and the cost delta between two
commits of a temporary git repository (by refs and by directories), stateful changes first."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from accelstack.catalog import load_catalog
from accelstack.cli import main
from accelstack.plan.diff import (
    COMMENT_MARKER,
    QUIET_MARKER,
    below_threshold,
    diff_resources,
    diff_sides,
    replace_table,
)
from accelstack.plan.diff_report import render_markdown, render_text
from accelstack.plan.diffside import SideRow

from ..helpers_cli import run_cli
from ..helpers_git import git, two_commits


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return two_commits(tmp_path_factory.mktemp("gitops"))


@pytest.fixture(scope="module")
def by_refs(repo: Path) -> dict[str, Any]:
    """One `diff main pr --format json` run from the repository (module-wide: planning is slow)."""
    import contextlib
    import io
    import os

    here = Path.cwd()
    os.chdir(repo)
    try:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            code = main(["diff", "main", "pr", "--format", "json"])
    finally:
        os.chdir(here)
    assert code == 1  # trn1-multinode's new instance type moves its zone: refused
    doc: dict[str, Any] = json.loads(buf.getvalue())
    return doc


def _stack(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in doc["stacks"] if s["stack"] == name)


def _names(stack: dict[str, Any], action: str) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in stack["resources"][action]}


def test_stacks_are_matched_by_name_added_removed_and_unchanged(by_refs: dict[str, Any]) -> None:
    status = {s["stack"]: s["status"] for s in by_refs["stacks"]}
    assert status == {
        "llama3-70b-trn2": "added",
        "trn1-finetune": "changed",
        "trn1-multinode": "changed",
        "trn1-standalone": "removed",
    }
    assert by_refs["unchanged"] == ["trn3-preview"]  # byte-identical: not planned at all
    assert by_refs["base"].startswith("main (") and by_refs["head"].startswith("pr (")


def test_a_type_whose_zone_differs_is_refused_in_one_line_per_collision(
    by_refs: dict[str, Any],
) -> None:
    """The issue's case: trn1n.32xlarge defaults to another zone than trn1.32xlarge, so the new
    zone's subnets are created on CIDRs the old zone's subnets still hold (Pulumi deletes last)
    and EKS would have to move the control plane to a zone it was not created with."""
    checks = _stack(by_refs, "trn1-multinode")["create_before_delete"]
    refused = [c for c in checks if c["kind"] == "refused"]
    fields = sorted({c["field"] for c in refused})
    assert fields == ["cidrBlock", "vpcConfig.subnetIds"]
    assert all("\n" not in c["line"] for c in refused)
    cidr = next(c for c in refused if c["field"] == "cidrBlock")
    assert "still holds" in cidr["line"] and "two steps" in cidr["line"]
    zone = next(c for c in refused if c["field"] == "vpcConfig.subnetIds")
    assert "usw2-az4" in zone["line"] and "zones it was created with" in zone["line"]
    overlap = [
        c for c in checks if c["kind"] == "overlap" and c["instance_type"] == "trn1n.32xlarge"
    ]
    assert overlap and overlap[0]["instances"] == 4 and overlap[0]["vcpus"] == 4 * 128
    assert overlap[0]["hours"] > 0 and overlap[0]["usd"] > 0


def test_node_count_is_an_update_and_instance_type_a_replacement(by_refs: dict[str, Any]) -> None:
    finetune = _names(_stack(by_refs, "trn1-finetune"), "changed")
    assert finetune["trn1-finetune-trn1-ng"]["keys"] == ["scalingConfig"]
    assert finetune["trn1-finetune-trn1-ng"]["replace_keys"] == []
    multinode = _stack(by_refs, "trn1-multinode")
    ng = _names(multinode, "replaced")["trn1-multinode-trn1-ng"]
    assert "instanceTypes" in ng["replace_keys"]
    assert not ng["stateful"]
    # the launch template is versioned: a new instance type is a new version, not a replacement
    assert "trn1-multinode-trn1-lt" in _names(multinode, "changed")
    # trn1n is offered in other zones: a subnet that keeps its name but moves CIDR is replaced
    subnet = _names(multinode, "replaced")["trn1-multinode-network-private-usw2-az1"]
    assert subnet["replace_keys"] == ["cidrBlock"]


def test_the_comment_says_quantity_and_unit_price_of_a_resize_and_a_type_change(
    by_refs: dict[str, Any],
) -> None:
    """finetune goes from 1 to 2 x trn1.2xlarge, multinode from trn1.32xlarge to trn1n.32xlarge:
    each node group's priced line items reach the document and the comment with their
    quantity and the catalog's unit price."""
    catalog = load_catalog()

    def usd(text: str) -> float:
        return float(text.replace(",", ""))

    finetune = _names(_stack(by_refs, "trn1-finetune"), "changed")["trn1-finetune-trn1-ng"]
    nodes = finetune["billed"][0]
    assert (nodes["base"]["quantity"], nodes["head"]["quantity"]) == (1, 2)
    rate = catalog.instance_rate("us-east-1", "trn1.2xlarge", "on-demand").usd
    assert nodes["head"]["rate_of"] == "trn1.2xlarge" and nodes["head"]["unit_usd"] == rate
    multinode = _names(_stack(by_refs, "trn1-multinode"), "replaced")["trn1-multinode-trn1-ng"]
    old, new = multinode["billed"][0]["base"], multinode["billed"][0]["head"]
    assert (old["rate_of"], new["rate_of"]) == ("trn1.32xlarge", "trn1n.32xlarge")
    for md in (render_markdown(by_refs, comment=True), render_text(by_refs)):
        resize = re.search(r"billed: `?1 -> 2 x trn1\.2xlarge at \$([\d.,]+)\*?/h", md)
        assert resize and usd(resize.group(1)) == rate
        moved = re.search(
            r"billed: `?4 x trn1\.32xlarge at \$([\d.,]+)\*?/h -> "
            r"4 x trn1n\.32xlarge at \$([\d.,]+)\*?/h",
            md,
        )
        assert moved and (usd(moved.group(1)), usd(moved.group(2))) == (
            old["unit_usd"],
            new["unit_usd"],
        )


def test_stateful_removals_are_called_out_first(by_refs: dict[str, Any]) -> None:
    stateful = {(r["stack"], r["action"], r["type"]) for r in by_refs["stateful"]}
    # finetune now uses an existing bucket: its managed (protected) bucket would be deleted
    assert ("trn1-finetune", "removed", "aws:s3/bucket:Bucket") in stateful
    # a stack gone from the head is not destroyed: nothing of it is listed removed
    assert not any(r["stack"] == "trn1-standalone" for r in by_refs["stateful"])
    bucket = next(r for r in by_refs["stateful"] if r["stack"] == "trn1-finetune")
    assert bucket["protect"] is True
    assert not any(r["stack"] == "trn1-multinode" for r in by_refs["stateful"])
    text = render_text(by_refs)
    first_stack_line = text.index("\nstack ")
    assert text.index("STATEFUL") < first_stack_line
    assert text.index("trn1-finetune-compile-cache-bucket is REMOVED") < first_stack_line


def test_added_stack_lists_its_resources_and_cost(by_refs: dict[str, Any]) -> None:
    added = _stack(by_refs, "llama3-70b-trn2")
    assert added["cost"]["base"] is None
    assert added["cost"]["delta"]["monthly_usd"] == added["cost"]["head"]["monthly_usd"] > 0
    assert len(added["resources"]["added"]) > 20
    assert not any(added["resources"][a] for a in ("changed", "replaced", "removed"))


def test_cost_delta_and_verdicts(by_refs: dict[str, Any]) -> None:
    multinode = _stack(by_refs, "trn1-multinode")
    base, head = multinode["cost"]["base"], multinode["cost"]["head"]
    for key in ("hourly_usd", "monthly_usd", "run_usd"):
        assert multinode["cost"]["delta"][key] == pytest.approx(head[key] - base[key], abs=0.01)
    assert head["hourly_usd"] > base["hourly_usd"]  # trn1n costs more than trn1
    assert base["ok"] and not head["ok"]  # the same budget no longer holds
    totals = by_refs["totals"]
    assert totals["delta_monthly_usd"] == pytest.approx(
        sum(s["cost"]["delta"]["monthly_usd"] for s in by_refs["stacks"]), abs=0.05
    )
    text = render_text(by_refs)
    assert "verdict: base within budget; head OVER BUDGET" in text


def test_directories_give_the_same_diff_as_refs(
    repo: Path, by_refs: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    shutil.copytree(repo / "stacks", new)
    git(repo, "checkout", "-q", "main")
    try:
        shutil.copytree(repo / "stacks", old)
    finally:
        git(repo, "checkout", "-q", "pr")
    code, out, _ = run_cli(capsys, "diff", "--dirs", str(old), str(new), "--format", "json")
    assert code == 1  # refused, as by refs
    doc = json.loads(out)
    assert doc["base"] == str(old)

    def strip(d: dict[str, Any]) -> Any:
        return [{k: v for k, v in s.items() if k != "file"} for s in d["stacks"]]

    assert strip(doc) == strip(by_refs)
    assert doc["stateful"] == by_refs["stateful"]


def test_markdown_and_github_comment(by_refs: dict[str, Any]) -> None:
    md = render_markdown(by_refs)
    comment = render_markdown(by_refs, comment=True)
    assert COMMENT_MARKER not in md
    assert comment.startswith(COMMENT_MARKER + "\n") and comment.endswith(md)
    assert md.index("[!CAUTION]") < md.index("| stack |")
    assert "| `trn1-multinode` | changed |" in md
    assert "within budget → OVER BUDGET" in md
    assert "**replaced** `aws:eks/nodeGroup:NodeGroup` `trn1-multinode-trn1-ng`" in md


def test_comment_stays_under_githubs_size_limit(by_refs: dict[str, Any]) -> None:
    import copy

    big = copy.deepcopy(by_refs)
    stack = _stack(big, "llama3-70b-trn2")
    stack["resources"]["added"] = stack["resources"]["added"] * 40
    big["stacks"] = [copy.deepcopy(stack) for _ in range(20)]
    body = render_markdown(big, comment=True)
    assert len(body) < 65_536 and "Resource lists left out" in body
    assert "[!CAUTION]" in body  # the stateful call-out is never cut


def test_threshold_only_skips_cheap_harmless_changes(by_refs: dict[str, Any]) -> None:
    assert by_refs["comment"] is True
    assert not below_threshold(by_refs, 1e9, None)  # stateful removals always comment
    quiet_stacks = [
        {k: v for k, v in s.items() if k != "create_before_delete"} for s in by_refs["stacks"]
    ]
    harmless = {**by_refs, "stateful": [], "rolls": [], "orphaned": [], "stacks": quiet_stacks}
    moves = [abs(s["cost"]["delta"]["monthly_usd"]) for s in by_refs["stacks"]]
    assert below_threshold(harmless, max(moves) + 1, None)
    assert not below_threshold(harmless, max(moves) - 1, None)  # one stack is enough
    assert not below_threshold(harmless, None, None)  # no threshold: always comment
    assert not below_threshold(harmless, 1e9, 0.0)  # any percent move at 0 %
    biggest = max(by_refs["stacks"], key=lambda s: abs(s["cost"]["delta"]["monthly_usd"]))
    per_stack = {biggest["stack"]: max(moves) - 1}
    assert not below_threshold(harmless, max(moves) + 1, None, per_stack)


def test_github_comment_below_threshold_is_the_quiet_body(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo)
    args = ("diff", "main", "main", "--format", "github-comment")
    code, out, _ = run_cli(capsys, *args, "--threshold-usd", "10")
    # the body CI uses to update its earlier comment (or to post nothing when there is none)
    assert code == 0 and out.splitlines()[:2] == [COMMENT_MARKER, QUIET_MARKER]
    assert "no longer applies" in out
    code, out, _ = run_cli(capsys, *args)
    assert code == 0 and out.startswith(COMMENT_MARKER) and "No stack changed." in out


def test_bad_ref_is_one_line_exit_2(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo)
    code, out, err = run_cli(capsys, "diff", "no-such-ref", "pr")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "no-such-ref" in err


def test_a_broken_head_spec_is_reported_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    (new / "broken.yaml").write_text("name: broken\nregion: mars-1\n", encoding="utf-8")
    code, out, _ = run_cli(capsys, "diff", "--dirs", str(old), str(new), "--format", "json")
    assert code == 2
    doc = json.loads(out)
    assert doc["ok"] is False and doc["stacks"][0]["status"] == "error"
    assert str(new) in doc["stacks"][0]["errors"][0] or "broken.yaml" in doc["stacks"][0]["file"]


# ---- the replacement table, on plan documents ---------------------------------------------


def _doc(*resources: dict[str, Any]) -> dict[str, Any]:
    return {"resources": list(resources)}


def _res(type_: str, name: str, options: dict[str, Any] | None = None, **inputs: Any) -> Any:
    row: dict[str, Any] = {"type": type_, "name": name, "inputs": inputs}
    if options:
        row["options"] = options
    return row


BUCKET = "aws:s3/bucket:Bucket"
NG = "aws:eks/nodeGroup:NodeGroup"


def test_bucket_rename_is_a_stateful_replacement() -> None:
    out = diff_resources(
        _doc(_res(BUCKET, "cache", {"protect": True}, bucket="a", tags={"x": "1"})),
        _doc(_res(BUCKET, "cache", {"protect": True}, bucket="b", tags={"x": "1"})),
    )
    [row] = out["replaced"]
    assert row["replace_keys"] == ["bucket"] and row["stateful"] and row["protect"]
    doc = diff_sides(
        {"s": SideRow("a", plan=_doc(_res(BUCKET, "cache", bucket="a")))},
        {"s": SideRow("b", plan=_doc(_res(BUCKET, "cache", bucket="b")))},
        ("base", "head"),
    )
    assert [(r["action"], r["name"]) for r in doc["stateful"]] == [("replaced", "cache")]


def test_tag_change_is_an_update_and_unprotecting_still_counts() -> None:
    out = diff_resources(
        _doc(_res(BUCKET, "cache", {"protect": True}, bucket="a", tags={"x": "1"})),
        _doc(_res(BUCKET, "cache", None, bucket="a", tags={"x": "2"})),
    )
    [row] = out["changed"]
    assert row["keys"] == ["tags", "(options)"] and row["replace_keys"] == []
    # a replacement that also drops `protect` is still a stateful replacement
    other = "aws:x/y:Z"
    doc = diff_sides(
        {"s": SideRow("a", plan=_doc(_res(other, "r", {"protect": True}, label="a")))},
        {"s": SideRow("b", plan=_doc(_res(other, "r", None, label="b")))},
        ("base", "head"),
    )
    assert doc["stateful"] == []  # not in the replacement table: an update, not a loss
    out = diff_resources(
        _doc(_res(NG, "ng", {"protect": True}, instanceTypes=["a"])),
        _doc(_res(NG, "ng", None, instanceTypes=["b"])),
    )
    assert out["replaced"][0]["stateful"] is True


def test_nested_replace_keys_launch_template_id_but_not_version() -> None:
    def ng(lt_id: str, version: str) -> Any:
        return _doc(_res(NG, "ng", launchTemplate={"id": lt_id, "version": version}))

    assert diff_resources(ng("lt-1", "1"), ng("lt-1", "2"))["changed"][0]["replace_keys"] == []
    replaced = diff_resources(ng("lt-1", "1"), ng("lt-2", "1"))["replaced"]
    assert replaced[0]["replace_keys"] == ["launchTemplate.id"]


def test_protected_resource_of_any_type_is_stateful_when_removed() -> None:
    out = diff_resources(_doc(_res("aws:x/y:Z", "keep", {"protect": True})), _doc())
    assert out["removed"][0]["stateful"] is True
    assert diff_resources(_doc(_res("aws:x/y:Z", "tmp")), _doc())["removed"][0]["stateful"] is False


def test_every_replacement_entry_is_sourced() -> None:
    """Each replace-forcing input names the provider source line that makes it so."""
    table = replace_table().provider
    for type_, row in table.rows.items():
        for key, where in row.replace.items():
            assert re.fullmatch(r"\S+\.(goindex|go):\d+", where), (type_, key, where)
        for key, cond in row.conditional.items():
            assert re.fullmatch(r"\S+\.(goindex|go):\d+", cond.at) and cond.why, (type_, key)
    assert table.sources["pulumi-aws"] == "hashicorp/terraform-provider-aws@v6.58.0"
    assert BUCKET in replace_table().stateful
