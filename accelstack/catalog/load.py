"""Reading the catalog: each section's YAML file (bundled, with the user's overlay on top), the
parsed-catalog cache, the pydantic models built into a `Catalog`, and the checks across tables
that one file's schema cannot state."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

import accelstack.catalog.cache as cache
from accelstack.catalog.facts import (
    InstanceType,
)
from accelstack.catalog.model import Catalog
from accelstack.catalog.overlay import check_dir, check_keys, identity, merge, overlay_dir
from accelstack.catalog.records import TrainingRecord
from accelstack.catalog.sections import (
    BY_FILE,
    SECTIONS,
    Section,
    section_of_field,
)
from accelstack.catalog.yamlread import safe_load
from accelstack.errors import (
    CatalogError,
    did_you_mean,
)

CATALOG_DIR = Path(__file__).resolve().parent
_AS_OF = re.compile(r"^\d{4}(-\d{2}){0,2}$")


def _where(name: str, base: Path, overlay: Path | None) -> Path:
    """The file an error in `name` is reported against: the overlay's when it has one."""
    if overlay is not None and (overlay / name).exists():
        return overlay / name
    return base / name


def _paths(section: Section, base: Path, overlay: Path | None) -> tuple[Path, Path | None]:
    """The bundled file of a section, and the overlay's file of that name if it has one."""
    path = base / section.file
    if not path.exists() and base != CATALOG_DIR:  # a partial catalog directory (tests)
        path = CATALOG_DIR / section.file
    top = overlay / section.file if overlay is not None else None
    return path, top if top is not None and top.exists() else None


def _read(section: Section, base: Path, overlay: Path | None = None) -> dict[str, object]:
    """A catalog file, with the overlay's file of that name merged on top (overlay.py), the
    section's lists of rows merged row by row."""
    path, top = _paths(section, base, overlay)
    data = _read_path(path)
    if top is not None:
        own = _read_path(top)
        check_keys(own, data, top)
        data = merge(data, own, section.rows)
    return data


def _cache_key(base: Path, overlay: Path | None) -> str | None:
    """The parsed-catalog cache's name for these files (None: one cannot be read; loading
    then reports it)."""
    try:
        read = [p for s in SECTIONS for p in _paths(s, base, overlay) if p is not None]
        return cache.key((str(p), p.read_bytes()) for p in read)
    except OSError:
        return None


def _read_path(path: Path) -> dict[str, object]:
    try:
        data = safe_load(path.read_text(encoding="utf-8"))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise CatalogError(
            f"{path}: cannot read catalog file: {exc.problem or exc.context}{where}"
        ) from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise CatalogError(f"{path}: cannot read catalog file: {reason}") from None
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: catalog file must be a mapping (is it truncated?)")
    return data


def _fields(
    base: Path, overlay: Path | None = None
) -> tuple[dict[str, object], dict[str, dict[str, object]]]:
    """The catalog's fields from its files (every section of `SECTIONS`, in order), and each
    file's merged mapping; a missing or misshapen section names its file and YAML path."""
    fields: dict[str, object] = {}
    files: dict[str, dict[str, object]] = {}
    for section in SECTIONS:
        data = files[section.file] = _read(section, base, overlay)
        where = _where(section.file, base, overlay)
        try:
            fields.update(section.build(data, where, fields))
        except KeyError as exc:
            raise CatalogError(f"{where}: no section {exc} (is the file truncated?)") from None
        except ValidationError as exc:
            raise CatalogError(f"{where}: {_problem(exc, section, where, data, False)}") from None
        except (TypeError, AttributeError, ValueError):
            raise CatalogError(
                f"{where}: a section has the wrong shape (is the file truncated?)"
            ) from None
    return fields, files


def _problem(
    exc: ValidationError, section: Section, where: Path, merged: dict[str, object], field: bool
) -> str:
    """`path: message (N problems in all)` of a validation error's first problem, the path in
    YAML terms: a `Catalog` field (`field`) as the file's key, a row of a merged list at its
    index in the overlay's own file when it came from there."""
    err = exc.errors()[0]
    loc: list[int | str] = list(err["loc"])
    if field and loc:
        key = section.fields.get(str(loc[0]), "")
        loc = [key, *loc[1:]] if key else loc[1:]
    if len(loc) > 1 and str(loc[0]) in section.rows and where.parent != CATALOG_DIR:
        own = _overlay_index(merged, where, str(loc[0]), section.rows[str(loc[0])], loc[1])
        loc[1] = own if own is not None else loc[1]
    path = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in loc).lstrip(".")
    return f"{path + ': ' if path else ''}{err['msg']} ({exc.error_count()} problems in all)"


def catalog_file(name: str, overlay: Path | None = None) -> dict[str, Any]:
    """One bundled catalog file merged with the overlay's (default: the one in effect), for
    the modules that read a file themselves (`Section.reader`); checked when the catalog
    loads (`load_catalog`)."""
    section = BY_FILE[name]
    return _read(section, CATALOG_DIR, overlay if overlay is not None else overlay_dir())


def load_catalog(base: Path | None = None, overlay: Path | None = None) -> Catalog:
    """Load and validate the catalog files (default: the ones beside this module, with the
    user's overlay on top: `--catalog DIR` / ACCELSTACK_CATALOG_DIR, see overlay.py); cached
    per directory. A broken file is one CatalogError line naming it."""
    if overlay is not None:
        overlay = check_dir(overlay)
    elif base is None:
        overlay = overlay_dir()
    return _load(base or CATALOG_DIR, overlay)


@lru_cache(maxsize=4)
def _load(base: Path, overlay: Path | None = None) -> Catalog:
    """The catalog of these files: from the parsed-catalog cache (cache.py) when it has them,
    else parsed, validated and checked, then stored there."""
    name = _cache_key(base, overlay)
    cached = cache.read(name) if name else None
    if isinstance(cached, Catalog):
        return cached
    catalog = _parse(base, overlay)
    if name:
        cache.write(name, catalog)
    return catalog


def _parse(base: Path, overlay: Path | None) -> Catalog:
    fields, files = _fields(base, overlay)
    try:
        catalog = Catalog.model_validate(fields)
    except ValidationError as exc:
        raise _validation_error(exc, files, base, overlay) from None
    for check, prefixes in _CHECKS:
        try:
            check(catalog)
        except CatalogError as exc:
            name = prefixes.get(re.split(r"[.:\s\[]", str(exc), maxsplit=1)[0], "instances.yaml")
            raise CatalogError(f"{_where(name, base, overlay)}: {exc}") from None
    return catalog


def _validation_error(
    exc: ValidationError,
    files: dict[str, dict[str, object]],
    base: Path,
    overlay: Path | None,
) -> CatalogError:
    """One line: the file the bad value came from (the overlay's when it has that file) and
    its YAML path there."""
    loc = exc.errors()[0]["loc"]
    section = (section_of_field(str(loc[0])) if loc else None) or SECTIONS[0]
    where = _where(section.file, base, overlay)
    return CatalogError(f"{where}: {_problem(exc, section, where, files[section.file], True)}")


def _overlay_index(
    merged: dict[str, object], where: Path, key: str, ident: tuple[str, ...], index: object
) -> int | None:
    """The index, in the overlay's own list, of the merged row at `index` (None: the row is
    the bundled file's)."""
    rows = merged.get(key)
    if not isinstance(rows, list) or not isinstance(index, int) or index >= len(rows):
        return None
    own = _read_path(where).get(key)
    wanted = identity(rows[index], ident)
    for i, row in enumerate(own if isinstance(own, list) else []):
        if identity(row, ident) == wanted:
            return i
    return None


def _check_curves(c: Catalog) -> None:
    """Every accelerated family has one curve per precision it has a peak for; a fitted curve
    names steady-state records of its family and precision; an extrapolated one names a
    fitted curve. Every record names a known family."""
    records = {r.id: r for r in c.records}
    curves = c.throughput.curves
    for name, fam in c.families.items():
        for precision in fam.peak_tflops:
            n = sum(cur.family == name and precision in cur.precisions for cur in curves)
            if n != 1:
                raise CatalogError(f"throughput: curves: need exactly one {name}/{precision}")
    for i, cur in enumerate(curves):
        where = f"throughput: curves[{i}] ({cur.family})"
        if cur.family not in c.families:
            raise CatalogError(f"{where}: unknown family{did_you_mean(cur.family, c.families)}")
        fitted = cur.intercept is not None and cur.slope is not None and cur.params_range
        if cur.basis == "fitted" and (not fitted or not cur.records or cur.from_curve):
            raise CatalogError(f"{where}: a fitted curve needs coefficients and records")
        if cur.basis == "extrapolated" and (cur.from_curve is None or cur.records):
            raise CatalogError(f"{where}: an extrapolated curve needs from_curve, no records")
        for rid in cur.records:
            rec = records.get(rid)
            if rec is None:
                raise CatalogError(f"{where}: unknown record '{rid}'{did_you_mean(rid, records)}")
            if rec.family != cur.family or rec.precision not in cur.precisions:
                raise CatalogError(f"{where}: record '{rid}' is {rec.family}/{rec.precision}")
            if rec.kind != "steady_state":
                raise CatalogError(f"{where}: record '{rid}' is {rec.kind}, not steady_state")
        for precision in cur.precisions:
            c.mfu_curve(cur.family, precision)
    for rec in c.records:
        if rec.family not in c.families:
            raise CatalogError(f"records: {rec.id}: unknown family '{rec.family}'")
    _check_step(c, records)


def _check_step(c: Catalog, records: dict[str, TrainingRecord]) -> None:
    """Every family with a curve has one step entry; an expert term names steady-state
    mixture-of-experts records of its family."""
    names = [s.family for s in c.throughput.step]
    for family in sorted({cur.family for cur in c.throughput.curves}):
        if names.count(family) != 1:
            raise CatalogError(
                f"throughput: step: need exactly one entry for {family} (its attention, link and "
                "expert terms; a new family: {family: ..., basis: extrapolated, from_family: "
                "h100, attention_relative_to_dense: true, inherit_experts: false, reason: ...})"
            )
        c.step_family(family)
    for entry in c.throughput.step:
        for rid in entry.experts.records if entry.experts else ():
            rec = records.get(rid)
            if rec is None:
                raise CatalogError(
                    f"throughput: step {entry.family}: unknown record '{rid}'"
                    f"{did_you_mean(rid, records)}"
                )
            if rec.family != entry.family or not rec.experts:
                raise CatalogError(
                    f"throughput: step {entry.family}: record '{rid}' is not a mixture of "
                    f"experts of {entry.family}"
                )


def _check_integrity(c: Catalog) -> None:
    """Cross-references inside the catalog; a broken catalog must not load."""
    for name, fam in c.families.items():
        if fam.device_kind not in c.device_kinds:
            raise CatalogError(f"families.{name}.device_kind: unknown '{fam.device_kind}'")
    _check_curves(c)
    _check_frameworks(c)
    for name, inst in c.instances.items():
        if inst.family not in c.families:
            raise CatalogError(f"instances.{name}.family: unknown '{inst.family}'")
        if inst.efa_interfaces > inst.network_cards:
            raise CatalogError(f"instances.{name}: more EFA interfaces than network cards")
        for field in (*inst.dit_exceptions, *inst.estimated_fields):
            if field not in InstanceType.model_fields:
                raise CatalogError(f"instances.{name}: unknown field '{field}' in exceptions")
    for rate in (*c.instance_rates, *c.service_rates):
        if not _AS_OF.match(rate.as_of) or not rate.source.strip():
            raise CatalogError(
                f"prices: {rate.type or rate.item} in {rate.region}: every row needs a source "
                f"and as_of YYYY, YYYY-MM or YYYY-MM-DD (found as_of '{rate.as_of}')"
            )
    seen: set[tuple[str, str, str]] = set()
    for rate in c.instance_rates:
        key = (rate.region, rate.type or "", rate.option or "")
        if rate.type not in c.instances:
            raise CatalogError(f"prices: unknown instance type '{rate.type}'")
        row = c.purchase_options.get(rate.option or "")
        if row is None or row.rate_alias:
            raise CatalogError(f"prices: {rate.type} in {rate.region}: bad option '{rate.option}'")
        if key in seen:
            raise CatalogError(f"prices: duplicate row {key}")
        seen.add(key)
    for name, chart in c.charts.items():
        if chart.device_kind is not None and chart.device_kind not in c.device_kinds:
            raise CatalogError(f"charts.{name}.device_kind: unknown '{chart.device_kind}'")
    for i, ds in enumerate(c.launch.daemonsets):
        if ds.chart is not None and ds.chart not in c.charts:
            raise CatalogError(
                f"charts: no row '{ds.chart}', which launch.yaml daemonsets[{i}] ({ds.name}) "
                f"is created by{did_you_mean(ds.chart, c.charts)}"
            )
    if c.defaults.kubernetes_version not in c.defaults.eks_versions:
        raise CatalogError("defaults.kubernetes_version is not in defaults.eks_versions")
    if c.defaults.system_instance_type not in c.instances:
        raise CatalogError("defaults.system_instance_type is not in instances")


def _check_launch(c: Catalog) -> None:
    """launch.yaml: every Python environment names a known device kind and family, and every
    accelerated family has exactly one default environment."""
    defaults: dict[str, int] = {}
    for i, env in enumerate(c.launch.dlami_python_envs):
        if env.device_kind not in c.device_kinds:
            raise CatalogError(
                f"launch.dlami_python_envs[{i}].device_kind: unknown '{env.device_kind}'"
            )
        for fam in env.families:
            if c.families.get(fam) is None or c.families[fam].device_kind != env.device_kind:
                raise CatalogError(
                    f"launch.dlami_python_envs[{i}].families: '{fam}' is not a "
                    f"{env.device_kind} family"
                )
            defaults[fam] = defaults.get(fam, 0) + 1
    for name, family in c.families.items():
        if c.device_kinds[family.device_kind].device_resource and defaults.get(name) != 1:
            raise CatalogError(
                f"launch.dlami_python_envs: family '{name}' needs exactly one default environment"
            )


def _check_daemonsets(c: Catalog) -> None:
    """launch.yaml daemonsets: each row is created by exactly one of an add-on and a chart
    (which `_check_integrity` holds to a row of `charts`), and its device kind is known."""
    for i, ds in enumerate(c.launch.daemonsets):
        at = f"launch.daemonsets[{i}]"
        if (ds.addon is None) == (ds.chart is None):
            raise CatalogError(f"{at}: name exactly one of addon and chart (found {ds.name!r})")
        if ds.device_kind is not None and ds.device_kind not in c.device_kinds:
            raise CatalogError(f"{at}.device_kind: unknown '{ds.device_kind}'")


def _check_addon_sources(c: Catalog) -> None:
    """Every Kubernetes version's add-on row says where it came from."""
    d = c.defaults
    for version in d.eks_addon_versions:
        if not d.eks_addon_sources.get(version):
            raise CatalogError(
                f"defaults.eks_addon_sources: no source for the add-on versions of Kubernetes "
                f"{version} (defaults.eks_addon_versions)"
            )


def _check_frameworks(c: Catalog) -> None:
    """Every framework a device kind or family names exists and runs on that device kind."""
    for name, fw in c.frameworks.items():
        if fw.device_kind not in c.device_kinds:
            raise CatalogError(f"frameworks.{name}.device_kind: unknown '{fw.device_kind}'")
    for kname, kind in c.device_kinds.items():
        for fw_name in (
            *kind.frameworks,
            *([kind.default_framework] if kind.default_framework else []),
        ):
            if fw_name not in c.frameworks or c.frameworks[fw_name].device_kind != kname:
                raise CatalogError(f"device_kinds.{kname}: framework '{fw_name}' is not one of its")
    for fname, fam in c.families.items():
        allowed_here = c.family_frameworks(fam)
        default = c.default_framework(fam)
        for fw_name in allowed_here:
            if fw_name not in c.device_kinds[fam.device_kind].frameworks:
                raise CatalogError(
                    f"families.{fname}.frameworks: '{fw_name}' is not a framework of its device kind"
                )
        if default is not None and default not in allowed_here:
            raise CatalogError(
                f"families.{fname}.default_framework: '{default}' is not allowed there"
            )


#: The integrity checks run on a loaded catalog, each with the file its errors name (by the
#: message's first word; instances.yaml otherwise).
_CHECKS: tuple[tuple[Callable[[Catalog], None], dict[str, str]], ...] = (
    (
        _check_integrity,
        {"prices": "prices.yaml", "throughput": "throughput.yaml", "records": "records.yaml"},
    ),
    (_check_launch, {"launch": "launch.yaml"}),
    (_check_daemonsets, {"launch": "launch.yaml"}),
    (_check_addon_sources, {}),
)
