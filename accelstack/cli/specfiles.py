"""Spec helpers that more than one command uses (`new`, `init`, `validate`, `plan`, `check`):
preset lookup, the stack name rule, the files a new stack is written as, the warnings on a valid
spec, and the retargeted spec resolved. Command modules import these, never each other."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from accelstack.clock import today
from accelstack.errors import Problem, SpecError

if TYPE_CHECKING:
    from accelstack.catalog import Catalog
    from accelstack.resolve import Stack
    from accelstack.spec.models import Spec
    from accelstack.spec.retarget import Retargeted


#: The presets shipped inside the package (a link to the repository's stacks/ in a checkout,
#: package data in the wheel), so `new --from NAME` works from any directory.
BUNDLED_PRESETS = Path(__file__).resolve().parents[1] / "presets"


def preset_path(preset: str, stacks_dir: Path) -> Path:
    """A path (ends in .yaml/.yml or exists) as given; else NAME in the project's stacks/,
    then among the bundled presets."""
    p = Path(preset)
    if p.suffix in (".yaml", ".yml") or p.exists():
        return p
    for where in (stacks_dir, BUNDLED_PRESETS):
        candidate = where / f"{preset}.yaml"
        if candidate.is_file():
            return candidate
    from accelstack.errors import did_you_mean, shown

    names = sorted({x.stem for d in (stacks_dir, BUNDLED_PRESETS) for x in d.glob("*.yaml")})
    raise SpecError(
        [
            Problem(
                "--from",
                "",
                f"no preset {shown(preset)} in {stacks_dir}/ or the bundled presets"
                f"{did_you_mean(preset, names)} (presets: {', '.join(names)})",
            )
        ]
    )


def _origin(src: Path) -> str:
    """How the header names the source: a bundled preset by name, a file by its path."""
    if src.parent == BUNDLED_PRESETS:
        return f"the bundled preset {src.stem}"
    return src.as_posix()


def _pool_notes(spec: Spec, catalog: Catalog) -> list[str]:
    """Warnings on estimated catalog facts behind the spec's pools."""
    notes = []
    for pool in spec.pools:
        inst = catalog.instance(pool.instance_type)
        if inst.preview:
            notes.append(
                f"{pool.name}: {inst.name} is a preview type; estimated fields: "
                f"{', '.join(inst.estimated_fields)}"
            )
        if inst.name in catalog.regions[spec.region].estimated_types:
            notes.append(
                f"{pool.name}: the offering of {inst.name} in {spec.region} is an "
                "estimate; run `accelstack preflight`"
            )
    return notes


def _kubernetes_notes(spec: Spec, catalog: Catalog) -> list[str]:
    """A warning when the EKS control plane bills the extended-support rate."""
    k8s = spec.cluster.kubernetes_version or catalog.defaults.kubernetes_version
    window = catalog.defaults.eks_versions[k8s]
    if spec.orchestration == "eks" and window.status(today()) == "extended":
        return [
            f"Kubernetes {k8s} left EKS standard support on "
            f"{window.standard_support_end}: the control plane bills the "
            "extended-support rate; upgrade cluster.kubernetes_version"
        ]
    return []


def _batch_notes(stack: Stack) -> list[str]:
    """A warning when the global batch cannot give every data-parallel rank one sequence
    (the resolved workload pool's chips)."""
    from accelstack.cost.estimate import batch_warning

    pool = stack.workload_pool
    chips = pool.nodes * pool.accelerators_per_node
    warning = batch_warning(stack.workload, chips) if chips > 0 else None
    return [f"workload.global_batch_size: {warning}"] if warning else []


def spec_warnings(spec: Spec, catalog: Catalog, stack: Stack) -> list[str]:
    """What `validate` (and `check`, `plan`) warn about a valid spec: preview types,
    estimated offerings, extended-support Kubernetes, a global batch that cannot give every
    data-parallel rank a sequence, and placeholder values (documentation ranges, example
    accounts) that `pulumi up` refuses. `stack`: `spec` resolved."""
    from accelstack.spec.placeholders import spec_placeholders

    placeholders = [
        f"placeholder {line} (`pulumi up` refuses it)" for line in spec_placeholders(spec)
    ]
    return [
        *_pool_notes(spec, catalog),
        *_kubernetes_notes(spec, catalog),
        *_batch_notes(stack),
        *placeholders,
    ]


def schema_text() -> str:
    from accelstack.spec import json_schema

    return json.dumps(json_schema(), indent=2, sort_keys=True, allow_nan=False) + "\n"


def check_name(name: str) -> None:
    from accelstack.spec import NAME_RE

    if not re.fullmatch(NAME_RE, name):
        raise SpecError(
            [
                Problem(
                    "NAME",
                    "",
                    f"'{name}' must be 3-40 lowercase letters, digits "
                    "and '-', starting with a letter",
                )
            ]
        )


def spec_file_text(src: Path, result: Retargeted, command: str = "new") -> str:
    """The spec file: a header (schema for editors, origin, the retarget's notes, the carried
    Neuron settings) + the YAML with the source's comments."""
    from accelstack.spec.roundtrip import dump_with_header

    header = [
        f"# Cloned from {_origin(src)} by `accelstack {command}`.",
        *[f"# - {n}" for n in result.notes],
    ]
    return dump_with_header(result.data, header, result.stash)


def stack_config_text(name: str, region: str, existing: Path | None = None) -> str:
    """Pulumi.NAME.yaml: the stack's region and the spec it deploys; over an `existing` stack
    file, merged into it (every other key, comment and secure value kept: stackconfig)."""
    import yaml

    config = {"aws:region": region, "accelstack:spec": f"stacks/{name}.yaml"}
    if existing is not None and existing.exists():
        from accelstack.stackconfig import stack_config_merged

        return stack_config_merged(existing, config)
    return yaml.safe_dump({"config": config}, sort_keys=False)


def resolved_target(result: Retargeted, catalog: Catalog, nodes_flag: bool = False) -> Stack:
    """The retargeted spec resolved, so the rules on the resolved stack (names, buckets, tags,
    addresses, memory fit) judge it before anything is written. Every problem says the
    retarget caused it; with `nodes_flag` (`new`), the workload pool's nodes problem also
    names the --nodes that fits (the stack's own memory fit, which the rule reads)."""
    from accelstack.resolve import check_stack, resolve_unchecked

    stack = resolve_unchecked(result.spec, catalog)  # then the rules, as `resolve` runs them
    problems = check_stack(stack)
    if not problems:
        return stack
    pool, fit = stack.workload_pool, stack.workload_memory_fit
    nodes_at = f"pools[{stack.pools.index(pool)}].nodes"
    hint = ""
    if nodes_flag and fit is not None and not fit.fits(pool.nodes):
        hint = f" (accelstack new: use --nodes {fit.min_nodes} or more)"

    def retargeted(p: Problem) -> Problem:
        extra = hint if p.path == nodes_at else ""
        return Problem(p.file, p.path, f"cannot retarget: {p.message}{extra}")

    raise SpecError([retargeted(p) for p in problems])
