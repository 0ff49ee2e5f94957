"""Which spec a Pulumi stack deploys and how its stack config changes it: the one reading shared
by the program (`components/entry.py`), `plan`/`check`/`price --stack`, `diff`, the CI
examples and the policy pack, so the gate sees every edit that changes a deploy.

A Pulumi stack `S` of the project (the folder holding `Pulumi.yaml`) deploys the spec named by
`accelstack:spec` in `Pulumi.S.yaml`, else `stacks/S.yaml`. Every `accelstack:` key the program
reads is listed in `KNOWN_KEYS`; an unknown one is refused with a "did you mean", so a typo can
never silently change nothing. `aws:region` must equal the spec's region.

The stacks of a project (`project_stacks`): one per `Pulumi.<stack>.yaml` beside `Pulumi.yaml`,
plus each spec in `stacks/` that no stack file of its own name configures (its own stack, not
created yet: planned with the AMI pins `accelstack amis pin` would write).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import yaml

from accelstack.errors import AccelstackError, Problem, SpecError, did_you_mean, shown
from accelstack.projectfile import (
    PROJECT_FILES,
    find_project_file,
    namespaced,
    read_project,
    regular_file,
)

if TYPE_CHECKING:
    from accelstack.catalog import Catalog
    from accelstack.resolve import Stack

SPEC_KEY = "accelstack:spec"
AMIS_KEY = "accelstack:amis"
ALLOW_KEY = "accelstack:allowUnpinnedAmis"
REGION_KEY = "aws:region"
#: Every `accelstack:` stack-config key the program reads (Pulumi.yaml declares them too).
KNOWN_KEYS = (SPEC_KEY, AMIS_KEY, ALLOW_KEY)
SPECS_DIR = "stacks"


@dataclass(frozen=True)
class StackRef:
    """One Pulumi stack: its name, the spec it deploys, and its stack config."""

    stack: str
    spec: Path  # the spec file (root / the pointer)
    root: Path  # the project folder (the program's working directory)
    config: Mapping[str, Any] = field(default_factory=dict)
    config_file: Path | None = None  # Pulumi.<stack>.yaml, None when the stack has none yet

    @property
    def label(self) -> str:
        where = self.config_file.name if self.config_file else "no stack config"
        return f"{self.stack} ({_rel(self.spec, self.root)}; {where})"

    def fingerprint(self) -> str:
        """Changes when anything the program reads for this stack changes: the spec, the
        whole stack file (config, `environment:` imports, secrets provider), the whole project
        file (`stackConfigDir`, `main`, project-level config defaults) and the effective
        config. The program inputs (every other file `pulumi up` can read or run), the
        catalog overlay and the ceiling are added by the gate
        (`accelstack.cli.stackrefs.deploy_fingerprint`)."""
        h = hashlib.sha256(self.stack.encode())
        for part in (self.spec, self.config_file, find_project_file(self.root)):
            h.update(b"\0" + (str(part.name).encode() if part is not None else b"-") + b"\0")
            h.update(part.read_bytes() if part is not None and part.is_file() else b"<none>")
        h.update(json.dumps(dict(self.config), sort_keys=True, default=str).encode())
        return h.hexdigest()


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def project_root(start: Path) -> Path:
    """The folder holding Pulumi.yaml: `start` or its parent (stacks/ sits inside); else `start`'s
    parent when `start` is a `stacks` folder, else `start`."""
    start = start.resolve()
    for folder in (start, start.parent):
        if find_project_file(folder) is not None:
            return folder
    return start.parent if start.name == SPECS_DIR else start


#: Provider settings a stack may set (source: pulumi-aws provider configuration reference,
#: https://www.pulumi.com/registry/packages/aws/installation-configuration/): the region, tags
#: added to every resource, and account guards that only narrow where it deploys.
PROVIDER_KEYS = (
    "aws:region",
    "aws:defaultTags",
    "aws:allowedAccountIds",
    "aws:forbiddenAccountIds",
)
#: The namespaces of the providers (and the engine) the program runs: any other key of these
#: redirects or weakens a provider (aws:endpoints, aws:assumeRoles, aws:skipCredentialsValidation,
#: aws:insecure, aws:httpProxy, kubernetes:kubeconfig, ...) and is refused.
PROVIDER_NAMESPACES = ("aws", "kubernetes", "pulumi")
#: Stack-file keys besides `config:` that change what a stack deploys and are refused:
#: `environment:` imports Pulumi ESC environments (config and credentials from outside the
#: repository, invisible to review).
REFUSED_STACK_KEYS = ("environment",)


def unknown_keys(config: Mapping[str, Any], file: str) -> list[Problem]:
    """One problem per `accelstack:` key the program does not read (with a did-you-mean), and
    per provider setting not on the allow-list (`PROVIDER_KEYS`)."""
    return _unknown_keys(config, file)


def _unknown_keys(config: Mapping[str, Any], file: str) -> list[Problem]:
    return (
        [
            Problem(
                file, f"config.{k}", "is not a key accelstack reads" + did_you_mean(k, KNOWN_KEYS)
            )
            for k in config
            if str(k).startswith("accelstack:") and k not in KNOWN_KEYS
        ]
        + _elsewhere(config, file)
        + provider_problems(config, file)
    )


def _elsewhere(config: Mapping[str, Any], file: str) -> list[Problem]:
    """A key the program reads, set in another namespace (`spec:` in a project not named
    accelstack is `<project>:spec`, which nothing reads): refused, never silently ignored."""
    names = {k.split(":", 1)[1]: k for k in KNOWN_KEYS}
    return [
        Problem(
            file,
            f"config.{k}",
            f"is read by nothing (the program reads {names[name]}); did you mean '{names[name]}'?",
        )
        for k in config
        for ns, _, name in [str(k).partition(":")]
        if name in names and ns != "accelstack" and ns not in PROVIDER_NAMESPACES
    ]


def _credentials(config: Mapping[str, Any], file: str) -> list[Problem]:
    """One problem per credential-looking stack-config value (Pulumi `secure:` values are
    ciphertext and pass): a stack file is committed, reviewed and posted like a spec."""
    from accelstack.spec.secrets import secret_findings

    plain = {
        str(k): v for k, v in config.items() if not (isinstance(v, dict) and set(v) == {"secure"})
    }
    return [Problem(file, path, msg) for path, msg in secret_findings(plain, "config")]


def provider_problems(config: Mapping[str, Any], file: str) -> list[Problem]:
    """One problem per provider setting outside the allow-list (it could send the provider
    to another endpoint, account or credential, or switch a check off, unseen by the plan)."""
    return [
        Problem(
            file,
            f"config.{k}",
            "is a provider setting the gate does not allow (it can redirect or weaken the "
            f"provider); allowed: {', '.join(PROVIDER_KEYS)}",
        )
        for k in config
        if str(k).split(":", 1)[0] in PROVIDER_NAMESPACES and k not in PROVIDER_KEYS
    ]


def read_stack_config(path: Path, project: str = "accelstack") -> dict[str, Any]:
    """The `config:` mapping of a Pulumi.<stack>.yaml ({} when absent), every key as Pulumi
    names it (a key with no namespace is the `project`'s: `projectfile.config_key`); one line
    per problem."""
    file = str(path)
    regular_file(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a UTF-8 BOM is stripped, as Pulumi does
        doc = (json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)) or {}
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SpecError([Problem(file, "", f"cannot be read as YAML: {first}")]) from None
    for key in REFUSED_STACK_KEYS:
        if isinstance(doc, dict) and key in doc:
            raise SpecError(
                [
                    Problem(
                        file,
                        key,
                        "imports Pulumi ESC environments (config and credentials from outside "
                        "the repository, unseen by review and the plan); allowed: config: only",
                    )
                ]
            )
    config = doc.get("config") if isinstance(doc, dict) else None
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise SpecError([Problem(file, "config", "must be a mapping of stack config keys")])
    config = namespaced(config, project, file)
    problems = _unknown_keys(config, file) + _credentials(config, file)
    spec = config.get(SPEC_KEY)
    if spec is not None and not isinstance(spec, str):
        problems.append(
            Problem(file, f"config.{SPEC_KEY}", f"must be a plain path, found {shown(spec)}")
        )
    if problems:
        raise SpecError(problems)
    return {str(k): v for k, v in config.items()}


def spec_pointer(
    config: Mapping[str, Any], stack: str, source: str, root: Path | None = None
) -> str:
    """The spec path a stack deploys: `accelstack:spec`, else stacks/<stack>.yaml. A path that
    leaves the project (through '..', or absolute outside `root`) is refused: the gate could
    not see the file it names."""
    named = config.get(SPEC_KEY) or f"{SPECS_DIR}/{stack}.yaml"
    if not isinstance(named, str):
        raise AccelstackError(f"{source}: config {SPEC_KEY} must be a path, found {shown(named)}")
    pure = PurePosixPath(named.replace("\\", "/"))
    inside = root is not None and Path(named).resolve().is_relative_to(root.resolve())
    if ".." in pure.parts or (pure.is_absolute() and not inside):
        raise AccelstackError(
            f"{source}: config {SPEC_KEY} is {shown(named)}; allowed: a path inside the project "
            "(relative, no '..'), so reviews and `accelstack diff` see the file it names"
        )
    return named if pure.is_absolute() else str(pure)


def _stack_file(root: Path, stack: str) -> Path:
    """Where Pulumi keeps the stack's config: Pulumi.<stack> with the project file's
    extension, in the project file's `stackConfigDir` (default: the project folder)."""
    project = read_project(root)
    return project.stack_folder(root) / f"Pulumi.{stack}{project.extension}"


def project_defaults(root: Path) -> dict[str, Any]:
    """The project file's config defaults (every stack gets them unless its file sets the key),
    keys as Pulumi names them; an `accelstack:` key the program does not read is refused, as
    in a stack file."""
    project = read_project(root)
    problems = _unknown_keys(project.defaults, str(project.path))
    if problems:
        raise SpecError(problems)
    return dict(project.defaults)


def stack_ref(root: Path, stack: str) -> StackRef:
    """The stack `stack` of the project at `root`: the project file's config defaults under
    its stack file's config (when the file exists), as Pulumi merges them."""
    file = _stack_file(root, stack)
    present = file.is_file() or file.is_symlink()
    name = read_project(root).name or "accelstack"
    config = {**project_defaults(root), **(read_stack_config(file, name) if present else {})}
    pointer = spec_pointer(config, stack, file.name, root)
    spec = root / pointer
    regular_file(spec, root)
    return StackRef(stack, spec, root, config, file if present else None)


def _stack_names(root: Path) -> list[str]:
    project = read_project(root)
    if project.path is None:
        return []
    ext = project.extension
    folder = project.stack_folder(root)
    return sorted(
        p.name[len("Pulumi.") : -len(ext)]
        for p in folder.glob(f"Pulumi.*{ext}")
        if (p.is_file() or p.is_symlink()) and p.name not in PROJECT_FILES
    )


def project_stacks(root: Path, specs: str = SPECS_DIR) -> list[StackRef]:
    """Every stack of the project: one per Pulumi.<stack>.yaml, plus each spec of `specs` with
    no stack file of its own name (its own stack, not created yet)."""
    refs = [stack_ref(root, s) for s in _stack_names(root)]
    named = {r.stack for r in refs}
    folder = root / specs
    files = sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]) if folder.is_dir() else []
    defaults = project_defaults(root)
    for f in files:
        if f.name.startswith("Pulumi.") or f.stem in named or not (f.is_file() or f.is_symlink()):
            continue
        if SPEC_KEY in defaults:  # the project default names the spec every stack deploys
            refs.append(stack_ref(root, f.stem))
        else:
            refs.append(StackRef(f.stem, f, root, defaults))
    return sorted(refs, key=lambda r: r.stack)


def ref_for_spec(spec: Path, stack: str | None = None) -> StackRef:
    """The stack a command on one spec file means: `--stack`, else the spec's own (its file
    name). Its Pulumi.<stack>.yaml is read when the project has one; it must deploy this spec."""
    root = project_root(spec.parent)
    name = stack or spec.stem
    file = _stack_file(root, name)
    defaults = project_defaults(root)
    if not (file.is_file() or file.is_symlink()) and SPEC_KEY not in defaults:
        own = {} if name == spec.stem else {SPEC_KEY: _rel(spec.resolve(), root)}
        return StackRef(name, spec, root, {**defaults, **own})
    ref = stack_ref(root, name)
    if ref.spec.resolve() != spec.resolve():
        raise AccelstackError(
            f"{file}: stack {shown(name)} deploys {_rel(ref.spec, root)}, not {spec}; "
            f"plan that file, or set config {SPEC_KEY} to {_rel(spec.resolve(), root)}"
        )
    return StackRef(name, spec, root, ref.config, ref.config_file)


def _allow_unpinned(value: Any, source: str) -> bool:
    if isinstance(value, bool) or value is None:
        return bool(value)
    if str(value).lower() in ("true", "false"):
        return str(value).lower() == "true"
    raise AccelstackError(f"{source}: config {ALLOW_KEY} must be true or false, found {value!r}")


def _pins(value: Any, source: str) -> dict[str, str]:
    if isinstance(value, str):  # the program reads objects as JSON text
        value = json.loads(value)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise AccelstackError(
            f"{source}: config {AMIS_KEY} must be a map of SSM parameter -> AMI id"
        )
    return {str(k): str(v) for k, v in value.items()}


def resolve_deployment(
    spec_file: str | Path,
    pulumi_stack: str,
    config: Mapping[str, Any],
    catalog: Catalog | None = None,
    *,
    source: str | None = None,
) -> Stack:
    """Exactly what the program deploys for `pulumi_stack` with stack `config` (full keys):
    the spec, the region check, the stack's resource-name prefix, and the AMI pins."""
    from accelstack.catalog import load_catalog
    from accelstack.resolve import check_region, deployment_name, named, resolve_written
    from accelstack.spec import load_spec

    catalog = catalog or load_catalog()
    source = source or f"Pulumi.{pulumi_stack}.yaml"
    written = resolve_written(load_spec(spec_file), catalog)
    check_region(written.spec, config.get(REGION_KEY))
    stack = named(written, deployment_name(written.spec.name, pulumi_stack))
    return stack.with_ami_pins(
        _pins(config.get(AMIS_KEY), source),
        allow_unpinned=_allow_unpinned(config.get(ALLOW_KEY), source),
        source=source,
    )


def awaits_pins(ref: StackRef) -> bool:
    """A stack file with no `accelstack:amis` yet (`accelstack amis pin` not run): offline it
    plans as if pinned, with a warning; the program refuses it before creating anything."""
    if ref.config_file is None or AMIS_KEY in ref.config:
        return False
    return not _allow_unpinned(ref.config.get(ALLOW_KEY), str(ref.config_file))


def ref_warnings(ref: StackRef) -> list[str]:
    """What the gate says about a stack's config besides its spec."""
    if ref.config_file is not None and awaits_pins(ref):
        spec = _rel(ref.spec.resolve(), ref.root.resolve())
        return [
            f"{ref.config_file.name}: no {AMIS_KEY} yet: planned as if pinned; `pulumi up` "
            f"refuses until `accelstack amis pin {spec} --stack {ref.stack}` records them"
        ]
    return []


def resolve_ref(ref: StackRef, catalog: Catalog | None = None) -> Stack:
    """The stack a ref deploys. A stack with no config file yet, or one that awaits its AMI
    pins, plans with the pins that `accelstack amis pin` would write (the plan engine
    simulates them); anything else resolves exactly as the program does."""
    if ref.config_file is not None and not awaits_pins(ref):
        return resolve_deployment(
            ref.spec, ref.stack, ref.config, catalog, source=str(ref.config_file)
        )
    from accelstack.catalog import load_catalog
    from accelstack.resolve import check_region, deployment_name, named, resolve_written
    from accelstack.spec import load_spec

    catalog = catalog or load_catalog()
    written = resolve_written(load_spec(ref.spec), catalog)
    check_region(written.spec, ref.config.get(REGION_KEY))
    return named(written, deployment_name(written.spec.name, ref.stack))


def stack_config_merged(path: Path, values: Mapping[str, Any]) -> str:
    """The text of `path` (a Pulumi.<stack>.yaml) with `config.<key>` set for each of `values`
    and nothing else touched: keys the writer does not own (`secure:` values, the
    `encryptionsalt` of the passphrase secrets provider, other providers' settings), comments
    and key order survive (round-trip YAML). A new file when `path` does not exist."""
    import io

    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.error import YAMLError

    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 4096  # never re-wrap a long line
    file = str(path)
    try:
        doc = y.load(path.read_text(encoding="utf-8")) if path.exists() else None
    except (OSError, UnicodeDecodeError, YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SpecError([Problem(file, "", f"cannot be read as YAML: {first}")]) from None
    if doc is None:
        doc = CommentedMap()
    if not isinstance(doc, dict):
        raise SpecError([Problem(file, "", f"must be a mapping, found {shown(doc)}")])
    config = doc.get("config")
    if config is None:
        config = doc["config"] = CommentedMap()
    if not isinstance(config, dict):
        raise SpecError([Problem(file, "config", "must be a mapping of stack config keys")])
    for key, value in values.items():
        config[key] = value
    out = io.StringIO()
    y.dump(doc, out)
    return out.getvalue()


def write_stack_config(path: Path, values: Mapping[str, Any]) -> None:
    """Merge `values` into the stack config at `path` (`stack_config_merged`), written
    atomically with the file's own mode (accelstack/files.py)."""
    from accelstack.files import write_text_atomic

    write_text_atomic(path, stack_config_merged(path, values))
