"""The Kueue objects accelstack plans, checked field by field against Kueue's own API at the
pinned version (catalog charts.kueue: kubernetes-sigs/kueue@8eab68778fc1b52affe165fdf5af29d1e9b4f3cb,
v0.19.2). No Python model of Kueue is published, so the part of each CRD's openAPIV3Schema
(v1beta2, the served storage version) and of the manager Configuration Go type that the
objects use is restated here as data, each field with its source line, and every object is
walked against it recursively: a field not restated is refused (the API server prunes unknown
CRD fields silently, and Kueue decodes its Configuration strictly, pkg/config/config.go:61, so
an unknown key there stops the manager), and types, patterns, lengths and required fields are
checked. No upstream file is copied into the repository."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

KUEUE = "kubernetes-sigs/kueue@8eab6877"
CRDS = f"{KUEUE} config/components/crd/bases/kueue.x-k8s.io_"
RF, CQ, LQ, TOPO = (
    f"{CRDS}{n}.yaml" for n in ("resourceflavors", "clusterqueues", "localqueues", "topologies")
)
CONFIG = f"{KUEUE} apis/config/v1beta2/configuration_types.go"
APIMACHINERY = "k8s.io/apimachinery pkg/util/validation/validation.go"

#: DNS-1123 subdomain, as the CRDs state it (e.g. clusterqueues.yaml:1240-1245)
SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
#: a label value (apimachinery LabelValueMaxLength 63, labelValueFmt), empty allowed
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
#: a qualified name: an optional DNS subdomain prefix and a name part (label keys, node labels)
QUALIFIED = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
#: a resource.Quantity (clusterqueues.yaml:1289-1295)
QUANTITY = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
#: a metav1.Duration as Go's time.ParseDuration reads it
DURATION = r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"


@dataclass(frozen=True)
class Schema:
    """One restated schema node: its type (object, map, array, string, integer, number,
    boolean, int-or-string), where it is stated, and its constraints."""

    type: str
    at: str
    props: Mapping[str, Schema] = field(default_factory=dict)
    items: Schema | None = None  # an array's items, a map's values
    required: tuple[str, ...] = ()
    pattern: str | None = None
    max_length: int | None = None
    min_items: int | None = None
    max_items: int | None = None
    max_properties: int | None = None
    map_keys: tuple[str, ...] = ()  # x-kubernetes-list-type: map, its keys unique
    key_pattern: str | None = None  # a map's keys


def _str(at: str, pattern: str | None = None, max_length: int | None = None) -> Schema:
    return Schema("string", at, pattern=pattern, max_length=max_length)


def _labels(at: str, max_properties: int | None = None) -> Schema:
    value = _str(f"{APIMACHINERY} (LabelValueMaxLength, labelValueFmt)", LABEL_VALUE, 63)
    return Schema("map", at, items=value, max_properties=max_properties, key_pattern=QUALIFIED)


def _metadata(at: str, namespaced: bool) -> Schema:
    """ObjectMeta as the API server checks a custom resource's: a DNS subdomain name."""
    props = {
        "name": _str(f"{APIMACHINERY} (custom resource names: DNS-1123 subdomain)", SUBDOMAIN, 253),
        "labels": _labels(f"{APIMACHINERY} (ValidateLabels)"),
    }
    if namespaced:
        props["namespace"] = _str(f"{APIMACHINERY} (namespace: DNS-1123 label)", SUBDOMAIN, 63)
    return Schema("object", at, props, required=("name",))


def _root(crd: str, lines: tuple[int, int, int, int], spec: Schema, namespaced: bool) -> Schema:
    root, api, kind, meta = lines
    return Schema(
        "object",
        f"{crd}:{root}",
        {
            "apiVersion": _str(f"{crd}:{api}"),
            "kind": _str(f"{crd}:{kind}"),
            "metadata": _metadata(f"{crd}:{meta}", namespaced),
            "spec": spec,
        },
    )


RESOURCE_FLAVOR = _root(
    RF,
    (207, 210, 217, 225),
    Schema(
        "object",
        f"{RF}:227",
        {
            "nodeLabels": _labels(f"{RF}:230-231", max_properties=8),
            "topologyName": _str(f"{RF}:362-368", SUBDOMAIN, 253),
        },
    ),
    namespaced=False,
)

_CQ_RESOURCE = Schema(
    "object",
    f"{CQ}:1252",
    {
        "name": _str(f"{CQ}:1286"),
        "nominalQuota": Schema("int-or-string", f"{CQ}:1289-1295", pattern=QUANTITY),
    },
    required=("name", "nominalQuota"),
)
_CQ_FLAVOR = Schema(
    "object",
    f"{CQ}:1238",
    {
        "name": _str(f"{CQ}:1240-1245", SUBDOMAIN, 253),
        "resources": Schema(
            "array", f"{CQ}:1248", items=_CQ_RESOURCE, min_items=1, max_items=64, map_keys=("name",)
        ),
    },
    required=("name", "resources"),
)
_CQ_GROUP = Schema(
    "object",
    f"{CQ}:1211",
    {
        "coveredResources": Schema(
            "array", f"{CQ}:1213-1220", items=_str(f"{CQ}:1220"), min_items=1, max_items=64
        ),
        "flavors": Schema(
            "array", f"{CQ}:1228", items=_CQ_FLAVOR, min_items=1, max_items=64, map_keys=("name",)
        ),
    },
    required=("coveredResources", "flavors"),
)
CLUSTER_QUEUE = _root(
    CQ,
    (828, 831, 838, 846),
    Schema(
        "object",
        f"{CQ}:848",
        {
            "namespaceSelector": Schema(
                "object", f"{CQ}:1055", {"matchLabels": _labels(f"{CQ}:1096-1097")}
            ),
            "resourceGroups": Schema("array", f"{CQ}:1204", items=_CQ_GROUP, max_items=16),
        },
    ),
    namespaced=False,
)

LOCAL_QUEUE = _root(
    LQ,
    (445, 448, 455, 463),
    Schema("object", f"{LQ}:465", {"clusterQueue": _str(f"{LQ}:468-473", SUBDOMAIN, 253)}),
    namespaced=True,
)

TOPOLOGY = _root(
    TOPO,
    (89, 92, 99, 107),
    Schema(
        "object",
        f"{TOPO}:109",
        {
            "levels": Schema(
                "array",
                f"{TOPO}:112",
                items=Schema(
                    "object",
                    f"{TOPO}:114",
                    {"nodeLabel": _str(f"{TOPO}:117-122", QUALIFIED, 316)},
                    required=("nodeLabel",),
                ),
                min_items=1,
                max_items=16,
            )
        },
        required=("levels",),
    ),
    namespaced=False,
)

#: the manager Configuration (its ControllerManager fields are inline, :44)
CONFIGURATION = Schema(
    "object",
    f"{CONFIG}:35",
    {
        "apiVersion": _str(f"{CONFIG}:36 (TypeMeta)"),
        "kind": _str(f"{CONFIG}:36 (TypeMeta)"),
        "leaderElection": Schema(
            "object",
            f"{CONFIG}:125 (k8s.io/component-base config/v1alpha1 LeaderElectionConfiguration)",
            {"leaderElect": Schema("boolean", "k8s.io/component-base LeaderElectionConfiguration")},
        ),
        "controller": Schema(
            "object",
            f"{CONFIG}:146",
            {
                "groupKindConcurrency": Schema(
                    "map", f"{CONFIG}:294", items=Schema("integer", f"{CONFIG}:294")
                )
            },
        ),
        "clientConnection": Schema(
            "object",
            f"{CONFIG}:83",
            {"qps": Schema("number", f"{CONFIG}:530"), "burst": Schema("integer", f"{CONFIG}:533")},
        ),
        "integrations": Schema(
            "object",
            f"{CONFIG}:87",
            {"frameworks": Schema("array", f"{CONFIG}:557", items=_str(f"{CONFIG}:557"))},
        ),
        "waitForPodsReady": Schema(
            "object",
            f"{CONFIG}:79",
            {
                "timeout": _str(f"{CONFIG}:308", DURATION),
                "blockAdmission": Schema("boolean", f"{CONFIG}:314"),
                "recoveryTimeout": _str(f"{CONFIG}:328", DURATION),
            },
            required=("timeout",),
        ),
        "resources": Schema(
            "object",
            f"{CONFIG}:99",
            {
                "deviceClassMappings": Schema(
                    "array",
                    f"{CONFIG}:604",
                    items=Schema(
                        "object",
                        f"{CONFIG}:636",
                        {
                            "name": _str(f"{CONFIG}:637-644", QUALIFIED, 253),
                            "deviceClassNames": Schema(
                                "array",
                                f"{CONFIG}:653",
                                items=_str(f"{CONFIG}:646-653", QUALIFIED, 253),
                            ),
                        },
                        required=("name", "deviceClassNames"),
                    ),
                )
            },
        ),
    },
)

BY_KIND = {
    "ResourceFlavor": RESOURCE_FLAVOR,
    "ClusterQueue": CLUSTER_QUEUE,
    "LocalQueue": LOCAL_QUEUE,
    "Topology": TOPOLOGY,
    "Configuration": CONFIGURATION,
}

_SCALAR = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "int-or-string": (int, str),
}


def _scalar(s: Schema, value: Any, path: str) -> list[str]:
    ok = _SCALAR[s.type]
    if not isinstance(value, ok) or (isinstance(value, bool) and s.type != "boolean"):
        return [f"{path}: {value!r} is not {s.type} ({s.at})"]
    out = []
    if isinstance(value, str) and s.pattern and not re.match(s.pattern, value):
        out.append(f"{path}: {value!r} does not match {s.pattern} ({s.at})")
    if isinstance(value, str) and s.max_length is not None and len(value) > s.max_length:
        out.append(f"{path}: {len(value)} characters, at most {s.max_length} ({s.at})")
    return out


def _array(s: Schema, value: list[Any], path: str) -> list[str]:
    assert s.items is not None
    out = []
    if s.min_items is not None and len(value) < s.min_items:
        out.append(f"{path}: {len(value)} items, at least {s.min_items} ({s.at})")
    if s.max_items is not None and len(value) > s.max_items:
        out.append(f"{path}: {len(value)} items, at most {s.max_items} ({s.at})")
    if s.map_keys:
        keys = [tuple(v.get(k) for k in s.map_keys) for v in value if isinstance(v, dict)]
        if len(keys) != len(set(keys)):
            out.append(f"{path}: duplicate {'/'.join(s.map_keys)} in a list-map ({s.at})")
    for i, v in enumerate(value):
        out += problems(s.items, v, f"{path}[{i}]")
    return out


def _map(s: Schema, value: dict[str, Any], path: str) -> list[str]:
    assert s.items is not None
    out = []
    if s.max_properties is not None and len(value) > s.max_properties:
        out.append(f"{path}: {len(value)} entries, at most {s.max_properties} ({s.at})")
    for k, v in value.items():
        if s.key_pattern and not re.match(s.key_pattern, k):
            out.append(f"{path}: key {k!r} does not match {s.key_pattern} ({s.at})")
        out += problems(s.items, v, f"{path}.{k}")
    return out


def _object(s: Schema, value: dict[str, Any], path: str) -> list[str]:
    out = [f"{path}: {k} is required ({s.at})" for k in s.required if k not in value]
    for k, v in value.items():
        at = f"{path}.{k}" if path else k
        sub = s.props.get(k)
        out += [f"{at}: unknown field ({s.at})"] if sub is None else problems(sub, v, at)
    return out


def problems(s: Schema, value: Any, path: str = "") -> list[str]:
    """Every way `value` departs from the restated schema, with the path and the source."""
    want = {"object": dict, "map": dict, "array": list}.get(s.type)
    if want is None:
        return _scalar(s, value, path)
    if not isinstance(value, want):
        return [f"{path}: {type(value).__name__} is not {s.type} ({s.at})"]
    if s.type == "array":
        return _array(s, value, path)
    return _map(s, value, path) if s.type == "map" else _object(s, value, path)


def kueue_problems(doc: dict[str, Any]) -> list[str]:
    """A planned Kueue object (or the manager Configuration) against its restated schema."""
    return [f"{doc.get('kind')}: {p}" for p in problems(BY_KIND[doc["kind"]], doc)]
