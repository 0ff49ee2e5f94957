"""Spec helpers that more than one command uses (`new`, `init`, `validate`, `plan`, `check`):
preset lookup, the stack name rule, the files a new stack is written as, and the retargeted spec
resolved. Command modules import these, never each other."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from accelstack.errors import Problem, SpecError

if TYPE_CHECKING:
    from accelstack.catalog import Catalog
    from accelstack.resolve import Stack
    from accelstack.resolve.retarget import Retargeted
    from accelstack.spec.models import Spec


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


def source_spec(path: Path, catalog: Catalog) -> Spec:
    """The spec a new stack is cloned from (`new`, `init`): it must pass the spec rules as
    written (`check_written`); the clone is judged whole after the retarget
    (`resolved_target`)."""
    from accelstack.resolve import check_written, resolve_unchecked
    from accelstack.spec import load_spec

    spec = load_spec(path)
    problems = check_written(resolve_unchecked(spec, catalog))
    if problems:
        raise SpecError(problems)
    return spec


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
    """The retargeted spec resolved, so every rule judges it before anything is written: the
    spec rules, then the rules on the resolved stack (names, buckets, tags, addresses, memory
    fit), as `resolve` runs them. Every problem says the retarget caused it; with `nodes_flag`
    (`new`), the workload pool's nodes problem of the stack rules also names the --nodes that
    fits (the stack's own memory fit, which the rule reads)."""
    from accelstack.resolve import check_spec, check_stack, resolve_unchecked

    stack = resolve_unchecked(result.spec, catalog)
    spec_problems = check_spec(stack)
    if spec_problems:
        raise SpecError([_retargeted(p) for p in spec_problems])
    problems = check_stack(stack)
    if not problems:
        return stack
    pool, fit = stack.workload_pool, stack.workload_memory_fit
    hint = ""
    if nodes_flag and fit is not None and not fit.fits(pool.nodes):
        hint = f" (accelstack new: use --nodes {fit.min_nodes} or more)"
    raise SpecError(
        [_retargeted(p, hint if p.path == f"{pool.at}.nodes" else "") for p in problems]
    )


def _retargeted(p: Problem, extra: str = "") -> Problem:
    return Problem(p.file, p.path, f"cannot retarget: {p.message}{extra}")
