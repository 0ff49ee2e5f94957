"""The workload spec: one YAML file per stack (`stacks/NAME.yaml`), validated in two passes.

1. Shape: pydantic v2 models, unknown keys refused, ranges enforced.
2. Rules: cross-field checks against the catalog (instance types, EFA, offerings, prices,
   capacity reservations, compile cache, the workload's pool).

Every problem becomes one `Problem` line: file, YAML path, what was found, what is allowed.
`load_spec` raises `SpecError` with all of them; the CLI prints them and exits 2.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from accelstack.catalog import Catalog, PurchaseOption, load_catalog
from accelstack.clock import today
from accelstack.errors import CatalogError, Problem, SpecError, allowed, did_you_mean
from accelstack.sizing import memory_fit

NAME_RE = r"^[a-z][a-z0-9-]{1,38}[a-z0-9]$"
POOL_RE = r"^[a-z]([a-z0-9-]{0,22}[a-z0-9])?$"
RESERVATION_RE = r"^cr-[0-9a-f]{8,17}$"
BUCKET_RE = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"
ENV_NAME_RE = r"^[A-Za-z_][A-Za-z0-9_]*$"
#: Env var names that look like credentials are refused: secrets never go into rendered files.
SECRET_NAME_RE = re.compile(r"(SECRET|PASSWORD|PASSWD|TOKEN|CREDENTIAL|PRIVATE_KEY|API_KEY)", re.I)
OPEN_CIDRS = {"0.0.0.0/0", "::/0"}
#: Shell variables the rendered node script uses itself, and variables that change how bash
#: runs it: workload.env may not set them (it may override every exported setting, e.g.
#: NCCL_DEBUG).
RESERVED_ENV_NAMES = frozenset(
    {
        "orchestrator",
        "nnodes",
        "node_rank",
        "head_addr",
        "rdzv_port",
        "rdzv_id",
        "slurm_hosts",
        "is_host",
        "rdzv_timeout",
        "torchrun_bin",
        "torchrun_args",
        "entrypoint",
        "workload_args",
        "cache_url_default",
        "IFS",
        "BASH_ENV",
        "ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "PATH",
    }
)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


class Purchase(Strict):
    """How a pool's instances are bought."""

    option: PurchaseOption = Field(
        "on-demand",
        description="on-demand, spot, savings-plan-1y, savings-plan-3y, capacity-block "
        "(EC2 Capacity Block for ML) or reservation (on-demand capacity reservation)",
    )
    reservation_id: Annotated[str, Field(pattern=RESERVATION_RE)] | None = Field(
        None, description="cr-... id; required for capacity-block and reservation"
    )


class Pool(Strict):
    """One group of identical accelerator nodes."""

    name: str = Field(pattern=POOL_RE, description="pool name, used in resource names")
    instance_type: str = Field(description="an accelerated type from the catalog")
    nodes: int = Field(ge=1, le=512, description="node count")
    purchase: Purchase = Field(default_factory=Purchase, description="how nodes are bought")
    efa: bool | None = Field(None, description="EFA on/off; default on where the type has it")
    efa_interface_style: Literal["efa", "efa-only"] | None = Field(
        None,
        description="interface type on network cards 1..N-1: 'efa' (EFA + ENA) or "
        "'efa-only' (saves IP addresses); card 0 is always 'efa'",
    )
    root_volume_gib: int | None = Field(None, ge=50, le=16384, description="gp3 root volume")
    availability_zone: str | None = Field(
        None,
        description="zone name or id for this pool; default: the stack's, else the first "
        "zone the catalog says offers the type",
    )
    logical_cores: Literal[1, 2] | None = Field(
        None, description="Neuron logical NeuronCore config (LNC); default from the family"
    )
    compile_cache: bool | None = Field(
        None, description="use the stack's Neuron compile cache; default on for Neuron pools"
    )


class SystemNodes(Strict):
    """The small CPU node group that runs cluster add-ons (untainted)."""

    instance_type: str | None = Field(None, description="CPU type for cluster add-ons")
    nodes: int | None = Field(None, ge=1, le=20, description="system node count")
    root_volume_gib: int | None = Field(None, ge=20, le=2048, description="gp3 root volume")


class Cluster(Strict):
    """EKS control plane settings (orchestration: eks)."""

    kubernetes_version: str | None = Field(None, description="EKS Kubernetes version")
    endpoint_public_access: bool = Field(False, description="public API endpoint")
    public_access_cidrs: tuple[str, ...] = Field(
        (), description="CIDRs allowed to reach a public endpoint; 0.0.0.0/0 is refused"
    )
    admin_principal_arns: tuple[str, ...] = Field(
        (), description="IAM principals given cluster-admin through EKS access entries"
    )
    system_nodes: SystemNodes = Field(
        default_factory=SystemNodes, description="CPU node group for add-ons"
    )


class Standalone(Strict):
    """Settings for orchestration: ec2 (standalone instances on DLAMIs)."""

    ssh_key_name: str | None = Field(None, description="EC2 key pair; default none (SSM only)")
    ssh_cidrs: tuple[str, ...] = Field((), description="source CIDRs for SSH; needs ssh_key_name")
    install_slurm: bool = Field(False, description="also render an sbatch file")


class Network(Strict):
    """VPC: create one (private + public subnets, NAT) or use existing ids."""

    mode: Literal["create", "existing"] = Field("create", description="create a VPC or use one")
    vpc_cidr: str | None = Field(None, description="CIDR for a created VPC")
    vpc_id: str | None = Field(None, pattern=r"^vpc-[0-9a-f]{8,17}$", description="existing VPC")
    private_subnet_ids: tuple[Annotated[str, Field(pattern=r"^subnet-[0-9a-f]{8,17}$")], ...] = (
        Field((), description="existing private subnets (nodes go here)")
    )
    public_subnet_ids: tuple[Annotated[str, Field(pattern=r"^subnet-[0-9a-f]{8,17}$")], ...] = (
        Field((), description="existing public subnets (load balancers)")
    )
    single_nat_gateway: bool = Field(True, description="one NAT gateway instead of one per AZ")


class CompileCache(Strict):
    """Neuron compile cache in S3 (NEURON_COMPILE_CACHE_URL)."""

    bucket: Annotated[str, Field(pattern=BUCKET_RE)] | None = Field(
        None, description="existing bucket to use; default: create one for the stack"
    )
    prefix: str | None = Field(None, description="key prefix; each pool gets PREFIX/POOL/")
    expire_days: int | None = Field(None, ge=1, le=3650, description="expire stale objects")

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if not re.fullmatch(r"[A-Za-z0-9._/-]{1,200}", v) or v.startswith("/") or ".." in v:
            raise ValueError(
                "must be letters, digits, '.', '_', '-' and '/', not starting with '/'"
            )
        return v if v.endswith("/") else v + "/"


class Storage(Strict):
    """Optional shared file system: FSx for Lustre in the workload pool's zone."""

    fsx_lustre_gib: int | None = Field(
        None, ge=1200, le=1_000_000, description="FSx for Lustre capacity (1200 or n x 2400)"
    )
    fsx_throughput_per_tib: Literal[125, 250, 500, 1000] | None = Field(
        None, description="MB/s per TiB (PERSISTENT_2)"
    )

    @field_validator("fsx_lustre_gib")
    @classmethod
    def _fsx_size(cls, v: int | None) -> int | None:
        if v is not None and v != 1200 and v % 2400:
            raise ValueError("must be 1200 or a multiple of 2400 (FSx PERSISTENT_2 sizes)")
        return v


class Model(Strict):
    """The model being trained (sizes drive the estimate and the memory fit)."""

    name: str | None = Field(None, max_length=64, description="label for reports")
    params_billion: float = Field(gt=0, le=10_000, description="parameters, in billions")
    layers: int | None = Field(None, ge=1, le=1000, description="for the attention FLOPs term")
    hidden_size: int | None = Field(None, ge=64, le=131_072, description="model width")


class Workload(Strict):
    """The training job: what runs, on which pool, how much data, at what precision."""

    pool: str | None = Field(None, description="the pool the job runs on; default: the only pool")
    model: Model = Field(description="model size")
    tokens_billion: float = Field(gt=0, le=1_000_000, description="training tokens, billions")
    sequence_length: int | None = Field(
        None, ge=128, le=1_048_576, description="tokens per sequence (attention FLOPs term)"
    )
    precision: Literal["bf16", "fp16", "fp8"] = Field(
        "bf16", description="training precision; selects the peak FLOPS figure"
    )
    global_batch_size: int | None = Field(None, ge=1, le=1_048_576, description="sequences")
    entrypoint: str = Field(min_length=1, max_length=1024, description="script torchrun runs")
    args: tuple[str, ...] = Field((), description="arguments, passed verbatim")
    image: str | None = Field(None, description="container image; default per device kind")
    framework: str | None = Field(None, description="default derived from the pool's family")
    env: dict[Annotated[str, Field(pattern=ENV_NAME_RE)], str] = Field(
        default_factory=dict, description="extra environment (no secrets: names are checked)"
    )
    precompile_steps: int | None = Field(
        None, ge=0, le=1000, description="neuron_parallel_compile steps before training; 0 = off"
    )
    rdzv_port: int = Field(29500, ge=1024, le=65535, description="torchrun rendezvous port")


class Budget(Strict):
    """Limits the cost guard enforces before anything is created (USD)."""

    max_hourly_usd: float | None = Field(None, gt=0, description="whole stack, per hour")
    max_monthly_usd: float | None = Field(None, gt=0, description="hourly x hours_per_month")
    max_run_usd: float | None = Field(None, gt=0, description="the estimated training run")
    mfu: float | None = Field(None, gt=0, le=1, description="MFU override for the estimate")


class Spec(Strict):
    """A training stack: cluster, pools, workload and budget."""

    name: str = Field(pattern=NAME_RE, description="stack name; equals the file name")
    region: str = Field(description="AWS region, e.g. us-east-2")
    availability_zone: str | None = Field(None, description="zone name or id for EFA pools")
    preview: bool = Field(False, description="must be true to use preview instance types")
    tags: dict[str, str] = Field(
        default_factory=dict, description="AWS tags on every resource (plus accelstack:stack)"
    )
    orchestration: Literal["eks", "ec2"] = Field(
        "eks", description="eks: EKS node groups; ec2: standalone instances on DLAMIs"
    )
    cluster: Cluster = Field(default_factory=Cluster, description="EKS settings")
    standalone: Standalone = Field(
        default_factory=Standalone, description="orchestration: ec2 settings"
    )
    network: Network = Field(default_factory=Network, description="VPC and subnets")
    pools: tuple[Pool, ...] = Field(
        min_length=1, max_length=16, description="accelerator node pools (1-16)"
    )
    compile_cache: CompileCache | None = Field(
        None, description="Neuron compile cache; created by default when a Neuron pool exists"
    )
    storage: Storage = Field(default_factory=Storage, description="shared file system")
    workload: Workload = Field(description="the training job")
    budget: Budget = Field(default_factory=Budget, description="cost limits and MFU")

    @field_validator("tags")
    @classmethod
    def _tags(cls, v: dict[str, str]) -> dict[str, str]:
        for key, value in v.items():
            if not key or len(key) > 128 or key.lower().startswith("aws:"):
                raise ValueError(f"tag key '{key}' must be 1-128 characters, not 'aws:...'")
            if len(str(value)) > 256:
                raise ValueError(f"tag '{key}' value is longer than 256 characters")
        return v

    def pool(self, name: str) -> Pool:
        for p in self.pools:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def workload_pool(self) -> Pool:
        if self.workload.pool is None:
            return self.pools[0]
        return self.pool(self.workload.pool)


# ---------------------------------------------------------------------------------------
# Loading and error translation
# ---------------------------------------------------------------------------------------


def _yaml_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The pydantic model that owns the last key of `loc` (for 'did you mean' on unknown keys)."""
    model: Any = Spec
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            return None
        ann = field.annotation
        candidates = [ann, *getattr(ann, "__args__", ())]
        nxt = None
        for c in candidates:
            for sub in (c, *getattr(c, "__args__", ())):
                if isinstance(sub, type) and issubclass(sub, BaseModel):
                    nxt = sub
        if nxt is None:
            return None
        model = nxt
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    if value is None:
        return "nothing"
    return repr(value)


def translate(exc: ValidationError, file: str) -> list[Problem]:
    """Turn pydantic errors into one-line problems with YAML paths."""
    problems: list[Problem] = []
    errors = exc.errors()
    for err in errors:
        loc = tuple(err["loc"])
        kind = err["type"]
        if kind == "too_short" and any(
            tuple(o["loc"])[: len(loc)] == loc and len(o["loc"]) > len(loc) for o in errors
        ):
            continue  # a list emptied by its own item errors: those errors say it better
        found = err.get("input")
        ctx = err.get("ctx") or {}
        # dict-key errors carry '[key]' in loc; keep paths readable
        path = _yaml_path(loc)
        if kind == "extra_forbidden":
            key = str(loc[-1])
            owner = _model_at(loc)
            fields = list(owner.model_fields) if owner else []
            msg = f"unknown key '{key}'{did_you_mean(key, fields)}"
            if fields:
                msg += f" (allowed: {', '.join(fields)})"
        elif kind == "missing":
            msg = "is required"
        elif kind == "literal_error":
            expected = str(ctx.get("expected", ""))
            choices = re.findall(r"'([^']*)'|(\d+)", expected)
            names = [a or b for a, b in choices]
            msg = f"{_describe(found)} is not allowed{did_you_mean(found, names)} (allowed: {expected.replace(' or ', ', ')})"
        elif kind == "string_pattern_mismatch":
            msg = f"{_describe(found)} does not match the required pattern {ctx.get('pattern')}"
        elif kind in {"int_parsing", "int_type", "int_from_float"}:
            msg = f"expected a whole number, found {_describe(found)}"
        elif kind in {"float_parsing", "float_type"}:
            msg = f"expected a number, found {_describe(found)}"
        elif kind in {"bool_parsing", "bool_type"}:
            msg = f"expected true or false, found {_describe(found)}"
        elif kind in {"string_type"}:
            msg = f"expected a string, found {_describe(found)}"
        elif kind in {"dict_type", "model_type", "model_attributes_type"}:
            msg = f"expected a mapping, found {_describe(found)}"
        elif kind in {"list_type", "tuple_type"}:
            msg = f"expected a list, found {_describe(found)}"
        elif kind in {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}:
            bound = {
                "greater_than": f"greater than {ctx.get('gt')}",
                "greater_than_equal": f"at least {ctx.get('ge')}",
                "less_than": f"less than {ctx.get('lt')}",
                "less_than_equal": f"at most {ctx.get('le')}",
            }[kind]
            msg = f"{_describe(found)} is out of range; must be {bound}"
        elif kind in {"too_short", "too_long"}:
            msg = err["msg"].replace("Tuple", "list").replace("List", "list")
            if kind == "too_short" and not found:
                msg = "must not be empty"
        elif kind == "value_error":
            msg = f"{_describe(found)}: {ctx.get('error', err['msg'])!s}"
        else:
            msg = f"{err['msg']} (found {_describe(found)})"
        problems.append(Problem(file, path, msg))
    return problems


def read_yaml(path: Path) -> dict[str, Any]:
    """Read a spec file as a mapping; every failure is a one-line SpecError."""
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError([Problem(file, "", "no such file")]) from None
    except IsADirectoryError:
        raise SpecError([Problem(file, "", "is a directory, not a spec file")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError([Problem(file, "", f"cannot read: {exc}")]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError([Problem(file, "", f"YAML syntax error at {where}{problem}")]) from None
    if data is None:
        raise SpecError(
            [
                Problem(
                    file, "", "is empty; a spec is a mapping with name, region, pools and workload"
                )
            ]
        )
    if not isinstance(data, dict):
        raise SpecError([Problem(file, "", f"must be a mapping of keys, found {_describe(data)}")])
    bad_keys = [k for k in data if not isinstance(k, str)]
    if bad_keys:
        raise SpecError(
            [Problem(file, "", f"top-level keys must be strings, found {bad_keys[0]!r}")]
        )
    return data


def parse_spec(data: dict[str, Any], file: str, catalog: Catalog | None = None) -> Spec:
    """Validate a mapping (shape, then rules). Raises SpecError listing every problem."""
    try:
        spec = Spec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(translate(exc, file)) from None
    problems = check_rules(spec, catalog or load_catalog(), file)
    if problems:
        raise SpecError(problems)
    return spec


def load_spec(path: str | Path, catalog: Catalog | None = None) -> Spec:
    """Load stacks/NAME.yaml: YAML, shape, rules, and the file name equals `name`."""
    p = Path(path)
    data = read_yaml(p)
    spec = parse_spec(data, str(p), catalog)
    if spec.name != p.stem:
        raise SpecError(
            [
                Problem(
                    str(p),
                    "name",
                    f"'{spec.name}' does not match the file name "
                    f"'{p.stem}' (the stack name); rename one so they agree",
                )
            ]
        )
    return spec


# ---------------------------------------------------------------------------------------
# Cross-field rules
# ---------------------------------------------------------------------------------------


def check_rules(spec: Spec, catalog: Catalog, file: str) -> list[Problem]:
    out: list[Problem] = []

    def bad(path: str, msg: str) -> None:
        out.append(Problem(file, path, msg))

    region_ok = spec.region in catalog.regions
    if not region_ok:
        bad(
            "region",
            f"'{spec.region}' has no accelerated offerings in the catalog"
            f"{did_you_mean(spec.region, catalog.regions)} (known: {allowed(catalog.regions, 20)})",
        )

    if (
        region_ok
        and spec.availability_zone
        and not catalog.zone_id(spec.region, spec.availability_zone)
    ):
        zones = catalog.regions[spec.region].zones
        bad(
            "availability_zone",
            f"'{spec.availability_zone}' is not a zone of {spec.region}"
            f"{did_you_mean(spec.availability_zone, [*zones, *zones.values()])}"
            f" (known: {allowed([*zones, *zones.values()])})",
        )

    names = [p.name for p in spec.pools]
    for i, pool in enumerate(spec.pools):
        at = f"pools[{i}]"
        if names.count(pool.name) > 1 and names.index(pool.name) != i:
            bad(
                f"{at}.name",
                f"'{pool.name}' is used by pools[{names.index(pool.name)}] already; "
                "pool names must be unique",
            )
        if pool.instance_type not in catalog.instances:
            bad(
                f"{at}.instance_type",
                f"'{pool.instance_type}' is not a known instance type"
                f"{did_you_mean(pool.instance_type, catalog.accelerated_types())}"
                f" (known: {allowed(catalog.accelerated_types())})",
            )
            continue
        if not catalog.instances[pool.instance_type].accelerated:
            bad(
                f"{at}.instance_type",
                f"'{pool.instance_type}' is a CPU type; pools need an "
                f"accelerated type (known: {allowed(catalog.accelerated_types())})",
            )
            continue
        inst = catalog.instance(pool.instance_type)
        family = catalog.families[inst.family]
        kind = catalog.device_kinds[family.device_kind]
        if inst.preview and not spec.preview:
            bad(
                f"{at}.instance_type",
                f"'{pool.instance_type}' is a preview type whose facts are "
                "partly estimated; set 'preview: true' at the top level to use it",
            )
        if pool.efa and not inst.efa_supported:
            efa_types = sorted(
                n
                for n, x in catalog.instances.items()
                if x.efa_supported and x.family == inst.family
            )
            bad(
                f"{at}.efa",
                f"EFA is not supported on {pool.instance_type}; "
                f"use efa: false or an EFA type ({allowed(efa_types)})",
            )
        if pool.efa_interface_style and not (pool.efa is not False and inst.efa_supported):
            bad(f"{at}.efa_interface_style", "is set but EFA is off for this pool")
        option = pool.purchase.option
        needs_id = option in ("capacity-block", "reservation")
        if needs_id and not pool.purchase.reservation_id:
            bad(
                f"{at}.purchase.reservation_id",
                f"is required for purchase option '{option}' "
                "(the cr-... id of the capacity block or reservation)",
            )
        if not needs_id and pool.purchase.reservation_id:
            bad(
                f"{at}.purchase.reservation_id",
                f"is only allowed with capacity-block or reservation, not '{option}'",
            )
        if pool.logical_cores is not None and not kind.compile_cache:
            bad(
                f"{at}.logical_cores",
                f"applies to Neuron pools only; {pool.instance_type} is {family.accelerator}",
            )
        elif pool.logical_cores is not None and inst.physical_cores_per_chip % pool.logical_cores:
            bad(
                f"{at}.logical_cores",
                f"{pool.logical_cores} does not divide the "
                f"{inst.physical_cores_per_chip} cores per chip of {pool.instance_type} (allowed: 1)",
            )
        if pool.compile_cache and not kind.compile_cache:
            bad(
                f"{at}.compile_cache",
                f"a compile cache is for Neuron pools only; "
                f"{pool.instance_type} is {family.accelerator}",
            )
        zone = pool.availability_zone or spec.availability_zone
        if region_ok:
            offered = catalog.zones_offering(spec.region, pool.instance_type)
            if not offered:
                elsewhere = catalog.regions_offering(pool.instance_type)
                bad(
                    f"{at}.instance_type",
                    f"{pool.instance_type} is not offered in {spec.region} "
                    f"per the catalog (offered in: {allowed(elsewhere) or 'no known region'})",
                )
            elif zone:
                zid = catalog.zone_id(spec.region, zone)
                field = f"{at}.availability_zone" if pool.availability_zone else "availability_zone"
                if zid is None:
                    if pool.availability_zone:
                        zones = catalog.regions[spec.region].zones
                        bad(
                            field,
                            f"'{zone}' is not a zone of {spec.region} (known: "
                            f"{allowed([*zones, *zones.values()])})",
                        )
                elif zid not in offered:
                    bad(
                        field,
                        f"zone '{zone}' ({zid}) does not offer {pool.instance_type}; "
                        f"zones that do: {', '.join(offered)}",
                    )
            if offered:
                try:
                    catalog.instance_rate(spec.region, pool.instance_type, option)
                except CatalogError as exc:
                    bad(
                        f"{at}.purchase.option",
                        f"{exc} (prices fail closed: add a sourced "
                        "row to accelstack/catalog/prices.yaml or pick a priced option)",
                    )

    # system nodes
    sys_type = spec.cluster.system_nodes.instance_type
    if sys_type is not None:
        if sys_type not in catalog.instances:
            bad(
                "cluster.system_nodes.instance_type",
                f"'{sys_type}' is not a known instance type"
                f"{did_you_mean(sys_type, catalog.instances)}",
            )
        elif catalog.instances[sys_type].accelerated:
            cpu = sorted(n for n, x in catalog.instances.items() if not x.accelerated)
            bad(
                "cluster.system_nodes.instance_type",
                f"'{sys_type}' is an accelerated type; system nodes are CPU types ({allowed(cpu)})",
            )
    k8s = spec.cluster.kubernetes_version
    versions = catalog.defaults.eks_versions
    if k8s is not None and k8s not in versions:
        bad(
            "cluster.kubernetes_version",
            f"'{k8s}' is not supported"
            f"{did_you_mean(k8s, versions)} (allowed: {', '.join(versions)})",
        )
    elif k8s is not None and versions[k8s].status(today()) == "ended":
        live = [v for v, w in versions.items() if w.status(today()) != "ended"]
        bad(
            "cluster.kubernetes_version",
            f"'{k8s}' reached the end of EKS extended support on "
            f"{versions[k8s].extended_support_end}; use one of {', '.join(live)}",
        )
    for j, cidr in enumerate(spec.cluster.public_access_cidrs):
        _check_cidr(bad, f"cluster.public_access_cidrs[{j}]", cidr)
    if spec.cluster.public_access_cidrs and not spec.cluster.endpoint_public_access:
        bad("cluster.public_access_cidrs", "is set but endpoint_public_access is false")
    if spec.cluster.endpoint_public_access and not spec.cluster.public_access_cidrs:
        bad(
            "cluster.public_access_cidrs",
            "must list the CIDRs allowed to reach the public endpoint (0.0.0.0/0 is refused)",
        )
    for j, cidr in enumerate(spec.standalone.ssh_cidrs):
        _check_cidr(bad, f"standalone.ssh_cidrs[{j}]", cidr)
    if spec.standalone.ssh_cidrs and not spec.standalone.ssh_key_name:
        bad(
            "standalone.ssh_cidrs",
            "needs standalone.ssh_key_name (SSH is off by default; "
            "access is through SSM Session Manager)",
        )

    # network
    net = spec.network
    if net.mode == "existing":
        if not net.vpc_id:
            bad("network.vpc_id", "is required when network.mode is 'existing'")
        if not net.private_subnet_ids:
            bad("network.private_subnet_ids", "is required when network.mode is 'existing'")
        if net.vpc_cidr:
            bad("network.vpc_cidr", "applies only when network.mode is 'create'")
    else:
        for f in ("vpc_id", "private_subnet_ids", "public_subnet_ids"):
            if getattr(net, f):
                bad(f"network.{f}", "applies only when network.mode is 'existing'")
        if net.vpc_cidr:
            try:
                n = ipaddress.ip_network(net.vpc_cidr)
                if not n.is_private or n.prefixlen > 20 or n.prefixlen < 16:
                    bad("network.vpc_cidr", f"'{net.vpc_cidr}' must be a private /16 to /20")
            except ValueError:
                bad("network.vpc_cidr", f"'{net.vpc_cidr}' is not a CIDR block")

    # compile cache
    neuron_pools = [
        p.name
        for p in spec.pools
        if p.instance_type in catalog.instances
        and catalog.device_kind_of(p.instance_type).compile_cache
    ]
    if spec.compile_cache is not None and not neuron_pools:
        bad(
            "compile_cache",
            "is set but no pool is a Neuron pool (the Neuron compile cache serves trn pools only)",
        )

    # storage
    if spec.storage.fsx_throughput_per_tib and not spec.storage.fsx_lustre_gib:
        bad("storage.fsx_throughput_per_tib", "is set but storage.fsx_lustre_gib is not")

    # workload
    wl = spec.workload
    if wl.pool is None and len(spec.pools) > 1:
        bad(
            "workload.pool",
            f"is required when there are several pools (one of: {', '.join(names)})",
        )
    elif wl.pool is not None and wl.pool not in names:
        bad(
            "workload.pool",
            f"'{wl.pool}' is not a pool of this stack{did_you_mean(wl.pool, names)}"
            f" (pools: {', '.join(names)})",
        )
    else:
        pool = spec.workload_pool
        if (
            pool.instance_type in catalog.instances
            and catalog.instances[pool.instance_type].accelerated
        ):
            kind = catalog.device_kind_of(pool.instance_type)
            if wl.framework is not None and wl.framework not in kind.frameworks:
                every = sorted({f for k in catalog.device_kinds.values() for f in k.frameworks})
                bad(
                    "workload.framework",
                    f"'{wl.framework}' cannot run on {pool.instance_type}"
                    f"{did_you_mean(wl.framework, every)} (allowed there: {', '.join(kind.frameworks)})",
                )
            if wl.precompile_steps and not kind.compile_cache:
                bad(
                    "workload.precompile_steps",
                    f"pre-compilation is a Neuron step; {pool.instance_type} does not use it",
                )
            fam = catalog.family_of(pool.instance_type)
            if wl.precision not in fam.peak_tflops:
                bad(
                    "workload.precision",
                    f"'{wl.precision}' has no peak figure for "
                    f"{fam.accelerator} (allowed: {', '.join(fam.peak_tflops)})",
                )
            else:
                fit = memory_fit(catalog, pool.instance_type, wl.model.params_billion, wl.precision)
                if not fit.fits(pool.nodes):
                    i = names.index(pool.name)
                    bad(
                        f"pools[{i}].nodes",
                        f"{pool.nodes} x {pool.instance_type} cannot hold "
                        f"the workload: {wl.model.params_billion:g}B parameters need "
                        f"{fit.required_gib:,.0f} GiB of training state at {fit.bytes_per_param:g} "
                        f"bytes/parameter, {pool.nodes} node(s) give "
                        f"{pool.nodes * fit.usable_gib_per_node:,.0f} GiB usable; use at least "
                        f"{fit.min_nodes} nodes",
                    )
    if wl.entrypoint.startswith("-"):
        bad(
            "workload.entrypoint",
            f"{wl.entrypoint[:40]!r} starts with '-': torchrun would "
            "read it as an option; use a path such as ./train.py",
        )
    for name in wl.env:
        if name in RESERVED_ENV_NAMES:
            bad(
                f"workload.env.{name}",
                "the launch script uses this variable itself; pick another name",
            )
        if SECRET_NAME_RE.search(name):
            bad(
                f"workload.env.{name}",
                "looks like a secret; secrets never go into rendered "
                "files: mount them from AWS Secrets Manager or a Kubernetes Secret instead",
            )
    if (wl.model.layers is None) != (wl.model.hidden_size is None):
        bad("workload.model", "layers and hidden_size go together (both or neither)")
    if spec.orchestration == "eks" and spec.standalone != Standalone():
        bad("standalone", "applies only when orchestration is 'ec2'")
    return out


def _check_cidr(bad: Any, path: str, cidr: str) -> None:
    try:
        net = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        bad(path, f"'{cidr}' is not a CIDR block")
        return
    if str(net) in OPEN_CIDRS or net.prefixlen == 0:
        bad(path, f"'{cidr}' opens the port to the whole internet; list your own ranges")


def json_schema() -> dict[str, Any]:
    """The spec's JSON Schema (for editors: yaml-language-server, VS Code)."""
    schema = Spec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://accelstack.dev/schema/spec.json"
    schema["title"] = "accelstack workload spec"
    return schema
