"""Reading a spec: YAML to mapping, shape (pydantic) to `Spec`.

Every problem becomes one `Problem` line: file, YAML path, what was found, what is allowed.
`load_spec` raises `SpecError` with all of them; the CLI prints them and exits 2. The rules
run on the resolved stack (`accelstack.resolve.resolve`), which refuses what the shape cannot
say, and a stack file whose `name` is not its file name (`file_name_problems`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from accelstack.errors import Problem, SpecError, did_you_mean, shortened, shown
from accelstack.projectfile import regular_file
from accelstack.spec.models import Spec
from accelstack.spec.yamlsafe import YamlRefused, load_yaml_text

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
        return shown(value)
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    if value is None:
        return "nothing"
    return shortened(repr(value))


_Message = Callable[[ErrorDetails, Any, dict[str, Any]], str]


def _unknown_key(err: ErrorDetails, found: Any, ctx: dict[str, Any]) -> str:
    loc = tuple(err["loc"])
    key = str(loc[-1])
    owner = _model_at(loc)
    fields = list(owner.model_fields) if owner else []
    msg = f"unknown key {shown(key)}{did_you_mean(key, fields)}"
    if fields:
        msg += f" (allowed: {', '.join(fields)})"
    return msg


def _not_allowed(err: ErrorDetails, found: Any, ctx: dict[str, Any]) -> str:
    expected = str(ctx.get("expected", ""))
    choices = re.findall(r"'([^']*)'|(\d+)", expected)
    names = [a or b for a, b in choices]
    return f"{_describe(found)} is not allowed{did_you_mean(found, names)} (allowed: {expected.replace(' or ', ', ')})"


def _pattern_mismatch(err: ErrorDetails, found: Any, ctx: dict[str, Any]) -> str:
    return f"{_describe(found)} does not match the required pattern {ctx.get('pattern')}"


def _expected(what: str) -> _Message:
    def message(err: ErrorDetails, found: Any, ctx: dict[str, Any]) -> str:
        return f"expected {what}, found {_describe(found)}"

    return message


# pydantic range error type -> (words, ctx key of the bound)
_BOUNDS = {
    "greater_than": ("greater than", "gt"),
    "greater_than_equal": ("at least", "ge"),
    "less_than": ("less than", "lt"),
    "less_than_equal": ("at most", "le"),
}


def _out_of_range(err: ErrorDetails, found: Any, ctx: dict[str, Any]) -> str:
    words, key = _BOUNDS[err["type"]]
    return f"{_describe(found)} is out of range; must be {words} {ctx.get(key)}"


def _bad_length(err: ErrorDetails, found: Any, ctx: dict[str, Any]) -> str:
    if err["type"] == "too_short" and not found:
        return "must not be empty"
    return err["msg"].replace("Tuple", "list").replace("List", "list")


def _value_error(err: ErrorDetails, found: Any, ctx: dict[str, Any]) -> str:
    return f"{_describe(found)}: {ctx.get('error', err['msg'])!s}"


def _other(err: ErrorDetails, found: Any, ctx: dict[str, Any]) -> str:
    return f"{err['msg']} (found {_describe(found)})"


# pydantic error type -> one-line message; types not listed fall back to `_other`
_MESSAGES: dict[str, _Message] = {
    "extra_forbidden": _unknown_key,
    "missing": lambda err, found, ctx: "is required",
    "literal_error": _not_allowed,
    "string_pattern_mismatch": _pattern_mismatch,
    **dict.fromkeys(("int_parsing", "int_type", "int_from_float"), _expected("a whole number")),
    **dict.fromkeys(("float_parsing", "float_type"), _expected("a number")),
    **dict.fromkeys(("bool_parsing", "bool_type"), _expected("true or false")),
    "string_type": _expected("a string"),
    **dict.fromkeys(("dict_type", "model_type", "model_attributes_type"), _expected("a mapping")),
    **dict.fromkeys(("list_type", "tuple_type"), _expected("a list")),
    **dict.fromkeys(_BOUNDS, _out_of_range),
    **dict.fromkeys(("too_short", "too_long"), _bad_length),
    "value_error": _value_error,
}


def _said_better(err: ErrorDetails, errors: list[ErrorDetails]) -> bool:
    """A list emptied by its own item errors: those errors say it better."""
    loc = tuple(err["loc"])
    return err["type"] == "too_short" and any(
        tuple(o["loc"])[: len(loc)] == loc and len(o["loc"]) > len(loc) for o in errors
    )


def translate(exc: ValidationError, file: str) -> list[Problem]:
    """Turn pydantic errors into one-line problems with YAML paths."""
    problems: list[Problem] = []
    errors = exc.errors()
    for err in errors:
        if _said_better(err, errors):
            continue
        message = _MESSAGES.get(err["type"], _other)
        msg = message(err, err.get("input"), err.get("ctx") or {})
        # dict-key errors carry '[key]' in loc; keep paths readable
        problems.append(Problem(file, _yaml_path(tuple(err["loc"])), msg))
    return problems


def _read_text(path: Path) -> str:
    file = str(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError([Problem(file, "", "no such file")]) from None
    except IsADirectoryError:
        raise SpecError([Problem(file, "", "is a directory, not a spec file")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError([Problem(file, "", f"cannot read: {exc}")]) from None


def _parse(text: str, file: str) -> Any:
    """YAML text to data through the hardened reader (`yamlsafe`); one-line SpecErrors."""
    try:
        return load_yaml_text(text)
    except YamlRefused as exc:
        raise SpecError([Problem(file, exc.path, exc.message)]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError([Problem(file, "", f"YAML syntax error at {where}{problem}")]) from None


def read_yaml_file(path: Path) -> Any:
    """A project YAML file beside the specs (a cost ceiling, a usage file) read with the spec's
    scalar rules; a refusal or an unreadable file is a one-line SpecError naming the file."""
    file = str(path)
    try:
        return load_yaml_text(path.read_text(encoding="utf-8"))
    except YamlRefused as exc:
        raise SpecError([Problem(file, exc.path, exc.message)]) from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise SpecError([Problem(file, "", f"cannot be read: {first}")]) from None


def read_yaml(path: Path) -> dict[str, Any]:
    """Read a spec file as a mapping; every failure is a one-line SpecError."""
    file = str(path)
    regular_file(path)  # a committed link is refused, never followed (projectfile.py)
    data = _parse(_read_text(path), file)
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
            [Problem(file, "", f"top-level keys must be strings, found {shown(bad_keys[0])}")]
        )
    return data


def parse_spec(data: dict[str, Any], file: str) -> Spec:
    """Validate a mapping's shape (the schema). Raises SpecError listing every problem; the
    rules run when the spec is resolved."""
    try:
        spec = Spec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(translate(exc, file)) from None
    return spec.read_from(file)


def load_spec(path: str | Path) -> Spec:
    """Load stacks/NAME.yaml: YAML and shape (`resolve` then runs the rules and holds `name`
    to NAME: `file_name_problems`)."""
    p = Path(path)
    spec = parse_spec(read_yaml(p), str(p))
    return spec.read_from(str(p), p.stem)


def file_name_problems(spec: Spec) -> list[Problem]:
    """A spec read from a stack file is named after it (the file name is the stack name)."""
    stem = spec.file_stem
    if stem is None or spec.name == stem:
        return []
    return [
        Problem(
            spec.file,
            "name",
            f"{shown(spec.name)} does not match the file name "
            f"{shown(stem)} (the stack name); rename one so they agree",
        )
    ]
