"""trial and calibrate: the "prototype on both" loop.

`trial` renders a short benchmark job on one node of each accelerated pool (accelstack.render
.trial); `calibrate` turns the records those nodes append into measured MFU in the spec
(accelstack.cost.calibrate), which `price` and `compare` then use.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from accelstack.cli.imagecache import RegistryOpt
from accelstack.cli.output import FormatOpt, echo_json

if TYPE_CHECKING:
    from accelstack.render.reference import ReferenceOptions
    from accelstack.render.registry import ImageCache
    from accelstack.resolve import Stack
    from accelstack.spec import Measured


SpecArg = Annotated[Path, typer.Argument(help="spec file (stacks/NAME.yaml)")]
OutputOpt = Annotated[Path, typer.Option("-o", "--output", help="directory to write to")]
StepsOpt = Annotated[
    int, typer.Option("--steps", min=2, max=100_000, help="steps to run (first = warm-up)")
]
RecordsOpt = Annotated[str, typer.Option("--records", help="records file the nodes append to")]
ForceOpt = Annotated[bool, typer.Option("--force", help="write into a non-empty directory")]
NodesOpt = Annotated[
    int,
    typer.Option(
        "--nodes", min=1, max=100_000, help="nodes per pool (at most the pool's own count)"
    ),
]
_R = "--reference: "
ReferenceOpt = Annotated[
    bool,
    typer.Option(
        "--reference",
        help="run the shipped reference benchmark (a Llama-shaped decoder at the spec's shape, "
        "scaled to one device) instead of the spec's entrypoint",
    ),
]
LengthsOpt = Annotated[
    str | None,
    typer.Option(
        "--sequence-lengths",
        help=f"{_R}lengths to time, comma-separated (default: half the spec's and the spec's)",
    ),
]
TokensOpt = Annotated[int | None, typer.Option(min=1, help=f"{_R}tokens per process per step")]
HeadsOpt = Annotated[int | None, typer.Option(min=1, help=f"{_R}attention heads")]
KvHeadsOpt = Annotated[int | None, typer.Option(min=1, help=f"{_R}KV heads")]
VocabOpt = Annotated[int | None, typer.Option(min=2, help=f"{_R}vocabulary size")]
FfnOpt = Annotated[int | None, typer.Option(min=1, help=f"{_R}MLP (expert) width")]
ExpertsOpt = Annotated[int | None, typer.Option(min=2, help=f"{_R}a mixture of experts' experts")]
TopKOpt = Annotated[int | None, typer.Option(min=1, help=f"{_R}experts per token")]
MaxLayersOpt = Annotated[int | None, typer.Option(min=1, help=f"{_R}at most this many layers")]
CompileOpt = Annotated[
    str, typer.Option("--compile", help=f"{_R}torch.compile: auto (on for CUDA, Neuron), on, off")
]
CheckpointingOpt = Annotated[
    bool, typer.Option("--checkpointing", help=f"{_R}activation checkpointing")
]


def trial(
    spec: SpecArg,
    output: OutputOpt = Path("trial"),
    steps: StepsOpt = 20,
    records: RecordsOpt = "trial-records.jsonl",
    force: ForceOpt = False,
    nodes: NodesOpt = 1,
    registry: RegistryOpt = None,
    reference: ReferenceOpt = False,
    sequence_lengths: LengthsOpt = None,
    micro_batch_tokens: TokensOpt = None,
    heads: HeadsOpt = None,
    kv_heads: KvHeadsOpt = None,
    vocab: VocabOpt = None,
    ffn_hidden: FfnOpt = None,
    experts: ExpertsOpt = None,
    top_k: TopKOpt = None,
    max_layers: MaxLayersOpt = None,
    compile_mode: CompileOpt = "auto",
    checkpointing: CheckpointingOpt = False,
) -> None:
    """Render a STEPS-step benchmark job on NODES nodes of each accelerated pool of SPEC (and
    its Kubernetes manifest on EKS stacks)."""
    from accelstack.catalog import load_catalog
    from accelstack.render.output import write_artifacts
    from accelstack.render.reference import ReferenceOptions
    from accelstack.render.registry import image_cache
    from accelstack.render.trial import render_trial
    from accelstack.resolve import resolve
    from accelstack.spec import load_spec

    catalog = load_catalog()
    stack = resolve(load_spec(spec), catalog)
    cache = image_cache(stack, registry) if registry is not None else None
    ref = None
    if reference:
        ref = ReferenceOptions(
            sequence_lengths=_lengths(sequence_lengths),
            micro_batch_tokens=micro_batch_tokens,
            heads=heads,
            kv_heads=kv_heads,
            vocab=vocab,
            ffn_hidden=ffn_hidden,
            experts=experts,
            top_k=top_k,
            max_layers=max_layers,
            compile=_compile_mode(compile_mode),
            checkpointing=checkpointing,
        )
    artifacts = render_trial(stack, steps, records, nodes=nodes, cache=cache, reference=ref)
    write_artifacts(output, artifacts, force)
    _report_trial(stack, output, [a.path for a in artifacts], ref, (nodes, cache))


def _report_trial(
    stack: Stack,
    output: Path,
    paths: list[str],
    ref: ReferenceOptions | None,
    pulls: tuple[int, ImageCache | None],
) -> None:
    """What trial wrote, what the reference runs on each pool, and its warnings."""
    from accelstack.render.reference import reference_notes
    from accelstack.render.trial import trial_pull_notes, trial_warnings

    typer.echo(f"wrote {len(paths)} files to {output}/ (see {output}/README.md)")
    for path in paths:
        typer.echo(f"  {path}")
    if ref is not None:
        pools = [p for p in stack.pools if p.instance.chips > 0]
        for note in reference_notes(stack, pools, ref):
            typer.echo(f"note: {note}")
    for warning in [*trial_warnings(stack, ref), *trial_pull_notes(stack, *pulls)]:
        typer.echo(f"warning: {warning}")


def _lengths(text: str | None) -> tuple[int, ...]:
    """`--sequence-lengths 4096,8192` -> (4096, 8192); a bad value is one line, exit 2."""
    if not text:
        return ()
    try:
        out = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        out = ()
    if not out or min(out) < 2:
        raise typer.BadParameter(
            f"{text!r}: comma-separated sequence lengths of 2 tokens or more, e.g. 4096,8192",
            param_hint="--sequence-lengths",
        )
    return out


def _compile_mode(text: str) -> str:
    if text not in ("auto", "on", "off"):
        raise typer.BadParameter(f"{text!r}: auto, on or off", param_hint="--compile")
    return text


def calibrate(
    records: Annotated[list[Path], typer.Argument(help="trial records files (JSON lines)")],
    spec: Annotated[Path, typer.Option("--spec", help="spec file to store the MFU in")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="show, write nothing")] = False,
    fmt: FormatOpt = "text",
) -> None:
    """Measurements from trial records, keyed by instance type, model shape, precision,
    sequence per rank, tokens per chip and stack, stored in SPEC's calibration."""
    from accelstack.catalog import load_catalog
    from accelstack.cost.calibrate import PoolFacts, calibrate_spec, measure
    from accelstack.resolve import resolve
    from accelstack.spec import load_spec

    catalog = load_catalog()
    # a bad spec (spec rules, then the rules on the resolved stack) is reported before the
    # records are read
    stack = resolve(load_spec(spec), catalog)
    pools = {
        p.name: PoolFacts(p.device.name, max(1, p.procs_per_node // max(1, p.instance.chips)))
        for p in stack.pools
    }
    model = stack.workload.model
    active = model.active_params_billion
    moe = (model.params_billion, active) if active is not None else None
    measured = measure(catalog, records, pools, moe)
    if not dry_run:
        calibrate_spec(spec, measured, catalog)
    if fmt == "json":
        echo_json(
            {
                "spec": str(spec),
                "written": not dry_run,
                "measured": [m.model_dump() for m in measured],
            }
        )
        return
    for m in measured:
        typer.echo(_measured_line(m))
    for note in _sequence_notes(measured, stack.workload.sequence_length):
        typer.echo(f"note: {note}")
    typer.echo(("would write" if dry_run else "wrote") + f" calibration to {spec}")


def _measured_line(m: Measured) -> str:
    seq = f" at {m.sequence_length:,} tokens" if m.sequence_length else ""
    device = m.device_model or m.host_instance_type or m.device_kind
    chips = f"{m.chips} accelerator(s) ({device})" if m.chips else ""
    shape = ""
    if m.shape is not None and m.shape.layers:
        scaled = f" of {m.target.layers}" if m.target and m.target.layers else ""
        shape = f", {m.shape.layers}{scaled} layers ({m.shape_source or 'spec'})"
    return (
        f"{m.instance_type} {m.params_billion:g}B {m.precision}{seq}: MFU {m.mfu:.4f} "
        f"({m.tokens_per_second:,.1f} tokens/s on {chips or m.device_kind}; {m.file}, {m.date}, "
        f"{m.steps} steps, {m.records} record(s), world size {m.world_size}, model {m.model}"
        f"{shape}, stack {m.stack or 'unknown'}, sdk {m.sdk})"
    )


def _sequence_notes(measured: Sequence[Measured], spec_seq: int | None) -> list[str]:
    """Which measured sequence length `price` uses for this spec: its own, else the nearest,
    carried through the step model (accelstack.cost.measurements.select)."""
    lengths = sorted({m.sequence_length for m in measured if m.sequence_length})
    if not lengths or spec_seq is None:
        return []
    shown = ", ".join(f"{x:,}" for x in lengths)
    if spec_seq in lengths:
        return [f"measured at {shown} tokens; `price` uses the {spec_seq:,}-token measurement"]
    nearest = min(lengths, key=lambda x: (abs(math.log2(x / spec_seq)), -x))
    return [
        f"measured at {shown} tokens, the spec trains at {spec_seq:,}: `price` carries the "
        f"{nearest:,}-token measurement there through the step model (dense and attention "
        "rates), with a wider range"
    ]


def register(app: typer.Typer) -> None:
    app.command()(trial)
    app.command()(calibrate)
