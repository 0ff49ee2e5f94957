"""A base ref planned with the accelstack it keeps: the cross-version side of `diff`.

An `init` project installs accelstack from the wheel it keeps in wheels/ (cli/project_wheel.py),
so a pull request that only replaces that wheel changes what `pulumi up` does with every stack.
Planning both refs with the running accelstack would show nothing: when the base ref keeps
another wheel than the head (name or blob), the base's stacks are planned by the base's own
accelstack, run from its wheel in a subprocess (`plan --format json`), and every output names
the version that planned each side.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from accelstack.cli.gittree import blobs, git, tree
from accelstack.cli.project_wheel import WHEEL_DIR
from accelstack.errors import Problem, SpecError

if TYPE_CHECKING:
    from collections.abc import Callable

    from accelstack.cli.trust import GateFiles
    from accelstack.plan.diffmodel import PlannedWith, SideCost
    from accelstack.plan.diffprice import PricedLine
    from accelstack.plan.diffside import SideRow
    from accelstack.stackconfig import StackRef

#: The plan document's own keys besides the plan (`accelstack plan --format json`).
_NOT_PLAN = frozenset({"cost", "verdict", "violations", "warnings", "changes"})

#: Environment variables the base's accelstack is given from ours: none of ACCELSTACK_* or AWS_*
#: (the gate's ceiling and overlay are passed explicitly), except the clock tests pin and where
#: the user keeps caches (a cache entry is named by the code that wrote it: catalog/cache.py).
_KEPT_ACCELSTACK_ENV = ("ACCELSTACK_TODAY", "ACCELSTACK_CACHE_DIR")

#: Seconds one base stack may take to plan with the old version.
PLAN_TIMEOUT_S = 600


@dataclass(frozen=True)
class KeptWheel:
    """The accelstack wheel a ref keeps: its path in the project and its git blob id."""

    path: str
    blob: str

    @property
    def version(self) -> str:
        """The version in the wheel's file name (PEP 427: name-version-...)."""
        parts = PurePosixPath(self.path).name.split("-")
        return parts[1] if len(parts) > 2 else "unknown"


def kept_wheel(ref: str, cwd: Path | None = None) -> KeptWheel | None:
    """The accelstack wheel the project (the current folder) keeps at `ref`, if any."""
    top = git("rev-parse", "--show-prefix", cwd=cwd).stdout.strip().rstrip("/")
    folder = f"{top}/{WHEEL_DIR}" if top else WHEEL_DIR
    found = [
        KeptWheel(name[len(top) + 1 :] if top else name, sha)
        for mode, sha, name in tree(ref, f"{folder}/", cwd)
        if mode in ("100644", "100755")
        and PurePosixPath(name).parent == PurePosixPath(folder)
        and fnmatch(PurePosixPath(name).name, "accelstack-*.whl")
    ]
    if len(found) > 1:
        names = ", ".join(w.path for w in found)
        raise SpecError(
            [
                Problem(
                    f"{ref}:{folder}",
                    "",
                    f"keeps {len(found)} accelstack wheels ({names}); "
                    "allowed: one, the one requirements.txt installs",
                )
            ]
        )
    return found[0] if found else None


def running_version() -> str:
    import accelstack

    return accelstack.__version__


def planned_with(base: KeptWheel | None, head: KeptWheel | None) -> PlannedWith:
    """Which accelstack plans each side: the base's kept wheel when it differs from the head's,
    else the running accelstack for both (the head always: it is what CI installs from the
    head's kept wheel; a head that keeps another version is named)."""
    from accelstack.plan.diffmodel import PlannedWith

    now = running_version()
    keeps = head.version if head is not None and head.version != now else None
    if base is not None and base != head:
        return PlannedWith(base.version, now, base.path, keeps)
    return PlannedWith(now, now, None, keeps)


def unpack(wheel: KeptWheel, ref: str, into: Path, cwd: Path | None = None) -> Path:
    """The base's wheel blob, unpacked under `into` (an importable folder); one line when it
    is not a wheel."""
    (data,) = blobs([wheel.blob], cwd)
    archive = into / PurePosixPath(wheel.path).name
    into.mkdir(parents=True, exist_ok=True)
    archive.write_bytes(data)
    target = into / "site"
    try:
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(target)  # zipfile drops absolute and ".." parts of member names
    except zipfile.BadZipFile:
        raise SpecError(
            [
                Problem(
                    f"{ref}:{wheel.path}",
                    "",
                    "is not a wheel (zip); allowed: the wheel `accelstack init` keeps",
                )
            ]
        ) from None
    if not (target / "accelstack" / "cli").is_dir():
        raise SpecError(
            [
                Problem(
                    f"{ref}:{wheel.path}",
                    "",
                    "holds no accelstack/cli package; allowed: the wheel `accelstack init` keeps",
                )
            ]
        )
    return target


def _env(site: Path, gates: GateFiles) -> dict[str, str]:
    """Our environment without ACCELSTACK_* and AWS_* (offline; the old version is given only
    what the base needs), the wheel first on the path, the trusted overlay if any."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ACCELSTACK_", "AWS_")) or k in _KEPT_ACCELSTACK_ENV
    }
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p
    )
    env["PYTHONNOUSERSITE"] = "1"
    if gates.overlay is not None and gates.overlay.is_dir():
        env["ACCELSTACK_CATALOG_DIR"] = str(gates.overlay)
    return env


def run_old_plan(ref: StackRef, site: Path, gates: GateFiles) -> subprocess.CompletedProcess[str]:
    """`accelstack plan SPEC --stack NAME --format json` with the base's accelstack, in the
    base's folder (-P: that folder is not on the import path)."""
    argv = [sys.executable, "-P", "-m", "accelstack.cli", "plan", str(ref.spec)]
    argv += ["--stack", ref.stack, "--format", "json"]
    if gates.ceiling is not None and gates.ceiling.is_file():
        argv += ["--ceiling", str(gates.ceiling)]
    return subprocess.run(
        argv,
        cwd=ref.root,
        env=_env(site, gates),
        capture_output=True,
        text=True,
        check=False,
        timeout=PLAN_TIMEOUT_S,
    )


def old_row(ref: StackRef, site: Path, gates: GateFiles, shown: str, version: str) -> SideRow:
    """The diff side row (`planning.side_row`'s) of one base stack planned by the base's
    accelstack, read from its `plan --format json` (the JSON boundary): the plan document,
    the priced verdict and each line item's quantity and unit price; its usage-priced items
    from the base's usage file at the running catalog's rates. A plan that fails the budget
    or the rules still prints its document (exit 1); a stack the old version refuses is an
    error row, as one the running version refuses; output that cannot be read is refused in
    one line."""
    from accelstack.plan.diff_inputs import inputs_of
    from accelstack.plan.diffside import SideRow

    done = run_old_plan(ref, site, gates)
    doc = _document(done.stdout)
    if doc is None and done.returncode != 0 and not done.stdout.strip():
        code = done.returncode if done.returncode > 0 else 2
        return SideRow(file=shown, errors=tuple(_error_lines(done, ref, shown)), exit_code=code)
    if doc is None:
        raise SpecError(
            [
                Problem(
                    shown,
                    "",
                    f"accelstack {version} (the base's wheel) printed no plan "
                    f"document (exit {done.returncode}); allowed: `plan --format json` output",
                )
            ]
        )
    try:
        cost, lines = _cost(doc), _lines(doc)
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        raise SpecError(
            [
                Problem(
                    shown,
                    "",
                    f"accelstack {version}'s plan document lacks {exc}; allowed: "
                    "the `plan --format json` document (cost, verdict, violations)",
                )
            ]
        ) from None
    plan = {k: v for k, v in doc.items() if k not in _NOT_PLAN}
    row = SideRow(file=shown, inputs=inputs_of(ref), plan=plan, cost=cost, lines=lines)
    return _with_usage(row, ref, doc)


def _with_usage(row: SideRow, ref: StackRef, doc: dict[str, Any]) -> SideRow:
    """The row with the usage-priced items of the base's usage file, priced by the running
    accelstack's catalog for the region the old plan names (the old version may know no usage
    file); a usage file that cannot be read makes it an error row."""
    from dataclasses import replace

    from accelstack.catalog import load_catalog
    from accelstack.cli.planning import error_row
    from accelstack.cli.usagefile import usage_at
    from accelstack.plan.diff_inputs import side_usage

    try:
        usage = usage_at(ref.root)
    except Exception as exc:  # a bad file: one line, as the running version says it
        return error_row(ref, exc, row.file)
    region = str(doc.get("region") or (doc.get("cost") or {}).get("region") or "")
    if usage is None or not region:
        return row
    types = (str(r.get("type")) for r in doc.get("resources") or () if isinstance(r, dict))
    name = str(doc.get("stack") or ref.stack)  # the resolved stack's name, as `price` keys it
    priced = side_usage((name, region), types, usage[0], (load_catalog(), usage[1]))
    return replace(row, usage=priced)


def old_planner(site: Path, gates: GateFiles, version: str) -> Callable[[StackRef, str], SideRow]:
    """A base-side planner for `diff`: each stack planned by the base's accelstack."""
    from accelstack.cli.planning import rel_to

    def plan(ref: StackRef, label: str) -> SideRow:
        return old_row(ref, site, gates, f"{label}:{rel_to(ref.spec, ref.root)}", version)

    return plan


def _document(text: str) -> dict[str, Any] | None:
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("resources"), list) else None


def _hours(doc: dict[str, Any]) -> float:
    """Hours per month of the plan document's verdict (monthly over hourly)."""
    hourly, monthly = float(doc["cost"]["hourly_usd"]), float(doc["cost"]["monthly_usd"])
    return monthly / hourly if hourly else 0.0


def _cost(doc: dict[str, Any]) -> SideCost:
    """The side row's cost from the plan document's verdict (`planning.side_row`)."""
    from accelstack.plan.diffmodel import SideCost

    c = doc["cost"]
    hours = _hours(doc)
    items: dict[str, float] = {}
    for item in c["items"]:
        name = str(item["resource"])
        items[name] = round(items.get(name, 0.0) + float(item["hourly_usd"]) * hours, 2)
    return SideCost(
        hourly_usd=round(float(c["hourly_usd"]), 4),
        monthly_usd=round(float(c["monthly_usd"]), 2),
        run_usd=round(float(c["training"]["run_usd"]), 2),
        estimate=bool(c["estimate"]),
        ok=bool(c["ok"]),
        verdict=str(c["verdict"]),
        violations=tuple(_violation_line(v) for v in doc["violations"]),
        items=items,
    )


def _lines(doc: dict[str, Any]) -> tuple[PricedLine, ...]:
    """Each line item of the plan document's verdict with its quantity and unit price (an
    older accelstack's item without them is left out: its resource keeps its monthly cost)."""
    from accelstack.plan.diffprice import PricedLine

    hours = _hours(doc)
    found = (PricedLine.from_item_dict(i, hours) for i in doc["cost"]["items"])
    return tuple(line for line in found if line is not None)


def _violation_line(v: dict[str, Any]) -> str:
    """`Violation.line()` of a violation document."""
    return f"{v['resource']}: {v['message']} [{v['rule']}; {v['source']}]"


def _error_lines(done: subprocess.CompletedProcess[str], ref: StackRef, shown: str) -> list[str]:
    from accelstack.spec.secrets import redact

    lines = [x for x in done.stderr.splitlines() if x.strip()][-5:]
    lines = [x.replace(str(ref.spec), shown).replace(str(ref.root) + "/", "") for x in lines]
    return [redact(x) for x in lines] or [f"the base's accelstack exited {done.returncode}"]
