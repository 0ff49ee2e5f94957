"""Stack rules on UltraServer pools and on the upstream projects' stated limits
(accelstack/resolve/rules.py, upstream.py): spares and a single reservation's
size in whole UltraServers; Kueue topology-aware scheduling refused beside DRA pools, with the
limit restated from its source. Each refuses in one line naming the spec file and key."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from accelstack.catalog import load_catalog
from accelstack.errors import SpecError
from accelstack.resolve import resolve
from accelstack.resolve.upstream import LIMITS
from accelstack.spec import parse_spec

from ..render.test_neuron_allocation import TRN2U_PRICE, mixed


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Any:
    d = tmp_path_factory.mktemp("overlay")
    (d / "prices.yaml").write_text(yaml.safe_dump({"instances": [TRN2U_PRICE]}))
    return load_catalog(overlay=d)


def trn2u(catalog: Any, pool: dict[str, Any] | None = None, **jobs: Any) -> Any:
    """8 trn2u.48xlarge (two UltraServers) on a Capacity Block, with `pool` edits."""
    data = mixed(False)
    data["pools"][0].update(pool or {})
    if jobs:
        data["jobs"] = {**(data.get("jobs") or {}), **jobs}
    return resolve(parse_spec(data, "llama3-70b-trn2.yaml"), catalog)


def problems(catalog: Any, pool: dict[str, Any] | None = None, **jobs: Any) -> list[Any]:
    with pytest.raises(SpecError) as err:
        trn2u(catalog, pool, **jobs)
    return err.value.problems


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_half_an_ultraserver_of_spares_is_refused_in_one_line(catalog: Any) -> None:
    """Fails without the rule: 8 nodes + 2 spares (2.5 UltraServers) validated."""
    purchase = {
        "option": "capacity-block",
        "reservation_id": "cr-0a1b2c3d4e5f67890",
        "instances": 12,
    }
    (p,) = problems(catalog, {"spare_nodes": 2, "purchase": purchase})
    assert (str(p.file), p.path) == ("llama3-70b-trn2.yaml", "pools[0].spare_nodes")
    assert "make the pool run 10 nodes, 2.5 UltraServers of 4" in p.message
    assert "use 0 or 4 spare nodes" in p.message and "\n" not in p.message


def test_whole_ultraservers_of_spares_pass(catalog: Any) -> None:
    purchase = {
        "option": "capacity-block",
        "reservation_id": "cr-0a1b2c3d4e5f67890",
        "instances": 12,
    }
    stack = trn2u(catalog, {"spare_nodes": 4, "purchase": purchase})
    assert stack.workload_pool.running_nodes == 12


def test_a_reservation_size_that_splits_an_ultraserver_is_refused(catalog: Any) -> None:
    purchase = {
        "option": "capacity-block",
        "reservation_id": "cr-0a1b2c3d4e5f67890",
        "instances": 10,
    }
    (p,) = problems(catalog, {"purchase": purchase})
    assert p.path == "pools[0].purchase.instances"
    assert "10 trn2u.48xlarge instances is not a whole number of UltraServers" in p.message
    assert "use 8 or 12" in p.message


def test_kueue_topology_aware_scheduling_is_refused_beside_dra_pools(catalog: Any) -> None:
    """Fails without the rule: Kueue TAS with a DRA pool was accepted, though Kueue 0.19's own
    docs list DRA with TAS as unsupported."""
    (p,) = problems(catalog, kueue=True, topology_aware=True)
    assert p.path == "jobs.topology_aware"
    assert "Kueue 0.19.2 lists no DRA with topology-aware scheduling" in p.message
    assert "dynamic_resource_allocation.md:268-270" in p.message
    assert "pool(s) 'trn2' (trn2u.48xlarge)" in p.message and "\n" not in p.message
    # without topology-aware scheduling, Kueue with the DRA pool stays accepted
    assert trn2u(catalog, kueue=True).queue_name


def test_every_restated_limit_names_a_pinned_commit_and_lines() -> None:
    for limit in LIMITS:
        repo_at, path_lines = limit.source.split(" ", 1)
        assert "@" in repo_at and len(repo_at.split("@")[1]) == 40, limit.source
        assert ":" in path_lines and path_lines.split(":")[1][0].isdigit(), limit.source
        assert load_catalog().charts[limit.project].source.split(" ")[0] == repo_at
