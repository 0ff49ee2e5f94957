"""`accelstack addons refresh`: pin EKS add-on versions per Kubernetes version from EKS itself.

For each Kubernetes version and add-on, `eks.describe_addon_versions(addonName=A,
kubernetesVersion=V)` (read-only; paginated by `nextToken`) lists the add-on's versions with
their `compatibilities`; the version EKS marks `defaultVersion` for V (what EKS installs when no
version is given) is pinned, else the first listed (EKS lists the newest first). The answer goes
into the catalog overlay's `instances.yaml` (`defaults.eks_addon_versions.<V>.<A>` and
`defaults.eks_addon_sources.<V>`), never into the installed package's catalog: the program
reads the pin, so nothing resolves "newest" at deploy time, and a refreshed pin shows in
`accelstack diff` as an add-on update with the DaemonSets it rolls. Other keys of that file are
kept (its YAML comments are not). The result must load as a catalog.

The AWS call sits behind `AddonSource` (a boto3 EKS client passed in): tests use botocore's
Stubber; nothing here reaches the network on import.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

from accelstack.errors import AccelstackError
from accelstack.files import write_text_atomic

SOURCE = "EKS DescribeAddonVersions ({region}, read {day} by `accelstack addons refresh`; {how})"


@dataclass(frozen=True)
class Pick:
    version: str
    default: bool  # EKS's defaultVersion for the Kubernetes version (else: the newest listed)


class AddonSource(Protocol):
    region: str

    def pick(self, addon: str, kubernetes_version: str) -> Pick | None:
        """The version to pin, or None when EKS offers the add-on nothing for the version."""


class AwsAddonSource:
    """The EKS call, one client (DescribeAddonVersions is regional; every region offers the
    same add-on versions for a Kubernetes version as far as the pins go)."""

    def __init__(self, eks: Any, region: str) -> None:
        self.eks = eks
        self.region = region

    @classmethod
    def from_boto3(cls, region: str) -> AwsAddonSource:
        import boto3

        return cls(boto3.client("eks", region_name=region), region)

    def _versions(self, addon: str, kubernetes_version: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            args: dict[str, Any] = {"addonName": addon, "kubernetesVersion": kubernetes_version}
            if token:
                args["nextToken"] = token
            page = self.eks.describe_addon_versions(**args)
            for row in page.get("addons", []):
                if row.get("addonName") == addon:
                    out.extend(row.get("addonVersions", []))
            token = page.get("nextToken")
            if not token:
                return out

    def pick(self, addon: str, kubernetes_version: str) -> Pick | None:
        versions = self._versions(addon, kubernetes_version)
        for v in versions:
            for c in v.get("compatibilities", []):
                if c.get("clusterVersion") == kubernetes_version and c.get("defaultVersion"):
                    return Pick(str(v["addonVersion"]), True)
        return Pick(str(versions[0]["addonVersion"]), False) if versions else None


@dataclass
class AddonRefresh:
    """What a refresh found: the pins per Kubernetes version, and what EKS did not offer."""

    pins: dict[str, dict[str, str]] = field(default_factory=dict)
    changed: list[tuple[str, str, str | None, str]] = field(default_factory=list)
    missing: list[tuple[str, str]] = field(default_factory=list)

    def summary(self, target: Path, dry_run: bool) -> str:
        lines = [f"{v} {a}: {old or '(none)'} -> {new}" for v, a, old, new in self.changed] or [
            "every pin is already what EKS answers"
        ]
        lines += [f"{v} {a}: EKS offers no version (not pinned)" for v, a in self.missing]
        verb = "would write" if dry_run else "wrote"
        return "\n".join([*lines, f"{verb} {target}"]) + "\n"

    def to_dict(self, target: Path, dry_run: bool) -> dict[str, Any]:
        return {
            "file": str(target),
            "dry_run": dry_run,
            "pins": self.pins,
            "changed": [
                {"kubernetes_version": v, "addon": a, "before": old, "after": new}
                for v, a, old, new in self.changed
            ],
            "missing": [{"kubernetes_version": v, "addon": a} for v, a in self.missing],
        }


def refresh_pins(
    current: Mapping[str, Mapping[str, str]],
    versions: Sequence[str],
    addons: Iterable[str],
    source: AddonSource,
) -> AddonRefresh:
    """Each (Kubernetes version, add-on) asked of EKS; `current`: the pins in effect."""
    out = AddonRefresh()
    for v in versions:
        row = out.pins.setdefault(v, {})
        for a in sorted(addons):
            pick = source.pick(a, v)
            if pick is None:
                out.missing.append((v, a))
                continue
            row[a] = pick.version
            old = current.get(v, {}).get(a)
            if old != pick.version:
                out.changed.append((v, a, old, pick.version))
    return out


def overlay_text(
    existing: Mapping[str, Any], result: AddonRefresh, source: AddonSource, day: str
) -> str:
    """The overlay's instances.yaml with the refreshed rows (other keys kept)."""
    data = dict(existing)
    defaults = dict(data.get("defaults") or {})
    pins = dict(defaults.get("eks_addon_versions") or {})
    sources = dict(defaults.get("eks_addon_sources") or {})
    for v, row in result.pins.items():
        if not row:
            continue
        pins[v] = {**dict(pins.get(v) or {}), **row}
        how = "defaultVersion, else the newest listed"
        sources[v] = SOURCE.format(region=source.region, day=day, how=how)
    defaults["eks_addon_versions"] = pins
    defaults["eks_addon_sources"] = sources
    data["defaults"] = defaults
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def check_overlay(
    directory: Path, text: str | None, what: str = "refreshed add-on versions"
) -> Any:
    """The catalog of the overlay `directory` with `text` as its instances.yaml (None: as it
    is), loaded from a scratch copy: the loader caches a directory's catalog by its path, so the
    overlay itself is loaded again only after it was written."""
    from accelstack.catalog.load import load_catalog

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for f in directory.glob("*.yaml"):
            shutil.copy(f, base / f.name)
        if text is not None:
            (base / "instances.yaml").write_text(text, encoding="utf-8")
        try:
            return load_catalog(overlay=base)
        except AccelstackError as exc:
            reason = str(exc).replace(f"{base}/", "")
            raise AccelstackError(f"{what} do not load: {reason}") from None


def default_target() -> Path:
    """The overlay's instances.yaml; without an overlay, an error naming the ways to set one."""
    from accelstack.catalog.overlay import overlay_file

    return overlay_file("instances.yaml", "addons refresh")


@dataclass(frozen=True)
class Request:
    """What to refresh: Kubernetes versions and add-ons (empty: every one the catalog pins)."""

    versions: tuple[str, ...] = ()
    addons: tuple[str, ...] = ()
    dry_run: bool = False


def refresh_overlay(
    req: Request, source: AddonSource, day: str, target: Path | None = None
) -> tuple[AddonRefresh, Path]:
    """Ask EKS and write the overlay's instances.yaml (unless `req.dry_run`)."""
    target = target or default_target()
    catalog = check_overlay(target.parent, None, f"{target.parent}: the overlay's files")
    pins = catalog.defaults.eks_addon_versions
    versions = req.versions or tuple(catalog.defaults.eks_versions)
    unknown = [v for v in versions if v not in catalog.defaults.eks_versions]
    if unknown:
        raise AccelstackError(
            f"--kubernetes-version {unknown[0]}: not in the catalog's EKS versions "
            f"(instances.yaml defaults.eks_versions: {', '.join(catalog.defaults.eks_versions)})"
        )
    addons = req.addons or tuple(sorted({a for row in pins.values() for a in row}))
    result = refresh_pins(pins, versions, addons, source)
    existing = yaml.safe_load(target.read_text(encoding="utf-8")) if target.is_file() else {}
    text = overlay_text(existing or {}, result, source, day)
    check_overlay(target.parent, text)
    if not req.dry_run:
        write_text_atomic(target, text)
    return result, target
