"""The spec stage: the schema of one YAML file per stack (`stacks/NAME.yaml`). `models` is the
shape (pydantic: unknown keys refused, ranges enforced), `loader` reads files through the
hardened YAML reader (`yamlsafe`) and turns every failure into one-line problems, `secrets`
finds credential-looking values, `roundtrip` edits a spec file keeping its comments. It imports
nothing from the catalog: the rules that hold a spec to the catalog's facts run on the resolved
stack (accelstack/resolve/: the spec rules, then the stack rules)."""

from accelstack.spec.loader import file_name_problems, load_spec, parse_spec, read_yaml, translate
from accelstack.spec.models import (
    BUCKET_RE,
    NAME_RE,
    POOL_RE,
    RESERVED_ENV_NAMES,
    Budget,
    Cluster,
    CompileCache,
    Measured,
    MeasuredShape,
    MeasuredTarget,
    Model,
    Network,
    Pool,
    Purchase,
    Spec,
    Standalone,
    Storage,
    SystemNodes,
    Workload,
    json_schema,
)

__all__ = [
    "BUCKET_RE",
    "NAME_RE",
    "POOL_RE",
    "RESERVED_ENV_NAMES",
    "Budget",
    "Cluster",
    "CompileCache",
    "Measured",
    "MeasuredShape",
    "MeasuredTarget",
    "Model",
    "Network",
    "Pool",
    "Purchase",
    "Spec",
    "Standalone",
    "Storage",
    "SystemNodes",
    "Workload",
    "file_name_problems",
    "json_schema",
    "load_spec",
    "parse_spec",
    "read_yaml",
    "translate",
]
