"""What `diff` records per stack besides the plan: the inputs a person edited (the spec's values
and the stack config, flattened to dotted paths, for before -> after lines), the monthly cost of
each priced resource (for the per-resource cost column), each priced line item with its
quantity and unit price, and the usage-priced items of the side's usage file."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import yaml

from accelstack.plan.diffprice import PricedLine, SideUsage, UsageItem

if TYPE_CHECKING:
    from accelstack.catalog import Catalog
    from accelstack.cost.guard import Verdict
    from accelstack.cost.usage import UsageFile
    from accelstack.stackconfig import StackRef

#: A value longer than this is shortened in before -> after lines (user data, policies).
VALUE_LIMIT = 120


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted path -> scalar (lists by index: pools[0].nodes)."""
    out: dict[str, Any] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            out |= flatten(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out |= flatten(v, f"{prefix}[{i}]")
        if not value:
            out[prefix] = []
    else:
        out[prefix] = value
    return out


def inputs_of(ref: StackRef) -> dict[str, Any]:
    """The spec's values (`spec.<path>`) and the stack config (`config.<key>`) of one stack."""
    try:
        spec = yaml.safe_load(ref.spec.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        spec = None
    out = {f"spec.{k}": v for k, v in flatten(spec if isinstance(spec, dict) else {}).items()}
    out |= {f"config.{k}": v for k, v in flatten(dict(ref.config)).items()}
    if ref.config_file is not None:
        out["config.(file)"] = ref.config_file.name
    return out


def shorten(value: Any) -> Any:
    """A value as a report shows it: scalars kept, long text cut with its length."""
    if isinstance(value, bool | int | float) or value is None:
        return value
    text = value if isinstance(value, str) else yaml.safe_dump(value, default_flow_style=True)
    text = text.strip()
    if len(text) > VALUE_LIMIT:
        return f"{text[: VALUE_LIMIT - 20]}... ({len(text)} chars)"
    return text


def _text_of(value: Any) -> str | None:
    """User data as text: base64 decoded when it is (launch templates carry it encoded)."""
    if not isinstance(value, str):
        return None
    import base64
    import binascii

    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return value


#: At most this many changed lines of one text are listed line by line in a comment.
LINES_SHOWN = 40


def _changed_lines(before: Any, after: Any) -> tuple[list[str], list[str]] | None:
    """For multi-line text (user data, scripts): (removed, added) lines, else None."""
    import difflib

    a, b = _text_of(before), _text_of(after)
    if a is None or b is None or ("\n" not in a and "\n" not in b):
        return None
    diff = list(difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0))
    gone = [d[1:].strip() for d in diff if d.startswith("-") and not d.startswith("---")]
    new = [d[1:].strip() for d in diff if d.startswith("+") and not d.startswith("+++")]
    return gone, new


def value_change(key: str, before: Any, after: Any) -> dict[str, Any]:
    """{key, before, after} as a report shows it: multi-line text by its changed lines (also
    listed one by one, `removed` and `added`, for a comment to show line by line)."""
    lines = _changed_lines(before, after)
    if lines is not None:
        gone, new = lines
        return {
            "key": key,
            "before": shorten(" | ".join(gone)) or "(no line)",
            "after": shorten(" | ".join(new)) or "(no line)",
            "removed": [shorten(x) for x in gone[:LINES_SHOWN]],
            "added": [shorten(x) for x in new[:LINES_SHOWN]],
        }
    return {"key": key, "before": shorten(before), "after": shorten(after)}


def changed_values(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """[{key, before, after}] for every key whose value differs (absent: None)."""
    keys = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    return [value_change(k, before.get(k), after.get(k)) for k in keys]


def resource_costs(verdict: Verdict) -> dict[str, float]:
    """Resource name -> monthly USD of its priced line items (a resource may have several)."""
    hours = verdict.cost.monthly_usd / verdict.cost.hourly_usd if verdict.cost.hourly_usd else 0
    out: dict[str, float] = {}
    for item in verdict.cost.items:
        out[item.resource] = round(out.get(item.resource, 0.0) + item.hourly_usd * hours, 2)
    return out


def priced_lines(verdict: Verdict) -> tuple[PricedLine, ...]:
    """Each priced line item of the verdict: quantity, unit, unit price, monthly USD."""
    c = verdict.cost
    hours = c.monthly_usd / c.hourly_usd if c.hourly_usd else 0.0
    return tuple(PricedLine.of(item, hours) for item in c.items)


def side_usage(
    stack: tuple[str, str],
    types: Iterable[str],
    usage: UsageFile,
    where: tuple[Catalog, str],
) -> SideUsage:
    """The usage-priced items of one stack (`stack`: its name and region) from a side's usage
    file, priced by the same `cost.usage.usage_lines` as `price --usage` (each amount x the times it
    is billed / what one rate buys x the catalog's rate for the region; a group whose resource
    types the stack lacks is not priced). It reads what a side row holds, not a
    resolved stack, since a base planned by another accelstack has only its plan document
    here: `types`, the resource types the side's plan prices; `where`, the catalog whose rates
    apply and the file's name as the document shows it (relative to the project). A test holds
    it equal to `usage_cost` (tests/plan/test_diffside.py)."""
    from accelstack.cost.usage import usage_lines

    catalog, source = where
    items = tuple(
        UsageItem(
            *(ln.group, ln.key, ln.label, ln.amount, ln.item, ln.rate_usd, ln.unit),
            ln.billed_times,
            None if ln.monthly_usd is None else round(ln.monthly_usd, 2),
            ln.estimate,
        )
        for ln in usage_lines(*stack, types, usage, catalog)
    )
    return SideUsage(source, items)
