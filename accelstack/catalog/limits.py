"""AWS name and tag limits, read from botocore's service models where the model has them (the
same tables the AWS SDKs validate against), hand-typed with their document where it has none.

Model facts (botocore, the version installed; shape names cited):
- IAM role name: iam `roleNameType` (min 1, max 64, pattern `[\\w+=,.@-]+`).
- IAM tags per role: iam `tagListType` (max 50); EKS tags per resource: eks `TagMap` (max 50).
- EKS cluster name: eks `ClusterName` (max 100).
Hand-typed (no constraint in the model):
- EKS node group name: at most 63 characters, starting with a letter or digit (botocore eks
  `CreateNodegroupRequest.nodegroupName` is an unconstrained String; pulumi-aws 7
  `eks/node_group.py` docstring, after the EKS API reference
  https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateNodegroup.html).
- S3 bucket names: 3-63 characters, reserved prefixes and suffixes (botocore s3 `BucketName`
  is an unconstrained string;
  https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html).
- Pulumi's autoname suffix: '-' and 7 random hex characters, and Pulumi refuses (does not
  truncate) a name that would exceed the limit
  (pulumi/pulumi-terraform-bridge@0f1c55eb pkg/tfbridge/info/autonaming.go `Randlen: 7`;
  pulumi/pulumi@507db165 sdk/go/common/resource/resource_id.go `NewUniqueName`).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import accelstack.catalog.cache as disk

#: '-' plus 7 random hex characters that Pulumi appends to an autonamed resource.
AUTONAME_SUFFIX = 8
#: EKS node group names (no constraint in the botocore model; see the module doc).
NODEGROUP_NAME_MAX = 63
NODEGROUP_NAME_RE = r"[0-9A-Za-z][A-Za-z0-9_-]*"
BUCKET_NAME_MIN, BUCKET_NAME_MAX = 3, 63
BUCKET_RESERVED_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
BUCKET_RESERVED_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")


#: The botocore shapes whose constraints this module reads: (service, shape name)
SHAPES = (("iam", "roleNameType"), ("iam", "tagListType"), ("eks", "TagMap"))
_KEYS = ("min", "max", "pattern")


def model_file(service: str) -> Path:
    """botocore's model of `service` at the newest API version it ships (what a botocore
    session loads by default), found among the package's data files without importing it."""
    spec = importlib.util.find_spec("botocore")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("botocore")
    data = Path(next(iter(spec.submodule_search_locations))) / "data" / service
    latest = max(d for d in data.iterdir() if d.is_dir())  # API versions are ISO dates
    plain = latest / "service-2.json"
    return plain if plain.exists() else latest / "service-2.json.gz"


def read_model(path: Path) -> dict[str, Any]:
    """A model file, read directly: a botocore session and its loader cost several times the
    file itself."""
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return dict(json.load(f))
    return dict(json.loads(path.read_text(encoding="utf-8")))


@cache
def _shapes() -> dict[tuple[str, str], dict[str, Any]]:
    """The constraints (min, max, pattern) of every shape in `SHAPES`, as botocore's
    `Shape.metadata` has them. Reading the IAM and EKS models took about a twentieth of
    `accelstack validate`, so the few values read are kept in the on-disk cache (cache.py),
    named by each model file's path, size and modification time."""
    files = {service: model_file(service) for service, _ in SHAPES}
    stats = {str(p): p.stat() for p in files.values()}
    stamps = ((p, f"{s.st_size}:{s.st_mtime_ns}".encode()) for p, s in stats.items())
    name = disk.key(stamps, [Path(__file__)])
    hit = disk.read(name, kind="limits")
    if isinstance(hit, dict):
        return hit
    models = {service: read_model(path) for service, path in files.items()}
    out = {
        (service, shape): {k: v for k, v in models[service]["shapes"][shape].items() if k in _KEYS}
        for service, shape in SHAPES
    }
    disk.write(name, out, kind="limits")
    return out


def _shape(service: str, shape: str) -> dict[str, Any]:
    """A shape's constraints (min, max, pattern), as botocore's `Shape.metadata` has them."""
    return _shapes()[(service, shape)]


def iam_role_name() -> tuple[int, str]:
    """(max length, pattern) of an IAM role name: botocore iam `roleNameType`."""
    meta = _shape("iam", "roleNameType")
    return int(meta["max"]), str(meta["pattern"])


def max_tags() -> int:
    """Tags per resource: the smaller of botocore iam `tagListType` and eks `TagMap` maxima
    (EC2's model states none; its documented limit is the same 50)."""
    return min(int(_shape("iam", "tagListType")["max"]), int(_shape("eks", "TagMap")["max"]))


def bucket_name_problem(name: str) -> str | None:
    """Why S3 refuses `name` as a bucket name, or None."""
    if not BUCKET_NAME_MIN <= len(name) <= BUCKET_NAME_MAX:
        return f"is {len(name)} characters; S3 allows {BUCKET_NAME_MIN}-{BUCKET_NAME_MAX}"
    if not re.fullmatch(r"[a-z0-9][a-z0-9.-]*[a-z0-9]", name) or ".." in name:
        return "may hold only lowercase letters, digits, '.' and '-', begin and end alphanumeric"
    for prefix in BUCKET_RESERVED_PREFIXES:
        if name.startswith(prefix):
            return f"starts with the reserved prefix '{prefix}'"
    for suffix in BUCKET_RESERVED_SUFFIXES:
        if name.endswith(suffix):
            return f"ends with the reserved suffix '{suffix}'"
    return None
