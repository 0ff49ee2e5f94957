"""`render --registry` (and `trial --registry`): a stack with a pull-through cache rule has its
jobs pull public.ecr.aws images through the cache in its private registry
(`<account>.dkr.ecr.<region>.amazonaws.com/<prefix>/<repository>:<tag>`,
https://docs.aws.amazon.com/AmazonECR/latest/userguide/pull-through-cache-working.html), not
through the NAT gateway; other registries' images are pulled as written, with one line saying
why; a malformed host, another region or a stack without a cache rule is refused."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.cli import main
from accelstack.errors import SpecError
from accelstack.inventory import registry_cache_rules
from accelstack.render import render, render_warnings
from accelstack.render.pods import precompile_key
from accelstack.render.registry import image_cache
from accelstack.render.trial import render_trial
from accelstack.resolve import Stack

from ..catalog.test_scale import STACKS, sized, stack_of
from ..helpers_admission import admission_problems
from ..helpers_plan import plan_stack

ACCOUNT = "123456789012"
UPSTREAM = "public.ecr.aws/"


def registry(stack: Stack) -> str:
    return f"{ACCOUNT}.dkr.ecr.{stack.region}.amazonaws.com"


@cache
def p5(image: str | None = None) -> Stack:
    """64 p5 nodes: NAT-bound, so the created VPC has the cache rule (scale.yaml image_delivery)."""
    data = sized("llama3-405b-p5", 64)
    if image:
        data["workload"]["image"] = image
    return stack_of(data)


@cache
def trn1_pytorchjob() -> Stack:
    data = sized("trn1-multinode", 32)
    data["jobs"] = {**data.get("jobs", {}), "controller": "pytorchjob"}
    return stack_of(data)


def cached_prefix(stack: Stack) -> str:
    """The cache path of public.ecr.aws: the stack's own rule (inventory/naming), as the
    `imageCache` output has it."""
    (rule,) = registry_cache_rules(stack)
    assert rule.upstream_url == "public.ecr.aws"
    return f"{registry(stack)}/{rule.prefix}/"


def pod_images(text: str) -> list[str]:
    out: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "containers":
                    out.extend(c["image"] for c in value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    for doc in yaml.safe_load_all(text):
        walk(doc)
    return out


def rendered(stack: Stack) -> dict[str, str]:
    arts = render(stack, None, image_cache(stack, registry(stack)))
    return {a.path: a.content for a in arts}


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_trainjob_job_and_fabric_test_pull_through_the_cache_keeping_path_and_tag() -> None:
    stack = p5()
    files = rendered(stack)
    prefix = cached_prefix(stack)
    assert stack.image.startswith(UPSTREAM)
    want = prefix + stack.image.removeprefix(UPSTREAM)
    for name in ("trainjob.yaml", "job.yaml"):
        images = pod_images(files[name])
        assert images and set(images) == {want}, name
        assert admission_problems(files[name]) == [], name
    fabric = pod_images(files["fabric-test.yaml"])
    assert fabric and all(i.startswith(prefix + "hpc-cloud/nccl-tests:") for i in fabric)
    index = files["README.md"]
    assert f"- `trainjob.yaml`: `{want}`" in index
    assert f"- `fabric-test.yaml`: `{fabric[0]}`" in index
    pulled = [i for n, t in files.items() if n.endswith(".yaml") for i in pod_images(t)]
    assert pulled and not [i for i in pulled if i.startswith(UPSTREAM)]


def test_a_pytorchjob_pulls_through_the_cache() -> None:
    stack = trn1_pytorchjob()
    files = rendered(stack)
    (image,) = set(pod_images(files["pytorchjob.yaml"]))
    assert image == cached_prefix(stack) + stack.image.removeprefix(UPSTREAM)


def test_the_trial_manifest_pulls_through_the_cache() -> None:
    stack = p5()
    arts = render_trial(stack, 5, nodes=1, cache=image_cache(stack, registry(stack)))
    (manifest,) = [a for a in arts if a.path.endswith(".yaml")]
    (image,) = set(pod_images(manifest.content))
    assert image == cached_prefix(stack) + stack.image.removeprefix(UPSTREAM)
    (readme,) = [a.content for a in arts if a.path == "README.md"]
    assert f"- `{manifest.path}`: `{image}`" in readme


def test_the_trial_cli_says_which_image_is_pulled_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "llama3-405b-p5.yaml"  # the file name is the stack name
    data = sized("llama3-405b-p5", 64)
    data["workload"]["image"] = "nvcr.io/nvidia/pytorch:25.01-py3"
    spec.write_text(yaml.safe_dump(data))
    host = registry(p5())
    rc = main(["trial", str(spec), "-o", str(tmp_path / "t"), "--registry", host])
    out = capsys.readouterr().out
    (note,) = [line for line in out.splitlines() if "pulled as written" in line]
    assert note.startswith("warning: image nvcr.io/nvidia/pytorch:25.01-py3") and rc == 0
    manifest = (tmp_path / "t" / "trial-h100.yaml").read_text()
    assert set(pod_images(manifest)) == {"nvcr.io/nvidia/pytorch:25.01-py3"}


def test_a_digest_is_kept() -> None:
    stack = p5()
    cache_ = image_cache(stack, registry(stack))
    ref = "public.ecr.aws/team/train@sha256:" + "a" * 64
    assert cache_.pull(ref) == cached_prefix(stack) + "team/train@sha256:" + "a" * 64


@pytest.mark.parametrize(
    "image", ["nvcr.io/nvidia/pytorch:25.01-py3", "docker.io/library/python:3.12"]
)
def test_other_registries_are_pulled_as_written_with_one_line_saying_why(image: str) -> None:
    stack = p5(image)
    cache_ = image_cache(stack, registry(stack))
    files = rendered(stack)
    assert set(pod_images(files["trainjob.yaml"])) == {image}
    assert f"- `trainjob.yaml`: `{image}`" in files["README.md"]
    notes = [w for w in render_warnings(stack, cache_) if image in w]
    assert len(notes) == 1 and "pulled as written" in notes[0] and "\n" not in notes[0]
    # the fabric test's own image is on ECR Public: still through the cache
    assert all(i.startswith(cached_prefix(stack)) for i in pod_images(files["fabric-test.yaml"]))


@pytest.mark.parametrize(
    ("host", "why"),
    [
        ("evil.example.com", "not an ECR private registry host"),
        ("12345.dkr.ecr.us-east-2.amazonaws.com", "not an ECR private registry host"),
        ("public.ecr.aws", "not an ECR private registry host"),
        (f"{ACCOUNT}.dkr.ecr.us-east-2.amazonaws.com/extra", "not an ECR private registry host"),
        (f"{ACCOUNT}.dkr.ecr.eu-west-1.amazonaws.com", "is in eu-west-1"),
    ],
)
def test_a_bad_registry_is_refused_in_one_line(host: str, why: str) -> None:
    stack = p5()
    assert stack.region != "eu-west-1"
    with pytest.raises(SpecError) as err:
        image_cache(stack, host)
    assert why in str(err.value) and "\n" not in str(err.value)


def test_the_cli_refuses_a_stack_without_a_cache_rule_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "o"
    host = f"{ACCOUNT}.dkr.ecr.us-east-2.amazonaws.com"  # llama3-70b-p5: 16 nodes, us-east-2
    rc = main(["render", str(STACKS / "llama3-70b-p5.yaml"), "-o", str(out), "--registry", host])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "no pull-through cache rule" in err and not out.exists()
    rc = main(["render", str(STACKS / "llama3-70b-p5.yaml"), "-o", str(out), "--registry", "x"])
    err = capsys.readouterr().err
    assert rc == 2 and "--registry" in err and len(err.strip().splitlines()) == 1


def test_the_precompile_key_is_the_same_through_the_cache() -> None:
    """The cached image is the upstream image: rendering with --registry does not make the
    XLA path compile again (the pre-compile marker's key hashes the image's identity)."""
    stack = trn1_pytorchjob()
    cached = image_cache(stack, registry(stack)).apply(stack)
    assert cached.image != stack.image
    pool = stack.workload_pool
    assert precompile_key(cached, pool) == precompile_key(stack, pool)
    other = p5("nvcr.io/nvidia/pytorch:25.01-py3")
    assert precompile_key(other, other.workload_pool) != precompile_key(p5(), p5().workload_pool)


def test_the_rendered_path_is_the_planned_image_cache_output() -> None:
    """`--registry` with the host of the stack's `imageCache` output renders exactly
    `<imageCache["public.ecr.aws"]>/<repo>:<tag>`: render and the program agree on the prefix."""
    stack = p5()
    path = plan_stack(stack, guard=False).outputs["imageCache"]["public.ecr.aws"]
    host = path.split("/", 1)[0]
    files = {a.path: a.content for a in render(stack, None, image_cache(stack, host))}
    (image,) = set(pod_images(files["trainjob.yaml"]))
    assert image == f"{path}/{stack.image.removeprefix(UPSTREAM)}"
