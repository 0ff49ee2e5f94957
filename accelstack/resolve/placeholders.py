"""Placeholder values left in a spec: documentation address ranges (RFC 5737, 3849, 9637) and
the example AWS account ids of the AWS documentation (in an account id, an ARN or an ECR
image), from `catalog/placeholders.yaml`. `validate`, `check` and `plan` list them as
warnings (the presets carry them and still plan offline); the Pulumi program refuses them
(`refuse_placeholders`) before anything is created, instead of failing after the cluster
exists.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from accelstack.catalog import catalog_file
from accelstack.catalog.overlay import overlay_dir
from accelstack.errors import AccelstackError, shown
from accelstack.resolve.stack import Stack
from accelstack.spec.secrets import spec_strings

_TABLE = Path(__file__).resolve().parent.parent / "catalog" / "placeholders.yaml"
_FILE = _TABLE.name  # a catalog file: the overlay may change it (catalog/sections.py)
_NET_RE = re.compile(r"^[0-9a-fA-F:.]+(/\d{1,3})?$")


@dataclass(frozen=True)
class PlaceholderTable:
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
    accounts: tuple[str, ...]


def placeholder_table(path: Path | None = None) -> PlaceholderTable:
    """The table in `path`; default: the bundled one with the catalog overlay's on top."""
    return _placeholder_table(path, None if path else overlay_dir())


@cache
def _placeholder_table(path: Path | None, overlay: Path | None) -> PlaceholderTable:
    data = (
        yaml.safe_load(path.read_text(encoding="utf-8")) if path else catalog_file(_FILE, overlay)
    )
    nets = tuple(ipaddress.ip_network(n["cidr"]) for n in data["documentation_networks"])
    return PlaceholderTable(nets, tuple(str(a["id"]) for a in data["example_accounts"]))


def _documentation_network(text: str, table: PlaceholderTable) -> str | None:
    if not _NET_RE.match(text.strip()):
        return None
    try:
        net = ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        return None
    hit = next((d for d in table.networks if d.version == net.version and net.overlaps(d)), None)
    return str(hit) if hit else None


def _example_account(text: str, table: PlaceholderTable) -> str | None:
    return next((a for a in table.accounts if re.search(rf"(?<!\d){a}(?!\d)", text)), None)


def placeholder_findings(data: Any) -> list[tuple[str, str]]:
    """(YAML path, message) for every placeholder value in a dumped spec."""
    table = placeholder_table()
    out = []
    for path, text in spec_strings(data, ""):
        net = _documentation_network(text, table)
        if net:
            out.append((path, f"{shown(text)} is in the documentation range {net}; use your own"))
        account = _example_account(text, table)
        if account:
            out.append(
                (
                    path,
                    f"{shown(text)} names the documentation example account {account}; use yours",
                )
            )
    return out


def stack_placeholders(stack: Stack) -> list[str]:
    """One line per placeholder in the stack's spec as written: 'path: message'."""
    dumped = stack.spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    return [f"{path}: {msg}" for path, msg in placeholder_findings(dumped)]


def refuse_placeholders(stack: Stack, source: str) -> None:
    """The deploy-time refusal: one line listing every placeholder (the program calls it)."""
    found = stack_placeholders(stack)
    if found:
        raise AccelstackError(
            f"{source}: placeholder values must be replaced before deploying: {'; '.join(found)}"
        )
