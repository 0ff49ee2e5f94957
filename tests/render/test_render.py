"""Rendered launch artifacts: goldens per preset, shellcheck + bash -n, kubernetes-validate and
the vendored PyTorchJob CRD schema, counts from the catalog, orchestrator detection, CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from accelstack.catalog import load_catalog
from accelstack.cli import main
from accelstack.errors import AccelstackError
from accelstack.render import (
    Artifact,
    fsx_claim_name,
    render,
    render_manifest,
    render_node_script,
    render_sbatch,
    training_service_account,
    yamlstr,
)
from accelstack.render.pods import precompile_key
from accelstack.resolve import Stack, resolve
from accelstack.spec import load_spec

from ..conftest import PRESETS, ROOT, STACKS, compare_golden, preset_ids
from ..helpers_plan import plan_stack
from ..helpers_render import (
    SHELLCHECK,
    SHELLCHECK_ARGS,
    preset_stack,
    run_script,
    standalone_variant,
    torchrun_opts,
    unchecked_variant,
    variant,
)
from ..helpers_upstream import pytorchjob_problems

GOLDEN = ROOT / "tests" / "golden" / "render"


def _all_renders() -> list[tuple[str, Stack, list[Artifact]]]:
    out = []
    for path in PRESETS:
        stack = preset_stack(path.stem)
        out.append((path.stem, stack, render(stack)))
    return out


RENDERS = _all_renders()


def _scripts() -> list[tuple[str, str]]:
    """Every script variant: per preset, both bucket modes, every orchestrator, and sbatch."""
    scripts = []
    for name, stack, arts in RENDERS:
        for a in arts:
            if a.path.endswith((".sh", ".sbatch")):
                scripts.append((f"{name}/{a.path}", a.content))
        for orch in ("auto", "pytorchjob", "slurm", "standalone"):
            scripts.append(
                (
                    f"{name}/{orch}-bucket.sh",
                    render_node_script(stack, None, orch, bucket="cache-bucket"),
                )
            )
        slurm = standalone_variant(name, standalone={"install_slurm": True})
        for a in render(slurm):
            if a.path.endswith((".sh", ".sbatch")):
                scripts.append((f"{name}/ec2/{a.path}", a.content))
    return scripts


# ---- goldens --------------------------------------------------------------------------------


@pytest.mark.parametrize("preset", preset_ids())
def test_golden_render(preset: str) -> None:
    stack = preset_stack(preset)
    arts = render(stack)
    for a in arts:
        compare_golden(a.content, GOLDEN / preset / a.path)
    on_disk = {p.name for p in (GOLDEN / preset).iterdir()}
    assert on_disk == {a.path for a in arts}, "stale golden files"


def test_golden_variant_ec2_with_slurm() -> None:
    """No preset asks for Slurm; this variant pins the sbatch file and the standalone script."""
    stack = standalone_variant("trn1-multinode", standalone={"install_slurm": True})
    arts = render(stack)
    assert [a.path for a in arts] == ["launch-trn1.sh", "train.sbatch", "README.md"]
    for a in arts:
        compare_golden(a.content, GOLDEN / "_variants" / "trn1-multinode-ec2-slurm" / a.path)


def test_render_is_deterministic() -> None:
    stack = preset_stack("llama3-70b-trn2")
    assert render(stack) == render(stack)


# ---- shell scripts: shellcheck (style severity) and bash -n ----------------------------------


@pytest.mark.slow
def test_scripts_pass_shellcheck_and_bash_n(tmp_path: Path) -> None:
    files = []
    for i, (label, text) in enumerate(_scripts()):
        f = tmp_path / f"{i:03d}-{label.replace('/', '_')}"
        f.write_text(text, encoding="utf-8")
        files.append(f)
        syntax = subprocess.run(["bash", "-n", str(f)], capture_output=True, text=True, check=False)
        assert syntax.returncode == 0, f"bash -n {label}: {syntax.stderr}"
    assert len(files) >= 7 * 6
    sc = subprocess.run(
        [str(SHELLCHECK), *SHELLCHECK_ARGS, *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert sc.returncode == 0, f"shellcheck findings:\n{sc.stdout}{sc.stderr}"


def test_every_exported_variable_has_a_reason() -> None:
    for label, text in _scripts():
        for line in text.splitlines():
            if line.startswith("export ") and "workload.env" not in label:
                name = line.split("=", 1)[0].removeprefix("export ")
                assert "  # " in line or _from_spec(text, name), f"{label}: {line}"


def _from_spec(text: str, name: str) -> bool:
    head = text.split("# from workload.env in the spec", 1)
    return len(head) == 2 and f"export {name}=" in head[1].split("\n\n", 1)[0]


# ---- manifests ------------------------------------------------------------------------------


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


EKS_PRESETS = [name for name, stack, _ in RENDERS if stack.spec.orchestration == "eks"]


@pytest.mark.slow
@pytest.mark.parametrize("preset", EKS_PRESETS)
def test_manifests_validate(preset: str) -> None:
    stack = preset_stack(preset)
    version = stack.kubernetes_version
    for kind in ("pytorchjob", "job"):
        for doc in _docs(render_manifest(stack, kind, bucket="cache-bucket")):
            if doc["kind"] == "PyTorchJob":
                assert pytorchjob_problems(doc) == []
                for role, rs in doc["spec"]["pytorchReplicaSpecs"].items():
                    pod = {
                        "apiVersion": "v1",
                        "kind": "PodTemplate",
                        "metadata": {"name": f"{role.lower()}", "namespace": "x"},
                        "template": rs["template"],
                    }
                    kubernetes_validate.validate(pod, version, strict=True)
            else:
                kubernetes_validate.validate(doc, version, strict=True)


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_the_restated_pytorchjob_api_rejects_bad_pytorchjob() -> None:
    (doc,) = [
        d
        for d in _docs(render_manifest(preset_stack("trn1-multinode"), "pytorchjob"))
        if d["kind"] == "PyTorchJob"
    ]
    assert pytorchjob_problems(doc) == []
    doc["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = "three"
    assert pytorchjob_problems(doc) == [
        "spec.pytorchReplicaSpecs.Worker.replicas must be an integer (*int32)"
    ]
    doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["container"] = []
    assert "spec.pytorchReplicaSpecs.Worker.template.spec.container" in pytorchjob_problems(doc)
    del doc["spec"]["pytorchReplicaSpecs"]
    assert "spec.pytorchReplicaSpecs is required" in pytorchjob_problems(doc)


@pytest.mark.parametrize("preset", preset_ids())
def test_pytorchjob_matches_catalog(preset: str) -> None:
    stack = preset_stack(preset)
    pool = stack.workload_pool
    docs = _docs(render_manifest(stack, "pytorchjob"))
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap"]
    (job,) = [d for d in docs if d["kind"] == "PyTorchJob"]
    ns = stack.catalog.defaults.training_namespace
    assert cm["metadata"]["namespace"] == job["metadata"]["namespace"] == ns
    assert cm["data"] == {f"launch-{pool.name}.sh": render_node_script(stack, pool, "pytorchjob")}
    specs = job["spec"]["pytorchReplicaSpecs"]
    assert specs["Master"]["replicas"] == 1
    assert sum(r["replicas"] for r in specs.values()) == pool.nodes
    assert ("Worker" in specs) == (pool.nodes > 1)
    assert job["spec"]["nprocPerNode"] == str(pool.procs_per_node)
    for rs in specs.values():
        pod = rs["template"]["spec"]
        (c,) = pod["containers"]
        assert c["name"] == "pytorch"  # the training operator's container name
        assert c["image"] == stack.image
        want = {pool.device.device_resource: pool.instance.chips}
        if pool.efa:
            want["vpc.amazonaws.com/efa"] = pool.instance.efa_interfaces
        limits, requests = c["resources"]["limits"], c["resources"]["requests"]
        assert {k: limits[k] for k in want} == want == {k: requests[k] for k in want}
        assert "cpu" not in limits and requests["cpu"]  # tests/render/test_pods.py: sizes
        assert {
            "name": "pytorchjob-port",
            "containerPort": stack.spec.workload.rdzv_port,
            "protocol": "TCP",
        } in c["ports"]
        taint = pool.device.taint
        assert taint is not None
        assert pod["tolerations"] == [
            {"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect}
        ]
        assert pod["nodeSelector"] == {"accelstack.io/pool": pool.name}
        # every EKS training pod runs as the service account bound to the training role
        # (checkpoint prefix, plus the compile cache on Neuron pools): GPU pods included
        assert pod["serviceAccountName"] == training_service_account(stack)
        vols = {v["name"]: v for v in pod["volumes"]}
        assert vols["dshm"]["emptyDir"] == {"medium": "Memory"}
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        assert mounts["dshm"] == "/dev/shm"
        if stack.spec.storage.fsx_lustre_gib:
            assert vols["fsx"]["persistentVolumeClaim"]["claimName"] == fsx_claim_name(stack)
        else:
            assert "fsx" not in vols


@pytest.mark.parametrize("preset", ["trn1-multinode", "trn1-finetune", "llama3-70b-p5"])
def test_indexed_job_matches_catalog(preset: str) -> None:
    stack = preset_stack(preset)
    pool = stack.workload_pool
    docs = {d["kind"]: d for d in _docs(render_manifest(stack, "job"))}
    job, svc = docs["Job"], docs["Service"]
    assert job["spec"]["completionMode"] == "Indexed"
    assert job["spec"]["completions"] == job["spec"]["parallelism"] == pool.nodes
    pod = job["spec"]["template"]["spec"]
    assert pod["subdomain"] == svc["metadata"]["name"]
    assert svc["spec"]["clusterIP"] == "None"
    env = {e["name"]: e for e in pod["containers"][0]["env"]}
    assert env["ACCELSTACK_NNODES"]["value"] == str(pool.nodes)
    assert env["ACCELSTACK_NODE_RANK"]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    )
    assert env["ACCELSTACK_HEAD_ADDR"]["value"].startswith(f"{job['metadata']['name']}-0.")
    limits = pod["containers"][0]["resources"]["limits"]
    assert ("vpc.amazonaws.com/efa" in limits) == (pool.efa_interfaces > 0)


def test_service_account_and_claim_match_the_plan() -> None:
    """The components bind the compile-cache role to the account the pods run as, create that
    ServiceAccount, and create the FSx claim the pods mount (read from the real plan)."""

    stack = preset_stack("llama3-70b-trn2")
    plan = plan_stack(stack)
    by_type: dict[str, list[dict[str, Any]]] = {}
    for r in plan.resources:
        by_type.setdefault(r.type, []).append(r.inputs)
    (assoc,) = by_type["aws:eks/podIdentityAssociation:PodIdentityAssociation"]
    assert assoc["serviceAccount"] == training_service_account(stack)
    accounts = [sa["metadata"]["name"] for sa in by_type["kubernetes:core/v1:ServiceAccount"]]
    assert training_service_account(stack) in accounts
    claims = by_type["kubernetes:core/v1:PersistentVolumeClaim"]
    assert [c["metadata"]["name"] for c in claims] == [fsx_claim_name(stack)]


def test_yamlstr_round_trips_hostile_strings() -> None:
    for s in [
        "plain",
        "a: b",
        "- x",
        "#c",
        "'q'",
        '"d"',
        "\\",
        "tab\there",
        "nl\nx",
        "\x85",
        "\u2028",
        "\ufeff",
        "\x7f",
        "é😀",
        "${X}",
        "null",
        "yes",
        "0x10",
        "[1]",
    ]:
        assert yaml.safe_load(f"k: {yamlstr(s)}") == {"k": s}


def _escaped_one_by_one(text: str) -> str:
    """yamlstr's rule spelled out character by character: the JSON literal, every BMP
    character outside printable ASCII as \\uXXXX."""
    return "".join(
        ch if 0x20 <= ord(ch) < 0x7F or ord(ch) > 0xFFFF else f"\\u{ord(ch):04x}"
        for ch in json.dumps(text, ensure_ascii=False)
    )


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.text(alphabet=st.characters(exclude_characters="\x00")))
def test_yamlstr_escapes_each_character_by_the_rule(text: str) -> None:
    """The printable-ASCII shortcut (a node script in a ConfigMap) writes what the rule does."""
    assert yamlstr(text) == _escaped_one_by_one(text)
    assert yamlstr(text * 50 + "plain ascii") == _escaped_one_by_one(text * 50 + "plain ascii")


# ---- counts come from the catalog -----------------------------------------------------------


def test_counts_follow_the_catalog() -> None:
    """Change a type's facts in the catalog: nproc, EFA and device counts follow."""
    cat = load_catalog()
    inst = cat.instances["trn1.32xlarge"]
    fake = inst.model_copy(update={"chips": 12, "efa_interfaces": 5})
    cat2 = cat.model_copy(update={"instances": {**cat.instances, "trn1.32xlarge": fake}})
    stack = resolve(load_spec(STACKS / "trn1-multinode.yaml"), cat2)
    script = render_node_script(stack, None, "auto")
    assert f"--nproc_per_node={12 * inst.physical_cores_per_chip}" in script
    assert "# EFA: 5 interfaces" in script
    (job,) = [d for d in _docs(render_manifest(stack, "pytorchjob")) if d["kind"] == "PyTorchJob"]
    pod = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    limits = pod["containers"][0]["resources"]["limits"]
    assert (limits["aws.amazon.com/neuron"], limits["vpc.amazonaws.com/efa"]) == (12, 5)


def test_templates_hold_no_catalog_numbers() -> None:
    """No template mentions a count the catalog knows for an accelerated type (counts of 4
    and more: 1 and 2 collide with shell idioms such as `>&2` and `exit 2`)."""
    import re

    cat = load_catalog()
    facts = {
        str(n)
        for i in cat.instances.values()
        if i.accelerated
        for n in (i.chips, i.efa_interfaces, cat.neuron_cores(i.name))
        if n >= 4
    }
    allowed = {"MALLOC_ARENA_MAX=64"}  # a glibc tuning value, not an instance fact
    for t in (ROOT / "templates").glob("*.j2"):
        for line in t.read_text().splitlines():
            if any(a in line for a in allowed):
                continue
            text = re.sub(r"\{%.*?%\}", "", line)  # Jinja statements (indent widths) are layout
            for number in re.findall(r"(?<![\w.$-])\d+(?![\w.])", text):
                assert number not in facts, f"{t.name}: literal {number} in {line!r}"


@pytest.mark.parametrize("preset", preset_ids())
def test_script_counts(preset: str, tmp_path: Path) -> None:
    stack = preset_stack(preset)
    pool = stack.workload_pool
    script = render_node_script(stack, None, "standalone", bucket="cache-bucket")
    assert f"--nproc_per_node={pool.procs_per_node}\n" in script
    assert ("FI_PROVIDER=efa" in script) == pool.efa
    fw = pool.framework
    assert fw is not None
    s3_cache = pool.compile_cache and fw.compile_cache == "s3"  # the XLA path only
    assert ("NEURON_COMPILE_CACHE_URL" in script) == s3_cache
    if s3_cache:
        url = stack.compile_cache_url(pool.name, "cache-bucket")
        assert f"cache_url_default={url}" in script
        assert "--cache_dir=" not in script
    # the native path: a directory cache, never an s3:// URL
    assert ("export TORCH_NEURONX_NEFF_CACHE_DIR=" in script) == (fw.compile_cache == "filesystem")
    assert ("neuron_parallel_compile" in script) == bool(
        fw.precompile and stack.spec.workload.precompile_steps
    )
    assert "XLA_DOWNCAST_BF16=" not in script  # deprecated after SDK 2.24
    assert f"export ACCELSTACK_DIST_BACKEND={fw.dist_backend}  #" in script


# ---- orchestrator detection (run with a fake torchrun that dumps its argv) -----------------


def _neuron_script(**kw: Any) -> str:
    return render_node_script(
        preset_stack("trn1-multinode"), None, "auto", bucket="cache-bucket", **kw
    )


def test_pytorchjob_env(tmp_path: Path) -> None:
    proc, dump = run_script(
        _neuron_script(),
        tmp_path,
        {
            "MASTER_ADDR": "trn1-multinode-master-0",
            "MASTER_PORT": "23456",
            "PET_NNODES": "4",
            "PET_NODE_RANK": "2",
            "WORLD_SIZE": "128",
            "RANK": "2",
        },
    )
    assert proc.returncode == 0, proc.stderr
    assert dump is not None
    opts = torchrun_opts(dump["argv"])
    assert opts["nnodes"] == "4" and opts["node_rank"] == "2"
    assert opts["rdzv_endpoint"] == "trn1-multinode-master-0:23456"
    assert opts["rdzv_backend"] == "c10d" and opts["nproc_per_node"] == "32"
    # older operators: WORLD_SIZE = pods, RANK = pod rank
    proc, dump = run_script(
        _neuron_script(),
        tmp_path,
        {"MASTER_ADDR": "m", "MASTER_PORT": "23456", "WORLD_SIZE": "4", "RANK": "3"},
    )
    assert proc.returncode == 0, proc.stderr
    assert dump is not None
    assert torchrun_opts(dump["argv"])["node_rank"] == "3"


def test_slurm_env(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scontrol = bin_dir / "scontrol"
    scontrol.write_text(
        '#!/usr/bin/env bash\n[[ "$1 $2 $3" == "show hostnames trn[3-6]" ]]\n'
        'printf "trn3\\ntrn4\\ntrn5\\ntrn6\\n"\n'
    )
    scontrol.chmod(0o755)
    import os

    proc, dump = run_script(
        _neuron_script(),
        tmp_path,
        {
            "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "SLURM_JOB_ID": "77",
            "SLURM_NNODES": "4",
            "SLURM_NODEID": "1",
            "SLURM_JOB_NODELIST": "trn[3-6]",
        },
    )
    assert proc.returncode == 0, proc.stderr
    assert dump is not None
    opts = torchrun_opts(dump["argv"])
    assert (opts["nnodes"], opts["node_rank"]) == ("4", "1")
    assert opts["rdzv_endpoint"] == "trn3:29500" and opts["rdzv_id"] == "77"


def test_standalone_env(tmp_path: Path) -> None:
    proc, dump = run_script(
        _neuron_script(),
        tmp_path,
        {"ACCELSTACK_NNODES": "4", "ACCELSTACK_NODE_RANK": "0", "ACCELSTACK_HEAD_ADDR": "10.0.0.5"},
    )
    assert proc.returncode == 0, proc.stderr
    assert dump is not None
    opts = torchrun_opts(dump["argv"])
    assert opts["rdzv_endpoint"] == "10.0.0.5:29500" and opts["nnodes"] == "4"


def test_no_orchestrator_fails_clearly(tmp_path: Path) -> None:
    proc, dump = run_script(_neuron_script(), tmp_path, {})
    assert proc.returncode == 2 and dump is None
    assert "cannot tell where this node sits in the job" in proc.stderr


def test_bad_rank_fails(tmp_path: Path) -> None:
    proc, _ = run_script(
        _neuron_script(),
        tmp_path,
        {"ACCELSTACK_NNODES": "2", "ACCELSTACK_NODE_RANK": "2", "ACCELSTACK_HEAD_ADDR": "h"},
    )
    assert proc.returncode == 2 and "not below the node count" in proc.stderr


def test_missing_cache_bucket_fails_clearly(tmp_path: Path) -> None:
    script = render_node_script(preset_stack("trn1-multinode"), None, "standalone")
    env = {"ACCELSTACK_NNODES": "1"}
    proc, dump = run_script(script, tmp_path, env)
    assert proc.returncode != 0 and dump is None
    assert "ACCELSTACK_COMPILE_CACHE_URL" in proc.stderr
    env["ACCELSTACK_COMPILE_CACHE_URL"] = "s3://b/p/"
    env["ACCELSTACK_ARGV_ENV"] = "NEURON_COMPILE_CACHE_URL"
    proc, dump = run_script(script, tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    assert dump is not None and dump["env"] == {"NEURON_COMPILE_CACHE_URL": "s3://b/p/"}


def test_existing_bucket_in_spec_is_the_default() -> None:
    stack = variant("trn1-multinode", compile_cache={"bucket": "team-cache", "prefix": "nc/"})
    script = render_node_script(stack, None, "auto")
    assert "cache_url_default=s3://team-cache/nc/trn1/" in script


def test_local_override_is_marked_and_production_value_kept() -> None:
    stack = preset_stack("llama3-70b-trn2")
    local = render_node_script(stack, None, "standalone", procs_per_node_override=2)
    assert "--nproc_per_node=2\n" in local and "LOCAL TESTING RENDER" in local
    assert "--nproc_per_node=64\n" in render_node_script(stack, None, "standalone")


def test_render_errors() -> None:
    # a leading '-' entrypoint and reserved env names are spec rules (tests/resolve/test_spec_rules.py)
    with pytest.raises(AccelstackError, match="NUL"):
        render_node_script(unchecked_variant("trn1-multinode", args=("a\x00b",)))
    with pytest.raises(AccelstackError, match="not one of"):
        render_node_script(preset_stack("trn1-multinode"), None, "k8s")
    with pytest.raises(AccelstackError, match="no pool"):
        render_node_script(preset_stack("trn1-multinode"), "nope")


def test_sbatch_only_when_asked() -> None:
    stack = standalone_variant("trn1-multinode", standalone={"install_slurm": True})
    paths = [a.path for a in render(stack)]
    assert paths == ["launch-trn1.sh", "train.sbatch", "README.md"]
    assert "#SBATCH --nodes=4" in render_sbatch(stack)
    plain = standalone_variant("trn1-multinode")
    assert [a.path for a in render(plain)] == ["launch-trn1.sh", "README.md"]
    script = render(plain)[0].content
    assert 'orchestrator="${ACCELSTACK_ORCHESTRATOR:-standalone}"' in script


def test_no_secrets_in_rendered_files() -> None:
    import re

    for _, _, arts in RENDERS:
        for a in arts:
            assert not re.search(
                r"AKIA[0-9A-Z]{16}|aws_secret_access_key|BEGIN .*PRIVATE KEY", a.content, re.I
            ), a.path


# ---- CLI -------------------------------------------------------------------------------------


def test_cli_render_writes_artifacts_and_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    rc = main(
        ["render", str(STACKS / "trn1-multinode.yaml"), "-o", str(out), "--bucket", "my-cache"]
    )
    assert rc == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        ".accelstack-render.json",  # render's manifest (tests/cli/test_boundary_io.py)
        "README.md",
        "fabric-test.yaml",  # 4 nodes with EFA: the fabric acceptance job
        "job.yaml",
        "launch-trn1.sh",
        "trainjob.yaml",  # the stack installs Kubeflow Trainer: no PyTorchJob unless chosen
    ]
    names.remove(".accelstack-render.json")
    index = (out / "README.md").read_text()
    for n in names:
        assert f"`{n}`" in index
    assert "**`xla` is in maintenance**" in index
    script = out / "launch-trn1.sh"
    assert script.stat().st_mode & 0o111
    assert "s3://my-cache/neuron-cache/trn1/" in script.read_text()
    assert "wrote 5 files" in capsys.readouterr().out
    assert index.index("`trainjob.yaml`") < index.index("`job.yaml`")


def test_cli_render_bad_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nregion: [\n")
    rc = main(["render", str(bad), "-o", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and err.startswith("error: ")
    assert not (tmp_path / "o").exists()
    rc = main(
        [
            "render",
            str(STACKS / "trn1-multinode.yaml"),
            "-o",
            str(tmp_path / "o"),
            "--bucket",
            "Bad_Bucket",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "--bucket" in err and len(err.strip().splitlines()) == 1


# ---- XLA pre-compile: one-shot, its own arguments ------------------------------------------


def test_precompile_runs_once_with_its_own_args(tmp_path: Path) -> None:
    import os

    stack = variant("trn1-multinode", wl_precompile_args=["--compile-only", "it's $(x)"])
    script = render_node_script(stack, None, "standalone", bucket="b")
    state = tmp_path / "state"
    env = {
        "ACCELSTACK_ORCHESTRATOR": "standalone",
        "ACCELSTACK_NNODES": "1",
        "ACCELSTACK_RDZV_ID": "job-7",
        "ACCELSTACK_SKIP_PRECOMPILE": "0",
        "ACCELSTACK_SHIM_DIR": str(tmp_path),
        "ACCELSTACK_STATE_DIR": str(state),
        "PATH": f"{ROOT / 'tests' / 'shims' / 'neuron'}{os.pathsep}{os.environ['PATH']}",
    }
    proc, dump = run_script(script, tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    (start,) = tmp_path.glob("neuron_parallel_compile.*.start")
    pre_argv = start.read_text().splitlines()[1:]
    assert pre_argv[-2:] == ["--compile-only", "it's $(x)"]  # appended in this phase only
    key = precompile_key(stack, stack.workload_pool)
    assert f"--rdzv_id=job-7-precompile-{key}" in pre_argv
    assert (state / f"precompiled-job-7-{key}-n1").exists()
    assert dump is not None and "--compile-only" not in dump["argv"]  # training: without them
    # a restarted worker of the same job goes straight to the training rendezvous
    proc, dump = run_script(script, tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    assert len(list(tmp_path.glob("neuron_parallel_compile.*.start"))) == 1
    assert "pre-compile already done for job-7" in proc.stderr
    assert dump is not None and "--rdzv_id=job-7" in dump["argv"]


def test_precompile_state_survives_container_restarts_in_pods() -> None:
    for kind in ("pytorchjob", "job"):
        text = render_manifest(preset_stack("trn1-multinode"), kind, bucket="b")
        docs = [d for d in yaml.safe_load_all(text) if d and d["kind"] in ("PyTorchJob", "Job")]
        (doc,) = docs
        specs = (
            [r["template"]["spec"] for r in doc["spec"]["pytorchReplicaSpecs"].values()]
            if kind == "pytorchjob"
            else [doc["spec"]["template"]["spec"]]
        )
        for spec in specs:
            # a node directory: kept across container restarts and pod replacements on the node
            state = {"path": "/var/tmp/accelstack/trn1-multinode", "type": "DirectoryOrCreate"}
            assert {"name": "state", "hostPath": state} in spec["volumes"]
            mounts = spec["containers"][0]["volumeMounts"]
            assert {"name": "state", "mountPath": "/var/tmp/accelstack"} in mounts
