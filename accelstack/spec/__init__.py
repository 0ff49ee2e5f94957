"""The spec stage: one YAML file per stack (`stacks/NAME.yaml`), validated in two passes:
shape (`models`), then cross-field rules against the catalog (`ruleset.SPEC_RULES`, the rules of
`rules` and its sibling modules, listed explicitly); `loader` reads files
and turns every failure into one-line problems; `retarget` rewrites a spec for another
instance type (`accelstack new`). The rules that need derived values run on the resolved
stack (accelstack/resolve/rules.py); accelstack/docs.py renders docs/spec.md from both."""

from accelstack.spec.loader import load_spec, parse_spec, read_yaml, translate
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
from accelstack.spec.rules import Rule
from accelstack.spec.ruleset import SPEC_RULES, check_rules

__all__ = [
    "BUCKET_RE",
    "NAME_RE",
    "POOL_RE",
    "RESERVED_ENV_NAMES",
    "SPEC_RULES",
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
    "Rule",
    "Spec",
    "Standalone",
    "Storage",
    "SystemNodes",
    "Workload",
    "check_rules",
    "json_schema",
    "load_spec",
    "parse_spec",
    "read_yaml",
    "translate",
]
