"""`resolve` accepts any spec that passes the schema: it never raises on one, whatever the spec
rules will say of it, so every rule has one subject (the resolved stack). Checked on every spec
of the validate corpus that passes the shape (tests/golden/validate/corpus.jsonl: presets,
factory edits and fuzzed mutations, valid and refused)."""

from __future__ import annotations

import pytest
import yaml

from accelstack.errors import SpecError
from accelstack.resolve import check_rules, check_spec, resolve_unchecked
from accelstack.spec import parse_spec
from tools import validate_corpus

from .. import factories


def _shaped() -> list[tuple[int, object]]:
    """(case id, spec) of every corpus case whose YAML passes the schema."""
    out = []
    for case in validate_corpus.load_cases():
        try:
            data = yaml.safe_load(case["yaml"])
            out.append((case["id"], parse_spec(data, f"stacks/{case['stem']}.yaml")))
        except (SpecError, yaml.YAMLError, TypeError, AttributeError):
            continue
    return out


@pytest.mark.slow
def test_every_spec_the_schema_accepts_resolves_and_is_judged_by_the_rules(catalog) -> None:
    shaped = _shaped()
    refused = 0
    for case_id, spec in shaped:
        try:
            stack = resolve_unchecked(spec, catalog)
        except Exception as exc:  # the property under test: it never raises
            pytest.fail(f"corpus case {case_id}: resolve raised {exc!r}")
        refused += bool(check_rules(stack))
    # the corpus holds both kinds: what the rules refuse and what they accept
    assert len(shaped) > 300 and 0 < refused < len(shaped)


def test_an_unknown_type_region_and_workload_pool_resolve_for_the_rules_to_name(catalog) -> None:
    data = factories.eks_spec("trn2.48xlarge", 2)
    data["region"] = "mars-north-1"
    data["pools"].append({**data["pools"][0], "name": "extra", "instance_type": "trn9.huge"})
    data["workload"]["pool"] = "nowhere"
    stack = resolve_unchecked(parse_spec(data, "stacks/demo.yaml"), catalog)
    # the known pool resolved without a zone; the unknown type has no resolved pool
    assert [p.name for p in stack.pools] == [data["pools"][0]["name"]]
    assert stack.pools[0].zone_id == "" and not stack.placed
    assert stack.known_workload_pool is None and stack.framework == ""
    paths = {p.path for p in check_spec(stack)}
    assert {"region", "pools[1].instance_type", "workload.pool"} <= paths


def test_a_pool_too_large_to_split_resolves_without_node_groups(catalog) -> None:
    """A count far beyond what one cluster holds is never split into node groups (it would be
    materialised); `pool-node-groups` refuses it."""
    data = factories.eks_spec("p5.48xlarge", 10**30)
    stack = resolve_unchecked(parse_spec(data, "stacks/demo.yaml"), catalog)
    assert stack.pools[0].node_groups == ()
    assert any(p.path == "pools[0].nodes" for p in check_spec(stack))
