"""A fabric test that starts in any image (templates/fabric-test.sh.j2): sshd's run directory
and host keys made when the image lacks them; Kubeflow Trainer's rsh arguments kept with the
nodes' port; every node's sshd probed before mpirun, a silent one named in one line; on
UltraServer pools the hosts ordered by UltraServer and a split server refused; an indexed-Job
fabric test for stacks without Trainer (jobs.controller pytorchjob or none)."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import urllib.request
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from accelstack.catalog import load_catalog
from accelstack.render import render
from accelstack.render.artifacts import FABRIC_KEY_PORT, render_fabric_test
from accelstack.resolve import resolve
from accelstack.spec import parse_spec

from ..helpers_render import SHELLCHECK, SHELLCHECK_ARGS, preset_stack, variant
from .test_fabric import NCCL, NCCOM, _docs, _run_launcher, ssh_shim
from .test_neuron_allocation import TRN2U_PRICE, mixed

#: Trainer's MPI runtime sets this on the launcher (kubeflow/trainer@658725bd
#: pkg/constants/constants.go:177-181, pkg/runtime/framework/plugins/mpi/mpi.go:221-223).
TRAINER_RSH = "-o ConnectionAttempts=10"
FAST = NCCL.replace("475.95", "499.00")


def test_the_launcher_keeps_trainers_rsh_arguments_and_adds_the_port(tmp_path: Path) -> None:
    """Fails on the old launcher, which replaced Trainer's `-o ConnectionAttempts=10` with only
    the port."""
    proc = _run_launcher(tmp_path, FAST, env={"OMPI_MCA_plm_rsh_args": TRAINER_RSH})
    assert proc.returncode == 0, proc.stderr
    used = (tmp_path / "rsh.used").read_text().split()
    assert " ".join(used).startswith(TRAINER_RSH)
    assert used[-2:] == ["-p", "2222"]


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_every_nodes_sshd_is_probed_before_mpirun(tmp_path: Path) -> None:
    proc = _run_launcher(tmp_path, FAST, env={"OMPI_MCA_plm_rsh_args": TRAINER_RSH})
    assert proc.returncode == 0, proc.stderr
    probed = [line.split()[0] for line in (tmp_path / "ssh.log").read_text().splitlines()]
    assert probed == [f"host-{i}" for i in range(16)]
    assert "sshd answers on all 16 nodes" in proc.stderr


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_a_node_whose_sshd_does_not_answer_is_named_in_one_line(tmp_path: Path) -> None:
    """Fails on the old launcher, which started mpirun without asking."""
    env = {"SSH_DOWN": "host-7", "ACCELSTACK_FABRIC_SSH_WAIT": "1"}
    proc = _run_launcher(tmp_path, FAST, env=env)
    assert proc.returncode == 2
    (line,) = [x for x in proc.stderr.splitlines() if "FAILED" in x]
    assert "sshd on host-7 (port 2222) did not answer within 1s" in line
    assert not (tmp_path / "argv.log").exists()  # mpirun never started


# ---- a node in an image without /run/sshd and host keys -------------------------------------


def _config_map(stack: Any) -> dict[str, Any]:
    """The fabric test's ConfigMap as `render_fabric_test` writes it for `stack`."""
    text = render_fabric_test(stack)
    assert text is not None
    (cm,) = [d for d in _docs(text) if d["kind"] == "ConfigMap"]
    return dict(cm)


def _run_script(
    tmp_path: Path, shims: Path, root: Path, **env: str
) -> subprocess.CompletedProcess[str]:
    """tmp_path/fabric-test.sh run with the shims first on PATH, `root` as its file system
    root and `env` (ACCELSTACK_* variables) on top."""
    return subprocess.run(
        ["bash", str(tmp_path / "fabric-test.sh")],
        env={
            **os.environ,
            "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}",
            "ACCELSTACK_TEST_SYSROOT": str(root),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )


def _run_node(tmp_path: Path, keys: bool) -> tuple[subprocess.CompletedProcess[str], Path]:
    cm = _config_map(preset_stack("llama3-70b-trn2"))
    (tmp_path / "fabric-test.sh").write_text(cm["data"]["fabric-test.sh"])
    root, shims = tmp_path / "root", tmp_path / "bin"
    ssh_shim(shims)
    sshd = root / "usr" / "sbin" / "sshd"
    sshd.parent.mkdir(parents=True)
    sshd.write_text(f'#!/usr/bin/env bash\necho "$*" > {tmp_path / "sshd.args"}\n')
    keygen = shims / "ssh-keygen"
    keygen.write_text(
        "#!/usr/bin/env bash\n"
        f'echo "$*" > {tmp_path / "keygen.args"}\n'
        'prefix=/; while [[ $# -gt 0 ]]; do [[ "$1" == -f ]] && prefix="$2"; shift; done\n'
        'touch "$prefix/etc/ssh/ssh_host_ed25519_key"\n'
    )
    for f in (sshd, keygen):
        f.chmod(0o755)
    for tool in ("nccom-test", "mpirun"):
        (shims / tool).write_text("#!/usr/bin/env bash\n")
        (shims / tool).chmod(0o755)
    if keys:
        (root / "etc" / "ssh").mkdir(parents=True)
        (root / "etc" / "ssh" / "ssh_host_rsa_key").touch()
    return _run_script(tmp_path, shims, root, ACCELSTACK_FABRIC_ROLE="node"), root


def test_a_node_makes_sshds_run_directory_and_host_keys_when_the_image_lacks_them(
    tmp_path: Path,
) -> None:
    """Fails on the old node script, which started sshd in an image without /run/sshd or host
    keys (sshd exits: 'Missing privilege separation directory', 'no hostkeys available')."""
    proc, root = _run_node(tmp_path, keys=False)
    assert proc.returncode == 0, proc.stderr
    run = root / "run" / "sshd"
    assert run.is_dir() and oct(run.stat().st_mode & 0o777) == "0o755"
    assert (tmp_path / "keygen.args").read_text().split() == ["-q", "-A", "-f", str(root)]
    assert (root / "etc" / "ssh" / "ssh_host_ed25519_key").exists()
    assert (tmp_path / "sshd.args").read_text().split() == ["-De", "-p", "2222"]


def test_a_node_keeps_the_host_keys_its_image_has(tmp_path: Path) -> None:
    proc, _ = _run_node(tmp_path, keys=True)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "keygen.args").exists()
    assert (tmp_path / "sshd.args").exists()


# ---- the indexed-Job fabric test (no Kubeflow Trainer) -------------------------------------


@pytest.mark.parametrize(
    ("preset", "controller"), [("llama3-70b-p5", "none"), ("trn1-multinode", "pytorchjob")]
)
def test_stacks_without_trainer_get_an_indexed_job_fabric_test(
    preset: str, controller: str
) -> None:
    """Fails on the old render, which wrote no fabric test without Kubeflow Trainer."""
    stack = variant(preset, jobs={"controller": controller})
    arts = {a.path: a for a in render(stack)}
    fab = arts["fabric-test.yaml"]
    docs = {d["kind"]: d for d in _docs(fab.content)}
    assert set(docs) == {"ConfigMap", "NetworkPolicy", "Service", "Job"}
    for d in docs.values():
        kubernetes_validate.validate(d, stack.kubernetes_version, strict=True)
    job, svc = docs["Job"], docs["Service"]
    nodes = stack.workload_pool.nodes
    assert job["spec"]["completionMode"] == "Indexed"
    assert job["spec"]["completions"] == job["spec"]["parallelism"] == nodes
    assert job["spec"]["successPolicy"] == {"rules": [{"succeededIndexes": "0"}]}
    pod = job["spec"]["template"]["spec"]
    assert pod["subdomain"] == svc["metadata"]["name"] == job["metadata"]["name"]
    assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"]
    (c,) = pod["containers"]
    env = {e["name"]: e for e in c["env"]}
    index = env["ACCELSTACK_FABRIC_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"]
    assert index == "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    assert c["resources"]["limits"]["vpc.amazonaws.com/efa"] == stack.workload_pool.efa_interfaces
    script = docs["ConfigMap"]["data"]["fabric-test.sh"]
    name = job["metadata"]["name"]
    assert f"{name}-{nodes - 1}.{name}" in script  # the last pod's stable name in the hostfile
    assert f"delete job {name}" in fab.purpose
    # the run sequence runs it before the training job
    index_md = arts["README.md"].content
    assert "kubectl apply --server-side -f run/fabric-test.yaml" in index_md


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_the_indexed_launcher_serves_its_public_key_and_runs_the_test(tmp_path: Path) -> None:
    """Pod 0 makes a key pair, serves the public key to the other pods while the test runs and
    lists every pod, itself first, in the hostfile; the private key is never served."""
    stack = variant("llama3-70b-p5", jobs={"controller": "none"})
    port = _free_port()
    cm = _config_map(stack)
    script = cm["data"]["fabric-test.sh"].replace(str(FABRIC_KEY_PORT), str(port))
    (tmp_path / "fabric-test.sh").write_text(script)
    (tmp_path / "accelstack_fabric.py").write_text(cm["data"]["accelstack_fabric.py"])
    fetched: dict[str, bytes] = {}

    def fetch_while_running() -> None:
        for _ in range(200):
            try:
                fetched["pub"] = urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/launcher.pub", timeout=1
                ).read()
                return
            except OSError:
                threading.Event().wait(0.05)

    shims = tmp_path / "bin"
    ssh_shim(shims)
    # the benchmark waits until the key was fetched, so the server is up while it runs
    root = tmp_path / "root"
    mpirun = root / "opt" / "amazon" / "openmpi" / "bin" / "mpirun"
    mpirun.parent.mkdir(parents=True)
    mpirun.write_text(
        "#!/usr/bin/env bash\n"
        f'cat "$OMPI_MCA_orte_default_hostfile" > {tmp_path / "hosts.used"}\n'
        f"for _ in $(seq 100); do [[ -f {tmp_path / 'fetched'} ]] && break; sleep 0.05; done\n"
        f"cat {tmp_path / 'bench.txt'}\n"
    )
    mpirun.chmod(0o755)
    for need in ("/opt/nccl-tests/build/all_reduce_perf", "/usr/sbin/sshd"):
        f = root / need.lstrip("/")
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("#!/usr/bin/env bash\n")
        f.chmod(0o755)
    (tmp_path / "bench.txt").write_text(FAST)
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(home),
        "ACCELSTACK_FABRIC_INDEX": "0",
        "ACCELSTACK_TEST_SYSROOT": str(root),
        "SSH_LOG": str(tmp_path / "ssh.log"),
    }
    proc = subprocess.Popen(
        ["bash", str(tmp_path / "fabric-test.sh")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    fetch_while_running()
    (tmp_path / "fetched").touch()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert fetched["pub"] == (home / ".ssh" / "id_ed25519.pub").read_bytes()
    assert b"PRIVATE" not in fetched["pub"]
    hosts = [line.split()[0] for line in (tmp_path / "hosts.used").read_text().splitlines()]
    name = f"{stack.name}-fabric"
    assert hosts == [f"{name}-{i}.{name}" for i in range(stack.workload_pool.nodes)]


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_an_indexed_node_without_the_launchers_key_stops_in_one_line(tmp_path: Path) -> None:
    stack = variant("llama3-70b-p5", jobs={"controller": "none"})
    (tmp_path / "fabric-test.sh").write_text(_config_map(stack)["data"]["fabric-test.sh"])
    root, shims = tmp_path / "root", tmp_path / "bin"
    ssh_shim(shims)
    for need in (
        "/opt/amazon/openmpi/bin/mpirun",
        "/opt/nccl-tests/build/all_reduce_perf",
        "/usr/sbin/sshd",
    ):
        f = root / need.lstrip("/")
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("#!/usr/bin/env bash\n")
        f.chmod(0o755)
    proc = _run_script(
        tmp_path,
        shims,
        root,
        HOME=str(tmp_path / "home"),
        ACCELSTACK_FABRIC_INDEX="3",
        ACCELSTACK_FABRIC_SSH_WAIT="1",
    )
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert f"no public key from the launcher ({stack.name}-fabric-0.{stack.name}-fabric" in line


# ---- UltraServer pools: hosts in UltraServer order, whole servers -----------------------------


@pytest.fixture(scope="module")
def trn2u(tmp_path_factory: pytest.TempPathFactory) -> Any:
    d = tmp_path_factory.mktemp("overlay")
    (d / "prices.yaml").write_text(yaml.safe_dump({"instances": [TRN2U_PRICE]}))
    catalog = load_catalog(overlay=d)
    return resolve(parse_spec(mixed(False), "llama3-70b-trn2.yaml"), catalog)


def _ids(tmp_path: Path, servers: dict[str, list[str]]) -> Path:
    """FAKE_IDS: each host's `cat server_id_4 node_id_4` output."""
    d = tmp_path / "ids"
    d.mkdir()
    for server, hosts in servers.items():
        for position, host in enumerate(hosts):
            (d / host).write_text(f"{server}\n{position}\n")
    return d


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_the_launcher_orders_hosts_by_ultraserver(tmp_path: Path, trn2u: Any) -> None:
    """Each server's ranks contiguous, by position: the hostfile and nccom-test's --hosts follow
    the UltraServer ids, not the hostfile Trainer wrote (interleaved here)."""
    servers = {
        "us-b": ["host-1", "host-3", "host-5", "host-7"],
        "us-a": ["host-6", "host-4", "host-2", "host-0"],
    }
    env = {"FAKE_IDS": str(_ids(tmp_path, servers)), "OMPI_MCA_plm_rsh_args": TRAINER_RSH}
    proc = _run_launcher(tmp_path, NCCOM.replace("393.15", "999.00"), 8, env, trn2u)
    assert proc.returncode == 0, proc.stderr
    want = servers["us-a"] + servers["us-b"]
    assert [x.split()[0] for x in (tmp_path / "hosts.used").read_text().splitlines()] == want
    argv = (tmp_path / "argv.log").read_text().split()
    assert argv[argv.index("--hosts") + 1 :] == want
    reads = [x for x in (tmp_path / "ssh.log").read_text().splitlines() if " cat " in x]
    assert len(reads) == 8 and all("server_id_4" in x and "node_id_4" in x for x in reads)


def test_a_split_ultraserver_stops_the_test_in_one_line(tmp_path: Path, trn2u: Any) -> None:
    servers = {
        "us-a": ["host-0", "host-1", "host-2"],
        "us-b": ["host-3", "host-4", "host-5"],
        "us-c": ["host-6", "host-7"],
    }
    env = {"FAKE_IDS": str(_ids(tmp_path, servers))}
    proc = _run_launcher(tmp_path, NCCOM, 8, env, trn2u)
    assert proc.returncode == 2
    (line,) = [x for x in proc.stderr.splitlines() if "FAILED" in x]
    assert "holds 3 of the test's nodes, a job of whole UltraServers needs 4 on each" in line
    assert not (tmp_path / "argv.log").exists()


@pytest.mark.slow
@pytest.mark.parametrize("controller", ["trainer", "none"])
def test_every_variant_of_the_script_passes_shellcheck(
    tmp_path: Path, trn2u: Any, controller: str
) -> None:
    """The UltraServer ordering and the indexed-Job launcher are parts of the script the presets
    do not render (tests/render/test_fabric.py shellchecks theirs)."""
    stacks = [trn2u, variant("llama3-70b-p5", jobs={"controller": controller})]
    if controller == "none":
        catalog = trn2u.catalog
        data = mixed(False)
        data["jobs"] = {"controller": "none"}
        stacks[0] = resolve(parse_spec(data, "llama3-70b-trn2.yaml"), catalog)
    for i, stack in enumerate(stacks):
        path = tmp_path / f"fabric-{i}.sh"
        path.write_text(_config_map(stack)["data"]["fabric-test.sh"])
        sc = subprocess.run(
            [str(SHELLCHECK), *SHELLCHECK_ARGS, str(path)], capture_output=True, text=True
        )
        assert sc.returncode == 0, sc.stdout
