"""`accelstack prices refresh`: refresh instance prices in prices.yaml from AWS.

Sources (all read-only calls):

* on-demand: Price List API, `pricing.get_products(ServiceCode="AmazonEC2")` in us-east-1 with
  TERM_MATCH filters (instanceType, regionCode, operatingSystem=Linux, tenancy=Shared,
  preInstalledSw=NA, capacitystatus=Used, marketoption=OnDemand). Each PriceList item is a JSON
  string; the price is at terms.OnDemand.*.priceDimensions.*.pricePerUnit.USD.
* spot: `ec2.describe_spot_price_history(ProductDescriptions=["Linux/UNIX"])` in the region;
  the latest price per zone, the cheapest zone kept (the range goes into `note`).
* savings-plan-1y/3y: `savingsplans.describe_savings_plans_offering_rates` (Compute Savings
  Plan, No Upfront, Linux shared-tenancy BoxUsage), the rate for 1 and 3 year terms.
* capacity-block: `ec2.describe_capacity_block_offerings` (one instance, 24 h); hourly =
  UpfrontFee / (instances x hours), cheapest offering.

The file is rewritten line by line so comments and order survive: a refreshed row gets the new
`usd`, `as_of` (today) and `source` ("AWS Price List API ..."); a row that could not be
refreshed keeps its figures and gets `note: "not refreshed <date>: <reason>"`. A price AWS
returns for a missing (region, type, option) of a type already in the file is appended.

The AWS calls sit behind `AwsPriceSource` (boto3 clients passed in): tests use botocore's
Stubber and moto; nothing here reaches the network on import.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import yaml

from accelstack.catalog.purchase import OptionLists
from accelstack.errors import AccelstackError
from accelstack.files import check_target, write_text_atomic

#: A savings plan's term in seconds per year (the Savings Plans API's `durations` filter:
#: 365-day years). Which options are fetched, and each plan's term in years, come from the
#: loaded catalog's purchase_options (`price_api`, `commitment_years`): `_option_lists`.
YEAR = 31_536_000
ROW_RE = re.compile(r"^(?P<indent>\s*)- \{(?P<body>.*)\}\s*$")
FIELD_ORDER = ("region", "type", "option", "usd", "as_of", "estimate", "source", "note")


@dataclass(frozen=True)
class Quote:
    usd: float
    source: str
    estimate: bool = False
    note: str | None = None


class PriceSource(Protocol):
    def quote(self, region: str, instance_type: str, option: str) -> Quote | None:
        """A price, or None when AWS offers none (not an error). Raises on call failures."""


def _d(value: Any) -> float:
    return float(str(value))


def _option_lists() -> OptionLists:
    """The purchase options of the catalog in effect (a user's overlay included)."""
    from accelstack.catalog.load import load_catalog

    return load_catalog().option_lists


class AwsPriceSource:
    """The AWS calls. `ec2` maps a region to an EC2 client for that region; `years` a savings
    plan's term (default: the `commitment_years` of the catalog in effect, read when first
    needed)."""

    def __init__(
        self,
        pricing: Any,
        savingsplans: Any,
        ec2: Callable[[str], Any],
        today: str,
        years: Mapping[str, int] | None = None,
    ) -> None:
        self.pricing = pricing
        self.savingsplans = savingsplans
        self.ec2 = ec2
        self.today = today
        self._years = years

    @property
    def years(self) -> Mapping[str, int]:
        if self._years is None:
            self._years = _option_lists().commitment_years
        return self._years

    @classmethod
    def from_boto3(cls, today: str) -> AwsPriceSource:  # pragma: no cover - needs AWS
        import boto3

        clients: dict[str, Any] = {}

        def ec2(region: str) -> Any:
            if region not in clients:
                clients[region] = boto3.client("ec2", region_name=region)
            return clients[region]

        return cls(
            boto3.client("pricing", region_name="us-east-1"),
            boto3.client("savingsplans", region_name="us-east-1"),
            ec2,
            today,
        )

    def quote(self, region: str, instance_type: str, option: str) -> Quote | None:
        """The option's rate from the API its purchase-table row names (`price_api`)."""
        api = _option_lists().price_apis.get(option)
        if api == "price-list":
            return self.on_demand(region, instance_type)
        if api == "spot-price-history":
            return self.spot(region, instance_type)
        if api == "savings-plans":
            return self.savings_plan(region, instance_type, option)
        if api == "capacity-block-offerings":
            return self.capacity_block(region, instance_type)
        raise ValueError(f"{option}: the purchase table names no price_api to refresh it from")

    # -- on-demand: Price List API ------------------------------------------------------
    def on_demand(self, region: str, instance_type: str) -> Quote | None:
        filters = [
            {"Type": "TERM_MATCH", "Field": f, "Value": v}
            for f, v in (
                ("instanceType", instance_type),
                ("regionCode", region),
                ("operatingSystem", "Linux"),
                ("tenancy", "Shared"),
                ("preInstalledSw", "NA"),
                ("capacitystatus", "Used"),
                ("marketoption", "OnDemand"),
            )
        ]
        prices: set[float] = set()
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {
                "ServiceCode": "AmazonEC2",
                "Filters": filters,
                "FormatVersion": "aws_v1",
                "MaxResults": 100,
            }
            if token:
                kwargs["NextToken"] = token
            resp = self.pricing.get_products(**kwargs)
            for item in resp.get("PriceList", []):
                doc = json.loads(item) if isinstance(item, str) else item
                for term in (doc.get("terms", {}).get("OnDemand") or {}).values():
                    for dim in (term.get("priceDimensions") or {}).values():
                        usd = _d(dim.get("pricePerUnit", {}).get("USD", "0"))
                        if usd > 0 and dim.get("unit", "Hrs") == "Hrs":
                            prices.add(usd)
            token = resp.get("NextToken")
            if not token:
                break
        if not prices:
            return None
        if len(prices) > 1:
            raise AccelstackError(
                f"{len(prices)} different on-demand prices for "
                f"{instance_type} in {region}: {sorted(prices)}"
            )
        return Quote(
            prices.pop(),
            f"AWS Price List API (pricing.get_products AmazonEC2, "
            f"Linux, Shared, OnDemand), fetched {self.today}",
        )

    # -- spot -----------------------------------------------------------------------------
    def spot(self, region: str, instance_type: str) -> Quote | None:
        client = self.ec2(region)
        latest: dict[str, tuple[str, float]] = {}
        kwargs: dict[str, Any] = {
            "InstanceTypes": [instance_type],
            "ProductDescriptions": ["Linux/UNIX"],
            "StartTime": dt.datetime.now(dt.UTC),
        }
        while True:
            resp = client.describe_spot_price_history(**kwargs)
            for row in resp.get("SpotPriceHistory", []):
                if row.get("InstanceType") != instance_type:
                    continue
                zone, ts = row["AvailabilityZone"], str(row.get("Timestamp", ""))
                if zone not in latest or ts > latest[zone][0]:
                    latest[zone] = (ts, _d(row["SpotPrice"]))
            token = resp.get("NextToken")
            if not token:
                break
            kwargs["NextToken"] = token
        if not latest:
            return None
        prices = sorted(p for _, p in latest.values())
        return Quote(
            prices[0],
            f"EC2 describe_spot_price_history (Linux/UNIX), cheapest of "
            f"{len(prices)} zone(s), fetched {self.today}",
            estimate=True,
            note=f"spot moves; zones ranged {prices[0]:g}-{prices[-1]:g}",
        )

    # -- savings plans --------------------------------------------------------------------
    def savings_plan(self, region: str, instance_type: str, option: str) -> Quote | None:
        seconds = self.years[option] * YEAR
        rates: set[float] = set()
        kwargs: dict[str, Any] = {
            "savingsPlanTypes": ["Compute"],
            "savingsPlanPaymentOptions": ["No Upfront"],
            "products": ["EC2"],
            "serviceCodes": ["AmazonEC2"],
            "operations": ["RunInstances"],
            "filters": [
                {"name": "instanceType", "values": [instance_type]},
                {"name": "region", "values": [region]},
                {"name": "tenancy", "values": ["shared"]},
                {"name": "productDescription", "values": ["Linux/UNIX"]},
            ],
        }
        while True:
            resp = self.savingsplans.describe_savings_plans_offering_rates(**kwargs)
            for r in resp.get("searchResults", []):
                offering = r.get("savingsPlanOffering", {})
                if int(offering.get("durationSeconds", 0)) != seconds:
                    continue
                if "BoxUsage:" not in str(r.get("usageType", "")):
                    continue
                rates.add(_d(r["rate"]))
            token = resp.get("nextToken")
            if not token:
                break
            kwargs["nextToken"] = token
        if not rates:
            return None
        years = self.years[option]  # the row's commitment_years
        return Quote(
            min(rates),
            f"AWS Savings Plans API (Compute Savings Plan, No Upfront, "
            f"{years} yr), fetched {self.today}",
        )

    # -- capacity blocks ------------------------------------------------------------------
    def capacity_block(self, region: str, instance_type: str) -> Quote | None:
        resp = self.ec2(region).describe_capacity_block_offerings(
            InstanceType=instance_type, InstanceCount=1, CapacityDurationHours=24
        )
        hourly = []
        for o in resp.get("CapacityBlockOfferings", []):
            hours = float(o.get("CapacityBlockDurationHours") or 0)
            count = float(o.get("InstanceCount") or 0)
            if hours > 0 and count > 0 and o.get("CurrencyCode", "USD") == "USD":
                hourly.append(_d(o["UpfrontFee"]) / (hours * count))
        if not hourly:
            return None
        return Quote(
            min(hourly),
            f"EC2 describe_capacity_block_offerings (1 instance, 24 h, "
            f"cheapest of {len(hourly)} offering(s)), fetched {self.today}",
            note="offering prices vary with dates and duration",
        )


# ---------------------------------------------------------------------------------------
# Rewriting the file
# ---------------------------------------------------------------------------------------


def _fmt_usd(x: float) -> str:
    text = f"{x:.8f}".rstrip("0").rstrip(".")
    return text if text else "0"


def format_row(row: dict[str, Any]) -> str:
    parts = []
    for key in (*FIELD_ORDER, *[k for k in row if k not in FIELD_ORDER]):
        if key not in row or row[key] is None:
            continue
        v = row[key]
        if key == "usd":
            text = _fmt_usd(float(v))
        elif isinstance(v, bool):
            text = "true" if v else "false"
        elif (
            key in ("region", "type", "option")
            and re.fullmatch(r"[A-Za-z0-9.*-]+", str(v))
            and str(v) != "*"
        ):
            text = str(v)
        else:
            text = json.dumps(str(v))
        parts.append(f"{key}: {text}")
    return "{" + ", ".join(parts) + "}"


Key = tuple[str, str, str]


@dataclass
class RefreshResult:
    updated: dict[Key, Quote]
    failed: dict[Key, str]
    added: dict[Key, Quote]
    text: str

    def summary(self, path: Path, dry_run: bool) -> str:
        lines = []
        for (r, t, o), q in sorted(self.updated.items()):
            lines.append(f"refreshed {r} {t} {o}: {q.usd:g}")
        for (r, t, o), q in sorted(self.added.items()):
            lines.append(f"added     {r} {t} {o}: {q.usd:g}")
        for (r, t, o), why in sorted(self.failed.items()):
            lines.append(f"kept      {r} {t} {o}: not refreshed ({why})")
        verb = "would write" if dry_run else "wrote"
        lines.append(
            f"{verb} {path}: {len(self.updated)} refreshed, {len(self.added)} added, "
            f"{len(self.failed)} kept as they were"
        )
        return "\n".join(lines) + "\n"

    def to_dict(self, path: Path, dry_run: bool) -> dict[str, Any]:
        """JSON-ready summary (`prices refresh --format json`)."""

        def rows(found: dict[Key, Any], value: str) -> list[dict[str, Any]]:
            return [
                {
                    "region": r,
                    "instance_type": t,
                    "option": o,
                    value: v.usd if value == "usd" else v,
                }
                for (r, t, o), v in sorted(found.items())
            ]

        return {
            "file": str(path),
            "dry_run": dry_run,
            "written": not dry_run,
            "refreshed": rows(self.updated, "usd"),
            "added": rows(self.added, "usd"),
            "kept": rows(self.failed, "reason"),
        }


def _error_text(exc: Exception) -> str:
    resp = getattr(exc, "response", None)
    if isinstance(resp, dict) and "Error" in resp:
        err = resp["Error"]
        return f"{err.get('Code')}: {err.get('Message')}"
    return f"{type(exc).__name__}: {exc}"


#: (line index, indent, parsed row) of one instance row of prices.yaml.
_Row = tuple[int, str, dict[str, Any]]


def _instance_rows(lines: Sequence[str]) -> list[_Row]:
    """The flow-mapping rows under the top-level `instances:` section."""
    section = None
    rows: list[_Row] = []
    for i, line in enumerate(lines):
        if re.match(r"^[A-Za-z_]+:", line):
            section = line.split(":", 1)[0]
            continue
        m = ROW_RE.match(line.rstrip("\n"))
        if section == "instances" and m:
            row = yaml.safe_load("{" + m.group("body") + "}")
            rows.append((i, m.group("indent"), row))
    return rows


def _pairs_to_query(
    rows: Sequence[_Row], regions: Sequence[str] | None, types: Sequence[str] | None
) -> list[tuple[str, str]]:
    """(region, type) pairs to quote: the selected rows', then every asked-for combination."""

    def wanted(region: str, itype: str) -> bool:
        return (not regions or region in regions) and (not types or itype in types)

    pairs = sorted({(r["region"], r["type"]) for _, _, r in rows if wanted(r["region"], r["type"])})
    for t in types or ():
        for reg in regions or ():
            if (reg, t) not in pairs:
                pairs.append((reg, t))
    return pairs


def _query_prices(
    source: PriceSource,
    pairs: Sequence[tuple[str, str]],
    have: set[Key],
    options: Sequence[str],
) -> tuple[dict[Key, Quote], dict[Key, str], dict[Key, Quote]]:
    """Quote every option of every pair: (updated, failed, added)."""
    updated: dict[Key, Quote] = {}
    failed: dict[Key, str] = {}
    added: dict[Key, Quote] = {}
    for region, itype in pairs:
        for option in options:
            key = (region, itype, option)
            try:
                q = source.quote(region, itype, option)
            except Exception as exc:  # a failed call leaves the row as it was, marked
                if key in have:
                    failed[key] = _error_text(exc)
                continue
            if q is None:
                if key in have:
                    failed[key] = f"AWS returned no {option} price"
                continue
            (updated if key in have else added)[key] = q
    return updated, failed, added


def _quoted_row(key: Key, q: Quote, today: str) -> dict[str, Any]:
    region, itype, option = key
    return {
        "region": region,
        "type": itype,
        "option": option,
        "usd": q.usd,
        "as_of": today,
        "estimate": q.estimate,
        "source": q.source,
        "note": q.note,
    }


def _rewrite_rows(
    lines: list[str],
    rows: Sequence[_Row],
    updated: Mapping[Key, Quote],
    failed: Mapping[Key, str],
    today: str,
) -> None:
    """Replace, in place, the lines of refreshed rows and mark the rows that failed."""
    for i, ind, row in rows:
        key = (row["region"], row["type"], row["option"])
        if key in updated:
            lines[i] = f"{ind}- {format_row(_quoted_row(key, updated[key], today))}\n"
        elif key in failed:
            new = {**row, "note": f"not refreshed {today}: {failed[key]}"}
            lines[i] = f"{ind}- {format_row(new)}\n"


def _added_lines(added: Mapping[Key, Quote], indent: str, today: str) -> list[str]:
    extra = [f"{indent}# added by `accelstack prices refresh` on {today}\n"]
    for key, q in sorted(added.items()):
        extra.append(f"{indent}- " + format_row(_quoted_row(key, q, today)) + "\n")
    return extra


def refresh_text(
    text: str,
    source: PriceSource,
    today: str,
    regions: Sequence[str] | None = None,
    types: Sequence[str] | None = None,
    options: Sequence[str] | None = None,
) -> RefreshResult:
    """Refresh the instance rows of prices.yaml text; returns the new text and what changed.
    `options`: the ones fetched (default: the options the loaded catalog's purchase table names a `price_api` for)."""
    lines = text.splitlines(keepends=True)
    rows = _instance_rows(lines)
    have = {(r["region"], r["type"], r["option"]) for _, _, r in rows}
    pairs = _pairs_to_query(rows, regions, types)
    fetched = _option_lists().refreshed if options is None else options
    updated, failed, added = _query_prices(source, pairs, have, fetched)
    _rewrite_rows(lines, rows, updated, failed, today)
    if added:
        indent = rows[0][1] if rows else "  "
        last = rows[-1][0] if rows else len(lines) - 1
        lines[last + 1 : last + 1] = _added_lines(added, indent, today)
    return RefreshResult(updated, failed, added, "".join(lines))


def refresh_file(
    path: Path | None = None,
    regions: Sequence[str] | None = None,
    types: Sequence[str] | None = None,
    dry_run: bool = False,
    source: PriceSource | None = None,
    today: str | None = None,
    as_json: bool = False,
) -> str:
    """Refresh the prices file; returns the summary (text, or JSON with `as_json`). The
    result must load as a catalog. Default target: the catalog overlay's prices.yaml
    (`--catalog DIR` / ACCELSTACK_CATALOG_DIR), started from the bundled prices when the
    overlay has none; never the installed package's own file."""
    from accelstack.catalog.load import CATALOG_DIR, load_catalog

    target = path or default_target()
    current = _read_prices(target)
    # an explicit file is checked as the bundled catalog's prices, the overlay's as an overlay
    rest, check = (CATALOG_DIR, load_catalog) if path else (target.parent, _load_overlay)
    checked = _check_loads(current, rest, check, f"{target}: cannot refresh a broken file")
    # the options of the catalog in effect: the overlay being refreshed, as it is now
    refreshed = (_option_lists() if path else checked.option_lists).refreshed
    day = today or dt.date.today().isoformat()
    src = source or AwsPriceSource.from_boto3(day)
    result = refresh_text(current, src, day, regions, types, refreshed)
    if not result.updated and not result.added and result.failed:
        first = next(iter(sorted(result.failed.items())))
        raise AccelstackError(
            f"no price could be refreshed ({len(result.failed)} rows); "
            f"first: {' '.join(first[0])}: {first[1]}"
        )
    _check_loads(result.text, rest, check)
    if not dry_run:
        write_text_atomic(target, result.text)
    if as_json:
        from accelstack.jsonout import dumps

        return dumps(result.to_dict(target, dry_run))
    return result.summary(target, dry_run)


def _load_overlay(directory: Path) -> Any:
    from accelstack.catalog.load import load_catalog

    return load_catalog(overlay=directory)


def default_target() -> Path:
    """The overlay's prices.yaml; without an overlay, an error naming the ways to set one."""
    from accelstack.catalog.overlay import overlay_file

    return overlay_file("prices.yaml", "prices refresh", ", or name a file with --file")


def _read_prices(target: Path) -> str:
    """The prices file to refresh, refused before any AWS call when it cannot be rewritten.
    An overlay without prices yet starts from the bundled file."""
    from accelstack.catalog.load import CATALOG_DIR

    check_target(target)
    if not target.exists() and target.name == "prices.yaml":
        target = CATALOG_DIR / "prices.yaml"
    try:
        return target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise AccelstackError(f"{target}: cannot read the prices file: {reason}") from None


def _check_loads(
    text: str,
    catalog_dir: Path,
    loader: Callable[..., Any],
    what: str = "refreshed prices do not load",
) -> Any:
    """Validate a prices file (the current one, the rewritten one) with the catalog loader;
    returns the catalog it loads."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for f in catalog_dir.glob("*.yaml"):
            shutil.copy(f, base / f.name)
        (base / "prices.yaml").write_text(text)
        try:
            return loader(base)
        except AccelstackError as exc:
            reason = str(exc).replace(f"{base}/", "")  # name the file, not the scratch copy
            raise AccelstackError(f"{what}: {reason}") from None
