"""Offline plan: run a Pulumi program under Pulumi's mock runtime and record every resource it
registers, with its inputs, options and dependencies.

The engine receives the program as a callable (`Program`: `build(stack) -> outputs`); it never
imports the components itself (the CLI and the Pulumi program wire them in). No network, no AWS
credentials: every provider lookup is answered by `accelstack.plan.lookups`, and an unknown
lookup fails the plan. Pulumi is imported lazily inside functions so that `accelstack` imports
without it.

A failed plan is one line (`PlanError`), naming the first real cause and who is to blame:

* bad input, exit 2: an `AccelstackError` raised by the program or the guard keeps its own
  code (a catalog refusal is 2, an over-budget verdict 1); a lookup refused because of a value
  the spec wrote (`Answers.input_errors`); two registrations of one type and name with the
  same inputs (the spec repeated a value, e.g. the same admin ARN twice): `PlanInputError`.
* a program bug, exit 1: any other exception (named with the file, line and function that
  raised it, unwrapped from Pulumi's "While processing resource" wrappers so that the line
  blames the cause, not a resource that merely consumed its output), a lookup the offline
  answers do not model, two different resources under one name: `PlanError`.

Pulumi leaves the failed outputs of every dependent resource as futures whose exception is
never retrieved; asyncio would log each one ("Future exception was never retrieved", thousands
of tracebacks). The plan's event loops get an exception handler that drops those: the one
line above already says what failed. `ACCELSTACK_PLAN_DEBUG=1` lets both through unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any, TypeVar, TypeVarTuple

from accelstack.collector import collector_off
from accelstack.cost.guard import enforce
from accelstack.errors import AccelstackError
from accelstack.plan.document import (
    SECRET_MARK,
    Plan,
    PlanError,
    PlanInputError,
    PlannedResource,
    normalise,
)
from accelstack.plan.lookups import Answers, with_offline_ami_pins

if TYPE_CHECKING:
    from accelstack.resolve import Stack

#: The program the engine runs: the stack in, the exports out.
Program = Callable[["Stack"], dict[str, Any]]

PROJECT = "accelstack"
_LOCK = threading.Lock()  # the Pulumi runtime settings are process-global
_T = TypeVar("_T")
_Ts = TypeVarTuple("_Ts")


# Running the program under mocks
# ---------------------------------------------------------------------------------------


def _quiet_logger() -> logging.Logger:
    """Pulumi's engine log (program errors with tracebacks) is summarised in PlanError."""
    logger = logging.getLogger("accelstack.plan.engine")
    logger.propagate = False
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    return logger


def _drain(loop: Any) -> None:
    """Cancel whatever a failed program left pending, so the next plan starts clean."""
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


class _InlineLoop(asyncio.SelectorEventLoop):
    """The plan's event loop. Pulumi hands every call to the monitor (register, read, invoke)
    to `run_in_executor`, a worker thread's job against a real engine; under mocks the monitor
    is `_monitor`'s, which answers at once, so the call runs here on the loop's own thread. The
    hand-offs to a worker thread were about a tenth of a plan's CPU (0.18 -> 0.16 s a preset), and
    the mock monitor no longer makes an event loop per worker thread. The monitor's own awaits
    pump this loop (Pulumi's `_sync_await` is re-entrant for that)."""

    def run_in_executor(
        self, executor: Executor | None, func: Callable[[*_Ts], _T], *args: *_Ts
    ) -> asyncio.Future[_T]:
        future = self.create_future()
        try:
            future.set_result(func(*args))
        except Exception as exc:  # the awaiting task raises it, as from a worker thread
            future.set_exception(exc)
        return future


class _Recorder:
    """What the mock monitor saw: one record per registration, their options, and the URN ->
    logical-name map that turns parents into names. Pulumi calls it on the loop's thread
    (`_InlineLoop`)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.records: dict[tuple[str, str], PlannedResource] = {}
        self.options: dict[tuple[str, str], dict[str, Any]] = {}
        self.duplicates: list[tuple[str, bool]] = []  # (type 'name', same inputs)
        self.urn_names: dict[str, str] = {}
        self.loop = loop

    def record(self, request: Any, inputs: dict[str, Any]) -> None:
        key = (request.type, request.name)
        if key in self.records:
            same = self.records[key].inputs == inputs
            self.duplicates.append((f"{request.type} '{request.name}'", same))
        parent = self.urn_names.get(request.parent) if request.parent else None
        self.records[key] = PlannedResource(
            request.type, request.name, parent, inputs, self._dependencies(request)
        )
        opts = _options(request)
        if opts:
            self.options[key] = opts

    def _dependencies(self, request: Any) -> tuple[str, ...]:
        """Explicit `depends_on` and property dependencies, as logical names."""
        urns = set(request.dependencies)
        for deps in request.propertyDependencies.values():
            urns.update(deps.urns)
        return tuple(sorted({self.urn_names.get(u, u) for u in urns}))

    def name_urn(self, urn: str, name: str) -> None:
        self.urn_names[urn] = name


def _drop(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The plan's loop exception handler: failures are reported once, by `_failure`."""


def quiet(loop: asyncio.AbstractEventLoop) -> None:
    """Drop the loop's unretrieved-exception reports (see the module docstring)."""
    if not os.environ.get("ACCELSTACK_PLAN_DEBUG"):
        loop.set_exception_handler(_drop)


def _options(request: Any) -> dict[str, Any]:
    """The resource options worth reviewing: protect, retainOnDelete, deleteBeforeReplace (when
    set), ignoreChanges (sorted, when any), customTimeouts (the ones set)."""
    opts: dict[str, Any] = {
        k: True for k in ("protect", "retainOnDelete", "deleteBeforeReplace") if getattr(request, k)
    }
    if request.ignoreChanges:
        opts["ignoreChanges"] = sorted(request.ignoreChanges)
    timeouts = getattr(request, "customTimeouts", None)
    if timeouts is not None:
        set_ = {k: getattr(timeouts, k) for k in ("create", "update", "delete")}
        if any(set_.values()):
            opts["customTimeouts"] = {k: v for k, v in set_.items() if v}
    return opts


def _deserialize(obj: Any) -> dict[str, Any]:
    from pulumi.runtime import rpc

    return dict(rpc.deserialize_properties(obj, keep_unknowns=True))


def _mocks(answers: Answers) -> Any:
    """Pulumi `Mocks` answering from `answers` (unknown lookups raise there)."""
    import pulumi
    from pulumi.runtime import mocks

    class _Mocks(pulumi.runtime.Mocks):
        def call(self, args: mocks.MockCallArgs) -> Any:
            return answers.call(args.token, dict(args.args))

        def new_resource(self, args: mocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
            return answers.new_resource(args.typ, args.name, dict(args.inputs))

    return _Mocks()


def _monitor(the_mocks: Any, rec: _Recorder) -> Any:
    """A mock monitor that records every registration before answering it."""
    from pulumi.runtime import mocks

    class _Monitor(mocks.MockMonitor):
        def RegisterResource(self, request: Any) -> Any:
            is_stack = request.type == "pulumi:pulumi:Stack"
            if not is_stack:
                rec.record(request, normalise(_deserialize(request.object)))
            resp = super().RegisterResource(request)  # type: ignore[no-untyped-call]
            if not is_stack:
                rec.name_urn(resp.urn, request.name)
            return resp

        def ReadResource(self, request: Any) -> Any:
            resp = super().ReadResource(request)  # type: ignore[no-untyped-call]
            rec.name_urn(resp.urn, request.name)
            return resp

    return _Monitor(the_mocks)


def _start_runtime(stack: Stack, answers: Answers, rec: _Recorder) -> None:
    import pulumi
    from pulumi.runtime import settings

    asyncio.set_event_loop(rec.loop)
    quiet(rec.loop)
    settings.ROOT.set(None)  # a fresh root stack resource per plan
    the_mocks = _mocks(answers)
    pulumi.runtime.set_mocks(
        the_mocks,
        project=PROJECT,
        stack=stack.name,
        preview=False,
        monitor=_monitor(the_mocks, rec),
        logger=_quiet_logger(),
    )
    settings.SETTINGS.rpc_manager.clear()
    settings.SETTINGS.outputs.clear()


def _stop_runtime(rec: _Recorder) -> None:
    from pulumi.runtime import settings

    _drain(rec.loop)
    settings.SETTINGS.rpc_manager.clear()
    settings.SETTINGS.outputs.clear()
    settings.ROOT.set(None)
    asyncio.set_event_loop(None)
    rec.loop.close()


def _execute(stack: Stack, build: Program, guard: bool) -> dict[str, tuple[Any, bool]]:
    """Run `build` inside the mock runtime; the exports as {key: (value, is_secret)}."""
    import pulumi
    from pulumi.runtime.stack import run_pulumi_func
    from pulumi.runtime.sync_await import _sync_await

    resolved: dict[str, Any] = {}
    exported: dict[str, Any] = {}

    def keep(key: str) -> Callable[[Any], None]:
        def store(value: Any) -> None:
            resolved[key] = value

        return store

    def program() -> None:
        if guard:
            enforce(stack)
        for key, value in build(stack).items():
            out = pulumi.Output.from_input(value)
            out.apply(keep(key))
            exported[key] = out

    _sync_await(run_pulumi_func(program))
    return {
        k: (resolved[k], _sync_await(o.is_secret())) for k, o in exported.items() if k in resolved
    }


def root_cause(exc: BaseException) -> BaseException:
    """The exception that started it all: Pulumi re-raises a failed input as "While processing
    resource: 'x'" (`raise ... from e`) for the resource that consumed it."""
    seen = {id(exc)}
    while exc.__cause__ is not None and id(exc.__cause__) not in seen:
        exc = exc.__cause__
        seen.add(id(exc))
    return exc


def raised_at(exc: BaseException) -> str:
    """`file:line in function` of the innermost frame outside Pulumi and asyncio."""
    skip = ("/pulumi/", "/pulumi_aws/", "/pulumi_kubernetes/", "/asyncio/", "/grpc/")
    where = ""
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        path = code.co_filename.replace("\\", "/")
        if not any(part in path for part in skip):
            where = f"{_short_path(path)}:{tb.tb_lineno} in {code.co_name}"
        tb = tb.tb_next
    return where


def _short_path(path: str) -> str:
    """A path relative to the accelstack package (or its checkout) when it lies inside."""
    for root in sorted({p for p in sys.path if p}, key=len, reverse=True):
        if path.startswith(root.rstrip("/") + "/"):
            return path[len(root.rstrip("/")) + 1 :]
    return path


def _failure(stack: Stack, answers: Answers, exc: Exception) -> AccelstackError:
    """One line for a failed program: the first refused lookup, else the root cause."""
    if answers.input_errors:
        return PlanInputError(f"{stack.name}: {answers.input_errors[0]}")
    if answers.errors:
        return PlanError(f"{stack.name}: {answers.errors[0]}")
    cause = root_cause(exc)
    if isinstance(cause, AccelstackError):
        return cause
    first = next(iter(str(cause).strip().splitlines()), "")
    what = f"{type(cause).__name__}: {first}" if first else type(cause).__name__
    where = raised_at(cause)
    return PlanError(
        f"{stack.name}: the program failed: {what}" + (f" (at {where})" if where else "")
    )


def _assemble(
    stack: Stack, answers: Answers, rec: _Recorder, exports: dict[str, tuple[Any, bool]]
) -> Plan:
    if answers.errors:
        raise _failure(stack, answers, PlanError(""))
    if rec.duplicates:
        name, same = rec.duplicates[0]
        if same:
            raise PlanInputError(
                f"{stack.name}: {name} is declared twice with the same inputs; a value in "
                "the spec is probably repeated"
            )
        raise PlanError(
            f"{stack.name}: two resources share the name {name}; "
            "logical names must be unique per type"
        )
    outputs = {
        k: SECRET_MARK if secret else normalise(v) for k, (v, secret) in sorted(exports.items())
    }
    return Plan(
        stack=stack.name,
        region=stack.region,
        resources=sorted(rec.records.values(), key=lambda r: (r.type, r.name)),
        outputs=outputs,
        options=dict(sorted(rec.options.items())),
        lookups=[json.loads(x) for x in sorted(answers.lookups)],
    )


@contextlib.contextmanager
def _without_stack_traces() -> Iterator[None]:
    """Registrations carry an empty stack trace while a plan runs. The SDK collects one per
    resource for the engine's source positions (traceback.extract_stack, which reads the source
    line of every frame); under mocks nothing reads it, and collecting it was about a tenth of
    a plan's own time (bench/startup.py). An SDK without the hook plans as before."""
    from pulumi.runtime import resource
    from pulumi.runtime.proto import source_pb2

    original = getattr(resource, "_get_stack_trace", None)
    if original is None:  # pragma: no cover - another SDK layout
        yield
        return
    resource._get_stack_trace = source_pb2.StackTrace
    try:
        yield
    finally:
        resource._get_stack_trace = original


def run_plan(stack: Stack, build: Program, guard: bool = True) -> Plan:
    """Plan `stack` offline by running `build` (the Pulumi program) under mocks. With `guard`,
    the budget is enforced before the program runs (priced from the spec) and after it (priced
    from what it declared). Raises PlanError with one line on any failure. A stack with no AMI
    pins read from a stack config plans as if `accelstack amis pin` had run."""
    stack = with_offline_ami_pins(stack)
    # The collector off while the plan runs (accelstack/collector.py): nearly everything a plan
    # allocates (resources, outputs, futures, tasks) lives until it ends, so collections would
    # free little and walk every live object: about a fifth of a process's first plan, a third
    # of each later one, more in a process holding a large heap; the next young collection
    # after the plan frees its garbage, and peak memory is unchanged (docs/plan.md).
    with _LOCK, _without_stack_traces(), collector_off():
        answers = Answers(stack)
        rec = _Recorder(_InlineLoop())
        _start_runtime(stack, answers, rec)
        try:
            exports = _execute(stack, build, guard)
        except Exception as exc:  # the program raised, or a lookup had no answer
            if os.environ.get("ACCELSTACK_PLAN_DEBUG"):
                raise
            failure, cause = _failure(stack, answers, exc), root_cause(exc)
            if failure is exc:
                raise
            raise failure from (None if failure is cause else cause)
        finally:
            _stop_runtime(rec)
        plan = _assemble(stack, answers, rec, exports)
    if guard:  # the same verdict, priced from what the program actually declared
        enforce(stack, plan.resources)
    return plan
