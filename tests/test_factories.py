"""The shared spec builders (tests/factories.py) build specs that validate, and edit by path."""

from __future__ import annotations

import pytest
import yaml

from accelstack.resolve import resolve
from accelstack.spec import parse_spec

from .factories import UNLIMITED, edited, eks_spec, preset, set_path, standalone_spec, write_spec


def test_set_path_walks_keys_and_list_items_and_creates_mappings() -> None:
    data = {"pools": [{"nodes": 1}, {"nodes": 2}]}
    set_path(data, "pools[1].nodes", 8)
    set_path(data, "workload.env.A", "b")
    assert data == {"pools": [{"nodes": 1}, {"nodes": 8}], "workload": {"env": {"A": "b"}}}
    with pytest.raises(IndexError):
        set_path(data, "pools[5].nodes", 1)


def test_edits_never_touch_the_source() -> None:
    value = {"unlimited": True}
    first = preset("trn1-finetune", {"budget": value})
    first["budget"]["unlimited"] = False
    assert value == {"unlimited": True} and preset("trn1-finetune")["budget"] != first["budget"]
    base = eks_spec()
    assert edited(base, {"pools[0].nodes": 4})["pools"][0]["nodes"] == 4
    assert base["pools"][0]["nodes"] == 2


@pytest.mark.parametrize(
    "instance_type", ["trn1.32xlarge", "trn2.48xlarge", "p5.48xlarge", "p5en.48xlarge"]
)
def test_the_minimal_eks_spec_resolves_on_full_node_types(instance_type: str) -> None:
    stack = resolve(parse_spec(eks_spec(instance_type), "stacks/demo.yaml"))
    assert [p.instance_type for p in stack.spec.pools] == [instance_type]


def test_the_minimal_standalone_spec_resolves() -> None:
    stack = resolve(parse_spec(standalone_spec(nodes=2), "stacks/demo.yaml"))
    assert stack.spec.orchestration == "ec2" and stack.spec.pools[0].nodes == 2


def test_write_spec_names_the_file_after_the_spec(tmp_path) -> None:
    path = write_spec(tmp_path, eks_spec(edits={"budget": UNLIMITED}))
    assert path == tmp_path / "demo.yaml"
    assert yaml.safe_load(path.read_text())["budget"] == UNLIMITED
