"""The fabric acceptance job: the parser on the tools' documented output formats, the threshold
from catalog facts, the rendered TrainJob on Trainer's MPI runtime (schema, kubernetes-validate,
shellcheck) for p5 and Trainium pools, and the launcher script run end to end with a stand-in
mpirun printing a benchmark's output."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from accelstack.render import render
from accelstack.render.artifacts import render_fabric_test
from accelstack.render.fabric import expected_busbw_gbs, fabric_threshold
from accelstack.trial import fabric

from ..conftest import ROOT
from ..helpers_render import SHELLCHECK, SHELLCHECK_ARGS, preset_stack, variant
from ..helpers_upstream import model_problems

FIX = ROOT / "tests" / "fixtures" / "fabric"
NCCL = (FIX / "nccl-tests-2x8.txt").read_text()
NCCOM = (FIX / "nccom-test-2x64.txt").read_text()


# ---- parser --------------------------------------------------------------------------------


def test_nccl_tests_output_is_parsed_by_column() -> None:
    rows = fabric.parse(NCCL, "nccl-tests")
    assert [r.size_bytes for r in rows] == [2**30, 2**31, 2**32, 2**33]
    # out-of-place busbw (8th column), not algbw, not the in-place one, not the footer average
    assert [r.busbw_gbs for r in rows] == [458.47, 468.05, 473.38, 475.95]
    assert fabric.largest_busbw(NCCL, "nccl-tests").busbw_gbs == 475.95


def test_nccom_test_output_is_converted_from_gib() -> None:
    row = fabric.largest_busbw(NCCOM, "nccom-test")
    assert row.size_bytes == 8589934592
    assert row.busbw_gbs == pytest.approx(393.15 * 2**30 / 1e9)  # GiB/s per the tool's docs


def test_verdict_lines_and_exit_codes() -> None:
    code, line = fabric.verdict(NCCL, "nccl-tests", 450.0)
    assert code == 0 and "passed" in line and "475.9 GB/s" in line
    code, line = fabric.verdict(NCCL, "nccl-tests", 480.0)
    assert code == 1 and "FAILED" in line and "below the threshold 480.0" in line
    assert "\n" not in line
    code, line = fabric.verdict("mpirun: error: no hosts\n", "nccl-tests", 1.0)
    assert code == 2 and "no nccl-tests result rows" in line
    # the tools' headers, device lists and footers are never rows
    assert (
        fabric.parse("# Avg bus bandwidth    : 468.962\n#  Rank  0 Group  0\n", "nccl-tests") == []
    )
    assert fabric.parse("Avg bus bandwidth:      391.1200GB/s\n", "nccom-test") == []


def test_cli_reads_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.txt"
    out.write_text(NCCOM)
    assert fabric.main(["--tool", "nccom-test", "--min-busbw-gbs", "500", str(out)]) == 1
    assert "nccom-test all-reduce bus bandwidth 422.1 GB/s" in capsys.readouterr().err


# ---- threshold from catalog facts ------------------------------------------------------------


def test_network_bound_formula() -> None:
    # two nodes of 8 ranks behind 400 GB/s each: busbw = 400 x 15 / 8
    assert expected_busbw_gbs(400, 2, 8) == pytest.approx(750)
    # many nodes: the bound tends to the node bandwidth
    assert expected_busbw_gbs(400, 1000, 8) == pytest.approx(400, rel=0.01)
    with pytest.raises(ValueError):
        expected_busbw_gbs(400, 1, 8)


@pytest.mark.parametrize("preset", ["llama3-70b-p5", "llama3-70b-trn2", "trn1-multinode"])
def test_threshold_comes_from_the_catalog(preset: str) -> None:
    stack = preset_stack(preset)
    pool = stack.workload_pool
    th = fabric_threshold(stack, pool)
    assert th is not None
    facts = stack.catalog.launch.fabric_test
    assert facts is not None and 0 < facts.tolerance <= 1
    assert th.node_gbs == pool.instance.efa_gbps / 8
    assert th.ranks_per_node == pool.procs_per_node and th.nodes == pool.nodes
    assert th.min_gbs == pytest.approx(th.expected_gbs * facts.tolerance, abs=0.1)
    for tool in facts.tools.values():
        assert "@" in tool.source


def test_no_fabric_test_where_it_cannot_measure_the_network() -> None:
    assert (
        fabric_threshold(preset_stack("trn1-finetune"), preset_stack("trn1-finetune").workload_pool)
        is None
    )
    assert render_fabric_test(preset_stack("trn1-finetune")) is None  # one node, no EFA
    names = [a.path for a in render(preset_stack("trn1-finetune"))]
    assert "fabric-test.yaml" not in names


# ---- the rendered job --------------------------------------------------------------------------


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("preset", "tool"),
    [
        ("llama3-70b-p5", "nccl-tests"),
        ("llama3-70b-trn2", "nccom-test"),
        ("trn1-multinode", "nccom-test"),
    ],
)
def test_fabric_job_renders_and_validates(preset: str, tool: str, tmp_path: Path) -> None:
    stack = preset_stack(preset)
    pool = stack.workload_pool
    text = render_fabric_test(stack)
    assert text is not None
    docs = _docs(text)
    by_kind = {d["kind"]: d for d in docs}
    assert (
        model_problems(by_kind["TrainJob"]) == []
        and model_problems(by_kind["TrainingRuntime"]) == []
    )
    rt = by_kind["TrainingRuntime"]
    assert rt["spec"]["mlPolicy"]["mpi"]["numProcPerNode"] == pool.procs_per_node
    assert rt["spec"]["mlPolicy"]["numNodes"] == pool.nodes
    version = stack.kubernetes_version
    for rj in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": rj["name"], "namespace": "x"},
            "spec": rj["template"]["spec"],
        }
        kubernetes_validate.validate(job, version, strict=True)
        (c,) = rj["template"]["spec"]["template"]["spec"]["containers"]
        assert c["resources"]["limits"]["vpc.amazonaws.com/efa"] == pool.efa_interfaces
        env = {e["name"]: e.get("value") for e in c["env"]}
        assert env["ACCELSTACK_FABRIC_ROLE"] == rj["name"]
    for kind in ("ConfigMap", "NetworkPolicy"):
        kubernetes_validate.validate(by_kind[kind], version, strict=True)
    data = by_kind["ConfigMap"]["data"]
    assert data["accelstack_fabric.py"] == (ROOT / "accelstack" / "trial" / "fabric.py").read_text()
    script = data["fabric-test.sh"]
    th = fabric_threshold(stack, pool)
    assert th is not None and f"--tool {tool} --min-busbw-gbs {th.min_gbs}" in script
    path = tmp_path / "fabric-test.sh"
    path.write_text(script)
    sc = subprocess.run(
        [str(SHELLCHECK), *SHELLCHECK_ARGS, str(path)], capture_output=True, text=True
    )
    assert sc.returncode == 0, sc.stdout
    if tool == "nccom-test":
        assert "export CCOM_SOCKET_IFNAME=eth0" in script and "NEURON_RT_ROOT_COMM_ID=" in script


def test_fabric_job_is_listed_and_queued() -> None:
    arts = render(variant("llama3-70b-p5", jobs={"kueue": True}))
    (fab,) = [a for a in arts if a.path == "fabric-test.yaml"]
    (tj,) = [d for d in _docs(fab.content) if d["kind"] == "TrainJob"]
    assert tj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "llama3-70b-p5-queue"
    assert "fabric-test.yaml" in arts[-1].content
    # without Kubeflow Trainer: an indexed Job (tests/render/test_fabric_start.py)
    bare = render_fabric_test(variant("llama3-70b-p5", jobs={"controller": "none"}))
    assert bare is not None and {d["kind"] for d in _docs(bare)} >= {"Job", "Service"}


# ---- the launcher script, end to end ------------------------------------------------------------


#: A stand-in for ssh: options skipped, the first word is the host, the rest the command; every
#: call logged; the host named by SSH_DOWN refuses; `cat` prints the host's file under FAKE_IDS.
SSH_SHIM = """#!/usr/bin/env bash
while [[ $# -gt 0 ]]; do
  case "$1" in
    -o|-p|-i|-l) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
host="$1"
shift
echo "$host $*" >> "$SSH_LOG"
[[ "$host" != "${SSH_DOWN:-}" ]] || exit 255
if [[ "${1:-}" == cat ]]; then
  cat "$FAKE_IDS/$host"
fi
"""


def ssh_shim(shims: Path) -> None:
    shims.mkdir(exist_ok=True)
    (shims / "ssh").write_text(SSH_SHIM)
    (shims / "ssh").chmod(0o755)


def _run_launcher(
    tmp_path: Path,
    output: str,
    nodes: int = 16,
    env: dict[str, str] | None = None,
    stack: Any = None,
) -> subprocess.CompletedProcess[str]:
    stack = stack or preset_stack("llama3-70b-p5")
    text = render_fabric_test(stack)
    assert text is not None
    (cm,) = [d for d in _docs(text) if d["kind"] == "ConfigMap"]
    for name, body in cm["data"].items():
        (tmp_path / name).write_text(body)
    shims = tmp_path / "bin"
    ssh_shim(shims)
    (tmp_path / "bench.txt").write_text(output)
    # the image's files under a stand-in root (ACCELSTACK_TEST_SYSROOT): mpirun at its absolute
    # OpenMPI path prints the benchmark output the real tool would; the others exist
    root = tmp_path / "root"
    tool = stack.catalog.launch.fabric_test.tools[stack.workload_pool.device.name]
    for need in tool.requires:
        f = root / need.lstrip("/") if need.startswith("/") else shims / need
        if f.exists():
            continue
        f.parent.mkdir(parents=True, exist_ok=True)
        # the benchmark (and mpirun) print its output and record their arguments and hostfile
        f.write_text(
            "#!/usr/bin/env bash\n"
            f'echo "$0 $*" >> {tmp_path / "argv.log"}\n'
            f'cat "${{OMPI_MCA_orte_default_hostfile:-/dev/null}}" > {tmp_path / "hosts.used"}\n'
            f'echo "$OMPI_MCA_plm_rsh_args" > {tmp_path / "rsh.used"}\n'
            f"cat {tmp_path / 'bench.txt'}\n"
        )
        f.chmod(0o755)
    for name in ("python3",):  # the real one: the parser runs
        (shims / name).unlink(missing_ok=True)
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("".join(f"host-{i} slots=8\n" for i in range(nodes)))
    full = {
        **os.environ,
        "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}",
        "ACCELSTACK_FABRIC_ROLE": "launcher",
        "OMPI_MCA_orte_default_hostfile": str(hostfile),
        "ACCELSTACK_TEST_SYSROOT": str(root),
        "SSH_LOG": str(tmp_path / "ssh.log"),
        **(env or {}),
    }
    return subprocess.run(
        ["bash", str(tmp_path / "fabric-test.sh")],
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_launcher_passes_on_a_fast_fabric(tmp_path: Path) -> None:
    fast = NCCL.replace("475.95", "499.00")
    proc = _run_launcher(tmp_path, fast)
    assert proc.returncode == 0, proc.stderr
    assert "fabric test passed" in proc.stdout


def test_launcher_fails_in_one_line_on_a_slow_fabric(tmp_path: Path) -> None:
    slow = NCCL.replace("475.95", "120.00")
    proc = _run_launcher(tmp_path, slow)
    assert proc.returncode == 1
    failed = [x for x in proc.stderr.splitlines() if "FAILED" in x]
    assert len(failed) == 1 and "120.0 GB/s" in failed[0]


def test_launcher_refuses_a_short_hostfile(tmp_path: Path) -> None:
    proc = _run_launcher(tmp_path, NCCL, nodes=15)
    assert proc.returncode == 2
    assert "lists 15 node(s), the pool has 16" in proc.stderr


# ---- started the way upstream starts it ----------------------------------------------------


def test_the_launcher_runs_the_images_openmpi_by_absolute_path(tmp_path: Path) -> None:
    """mpirun is the image's /opt/amazon/openmpi/bin/mpirun (as the reference nccl-tests
    manifest, awsome-distributed-training@50820097, starts it), never whatever `mpirun` PATH
    finds first: a PATH mpirun that fails is not the one called."""
    tool = preset_stack("llama3-70b-p5").catalog.launch.fabric_test.tools["nvidia"]  # type: ignore[union-attr]
    assert tool.mpirun == "/opt/amazon/openmpi/bin/mpirun"
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "mpirun").write_text("#!/usr/bin/env bash\necho 'the PATH mpirun' >&2\nexit 97\n")
    (shims / "mpirun").chmod(0o755)
    proc = _run_launcher(tmp_path, NCCL.replace("475.95", "499.00"))
    assert proc.returncode == 0, proc.stderr
    assert "the PATH mpirun" not in proc.stderr


@pytest.mark.parametrize("preset", ["llama3-70b-p5", "llama3-70b-trn2"])
def test_sshd_listens_on_an_unprivileged_port_without_net_bind_service(preset: str) -> None:
    text = render_fabric_test(preset_stack(preset))
    assert text is not None
    docs = _docs(text)
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap"]
    script = cm["data"]["fabric-test.sh"]
    assert 'exec "$sysroot"/usr/sbin/sshd -De -p 2222' in script
    assert 'export OMPI_MCA_plm_rsh_args="$rsh_args"' in script
    (rt,) = [d for d in docs if d["kind"] == "TrainingRuntime"]
    for rj in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        (c,) = rj["template"]["spec"]["template"]["spec"]["containers"]
        assert {p["name"]: p["containerPort"] for p in c["ports"]} == {"ssh": 2222}
        caps = c["securityContext"]["capabilities"]
        assert caps["drop"] == ["ALL"] and "NET_BIND_SERVICE" not in caps.get("add", [])


def test_an_image_without_the_tools_stops_at_start_in_one_line(tmp_path: Path) -> None:
    """On Trainium the workload image must hold nccom-test, OpenMPI and sshd: a pod of an
    image without them says which, in one line, exit 2, before any pod waits on another."""
    stack = preset_stack("llama3-70b-trn2")
    text = render_fabric_test(stack)
    assert text is not None
    (cm,) = [d for d in _docs(text) if d["kind"] == "ConfigMap"]
    (tmp_path / "fabric-test.sh").write_text(cm["data"]["fabric-test.sh"])
    empty = tmp_path / "empty"
    empty.mkdir()
    for role in ("node", "launcher"):
        env = {
            "PATH": str(empty),
            "ACCELSTACK_FABRIC_ROLE": role,
            "ACCELSTACK_TEST_SYSROOT": str(empty),
        }
        proc = subprocess.run(
            ["/bin/bash", str(tmp_path / "fabric-test.sh")],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 2, proc.stderr
        (line,) = proc.stderr.strip().splitlines()
        assert (
            f"the image {stack.image} lacks nccom-test mpirun /usr/sbin/sshd ssh ssh-keygen "
            "python3" in line
        )


def test_the_index_and_the_manifest_say_how_to_run_it_again() -> None:
    stack = preset_stack("llama3-70b-p5")
    arts = {a.path: a for a in render(stack)}
    rerun = f"kubectl -n {stack.catalog.defaults.training_namespace} delete trainjob {stack.name}-fabric"
    assert rerun in arts["fabric-test.yaml"].content
    assert rerun in arts["README.md"].content
