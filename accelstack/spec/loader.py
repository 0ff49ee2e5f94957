"""Reading a spec: YAML to mapping, shape (pydantic) to `Spec`, rules to problems.

Every problem becomes one `Problem` line: file, YAML path, what was found, what is allowed.
`load_spec` raises `SpecError` with all of them; the CLI prints them and exits 2.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from accelstack.catalog import Catalog, load_catalog
from accelstack.errors import Problem, SpecError, did_you_mean
from accelstack.spec.models import Spec
from accelstack.spec.rules import check_rules

# ---------------------------------------------------------------------------------------


def _yaml_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The pydantic model that owns the last key of `loc` (for 'did you mean' on unknown keys)."""
    model: Any = Spec
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            return None
        ann = field.annotation
        candidates = [ann, *getattr(ann, "__args__", ())]
        nxt = None
        for c in candidates:
            for sub in (c, *getattr(c, "__args__", ())):
                if isinstance(sub, type) and issubclass(sub, BaseModel):
                    nxt = sub
        if nxt is None:
            return None
        model = nxt
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    if value is None:
        return "nothing"
    return repr(value)


def translate(exc: ValidationError, file: str) -> list[Problem]:
    """Turn pydantic errors into one-line problems with YAML paths."""
    problems: list[Problem] = []
    errors = exc.errors()
    for err in errors:
        loc = tuple(err["loc"])
        kind = err["type"]
        if kind == "too_short" and any(
            tuple(o["loc"])[: len(loc)] == loc and len(o["loc"]) > len(loc) for o in errors
        ):
            continue  # a list emptied by its own item errors: those errors say it better
        found = err.get("input")
        ctx = err.get("ctx") or {}
        # dict-key errors carry '[key]' in loc; keep paths readable
        path = _yaml_path(loc)
        if kind == "extra_forbidden":
            key = str(loc[-1])
            owner = _model_at(loc)
            fields = list(owner.model_fields) if owner else []
            msg = f"unknown key '{key}'{did_you_mean(key, fields)}"
            if fields:
                msg += f" (allowed: {', '.join(fields)})"
        elif kind == "missing":
            msg = "is required"
        elif kind == "literal_error":
            expected = str(ctx.get("expected", ""))
            choices = re.findall(r"'([^']*)'|(\d+)", expected)
            names = [a or b for a, b in choices]
            msg = f"{_describe(found)} is not allowed{did_you_mean(found, names)} (allowed: {expected.replace(' or ', ', ')})"
        elif kind == "string_pattern_mismatch":
            msg = f"{_describe(found)} does not match the required pattern {ctx.get('pattern')}"
        elif kind in {"int_parsing", "int_type", "int_from_float"}:
            msg = f"expected a whole number, found {_describe(found)}"
        elif kind in {"float_parsing", "float_type"}:
            msg = f"expected a number, found {_describe(found)}"
        elif kind in {"bool_parsing", "bool_type"}:
            msg = f"expected true or false, found {_describe(found)}"
        elif kind in {"string_type"}:
            msg = f"expected a string, found {_describe(found)}"
        elif kind in {"dict_type", "model_type", "model_attributes_type"}:
            msg = f"expected a mapping, found {_describe(found)}"
        elif kind in {"list_type", "tuple_type"}:
            msg = f"expected a list, found {_describe(found)}"
        elif kind in {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}:
            bound = {
                "greater_than": f"greater than {ctx.get('gt')}",
                "greater_than_equal": f"at least {ctx.get('ge')}",
                "less_than": f"less than {ctx.get('lt')}",
                "less_than_equal": f"at most {ctx.get('le')}",
            }[kind]
            msg = f"{_describe(found)} is out of range; must be {bound}"
        elif kind in {"too_short", "too_long"}:
            msg = err["msg"].replace("Tuple", "list").replace("List", "list")
            if kind == "too_short" and not found:
                msg = "must not be empty"
        elif kind == "value_error":
            msg = f"{_describe(found)}: {ctx.get('error', err['msg'])!s}"
        else:
            msg = f"{err['msg']} (found {_describe(found)})"
        problems.append(Problem(file, path, msg))
    return problems


def read_yaml(path: Path) -> dict[str, Any]:
    """Read a spec file as a mapping; every failure is a one-line SpecError."""
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError([Problem(file, "", "no such file")]) from None
    except IsADirectoryError:
        raise SpecError([Problem(file, "", "is a directory, not a spec file")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError([Problem(file, "", f"cannot read: {exc}")]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError([Problem(file, "", f"YAML syntax error at {where}{problem}")]) from None
    if data is None:
        raise SpecError(
            [
                Problem(
                    file, "", "is empty; a spec is a mapping with name, region, pools and workload"
                )
            ]
        )
    if not isinstance(data, dict):
        raise SpecError([Problem(file, "", f"must be a mapping of keys, found {_describe(data)}")])
    bad_keys = [k for k in data if not isinstance(k, str)]
    if bad_keys:
        raise SpecError(
            [Problem(file, "", f"top-level keys must be strings, found {bad_keys[0]!r}")]
        )
    return data


def parse_spec(data: dict[str, Any], file: str, catalog: Catalog | None = None) -> Spec:
    """Validate a mapping (shape, then rules). Raises SpecError listing every problem."""
    try:
        spec = Spec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(translate(exc, file)) from None
    problems = check_rules(spec, catalog or load_catalog(), file)
    if problems:
        raise SpecError(problems)
    return spec


def load_spec(path: str | Path, catalog: Catalog | None = None) -> Spec:
    """Load stacks/NAME.yaml: YAML, shape, rules, and the file name equals `name`."""
    p = Path(path)
    data = read_yaml(p)
    spec = parse_spec(data, str(p), catalog)
    if spec.name != p.stem:
        raise SpecError(
            [
                Problem(
                    str(p),
                    "name",
                    f"'{spec.name}' does not match the file name "
                    f"'{p.stem}' (the stack name); rename one so they agree",
                )
            ]
        )
    return spec
