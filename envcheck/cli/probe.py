"""`envcheck probe`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from envcheck import datadir
from envcheck import doctor as pipeline
from envcheck.cli.app import (
    DEFAULT_FAIL_ON,
    EXIT_FINDINGS,
    app,
    guarded,
)
from envcheck.cli.common import (
    emit_report,
    parse_severity,
    with_probe_section,
)
from envcheck.cli.options import (
    ExitZeroOpt,
    FormatOpt,
    OutputOpt,
    PythonOpt,
    ScriptOpt,
    VerboseOpt,
    nonempty_path,
    within,
)
from envcheck.engine.registry import builtin_registry
from envcheck.engine.selection import Selection
from envcheck.errors import InputError
from envcheck.probe.settings import (
    DEFAULT_BUDGET_S,
    MAX_BUDGET_S,
    MIN_BUDGET_S,
    ProbeSettings,
)
from envcheck.report import (
    OutputFormat,
)

# probe --------------------------------------------------------------------------------


@app.command("probe")
@guarded
def probe_command(
    data: Annotated[
        Optional[Path],
        typer.Option(
            "--data",
            help="An image folder (class subfolders of JPEG/PNG files) to feed the model. "
            "Without it the probe generates ImageNet-sized JPEGs in a temporary folder "
            "and removes them afterwards. Only ever read.",
            show_default=False,
            parser=nonempty_path,
            metavar="PATH",
        ),
    ] = None,
    python: PythonOpt = None,
    script: ScriptOpt = None,
    framework: Annotated[
        str,
        typer.Option(
            "--framework",
            help="torch, tensorflow, or auto: the training script's framework, else the "
            "one installed in the audited interpreter (torch first).",
        ),
    ] = "auto",
    model: Annotated[
        str,
        typer.Option(
            "--model",
            help="small-cnn (light, shows the input pipeline), deep-cnn, or a torchvision / "
            "keras.applications architecture by name (random weights, nothing downloaded).",
        ),
    ] = "small-cnn",
    batch_size: Annotated[
        Optional[int],
        typer.Option(
            "--batch-size",
            help="Batch size \\[default: the script's, else 64 on a GPU, 32 on the CPU]. "
            "Out of memory halves it, and the report says so.",
            show_default=False,
        ),
    ] = None,
    image_size: Annotated[
        int, typer.Option("--image-size", help="Side of the square crop fed to the model.")
    ] = 224,
    budget: Annotated[
        float,
        typer.Option(
            "--budget",
            metavar="<seconds>",
            callback=within(MIN_BUDGET_S, MAX_BUDGET_S),
            help=f"Seconds ({MIN_BUDGET_S:g} to {MAX_BUDGET_S:g}) for all measuring phases "
            "together, after the framework import.",
        ),
    ] = DEFAULT_BUDGET_S,
    workers: Annotated[
        Optional[int],
        typer.Option(
            "--workers",
            help="Loader workers as the training uses them (DataLoader num_workers; tf.data "
            "map num_parallel_calls, 0 = serial) \\[default: the script's, else the "
            "framework's default].",
            show_default=False,
        ),
    ] = None,
    pin_memory: Annotated[
        Optional[bool],
        typer.Option("--pin-memory/--no-pin-memory", help="torch: DataLoader pin_memory."),
    ] = None,
    prefetch: Annotated[
        Optional[int],
        typer.Option(
            "--prefetch",
            help="torch: prefetch_factor; tf.data: prefetch buffer (-1 = AUTOTUNE).",
            show_default=False,
        ),
    ] = None,
    tune_workers: Annotated[
        bool,
        typer.Option(
            "--tune-workers",
            help="Sweep the worker count (0, 1, 2, 4, ... up to the usable cores) and "
            "report the smallest within 5 % of the best. Without it the sweep runs only "
            "when training is input-bound.",
        ),
    ] = False,
    device: Annotated[
        str, typer.Option("--device", help="auto (the GPU if the framework sees one), cuda, cpu.")
    ] = "auto",
    output_format: FormatOpt = OutputFormat.TEXT,
    output: OutputOpt = None,
    fail_on: Annotated[
        Optional[str],
        typer.Option(
            "--fail-on",
            metavar="<severity>",
            help="Exit 1 when a probe finding has this severity or higher. \\[default: high]",
            show_default=False,
        ),
    ] = None,
    exit_zero: ExitZeroOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Measure whether training is input-bound and which worker count fixes it.

    The model's compute ceiling, the input pipeline alone (cached and cold files), the two
    together, and the worker count that fixes it. Runs in a child process of the audited
    interpreter with a hard timeout.

    Without a GPU it runs on the CPU and labels every number as CPU.
    """
    threshold = parse_severity(fail_on, "--fail-on") or DEFAULT_FAIL_ON
    if data is not None:
        problem = datadir.problem_with(data)
        if problem:
            raise InputError(f"--data {data}: {problem}")
    snapshot = pipeline.take_snapshot(python, False, None, 5.0, script or [])
    base = ProbeSettings(
        model=model,
        image_size=image_size,
        budget_s=budget,
        data=data,
        device=device,
        sweep="full" if tune_workers else "auto",
    )
    flags = {
        "workers": workers,
        "pin_memory": pin_memory,
        "prefetch": prefetch,
        "batch_size": batch_size,
    }
    snapshot = with_probe_section(snapshot, base, framework, flags, explicit=True)
    registry = builtin_registry()
    report = pipeline.diagnose(snapshot, registry, Selection.of(["EC6"], []))
    emit_report(report, output_format, output, threshold, verbose)
    worst = report.worst_severity()
    if not exit_zero and worst is not None and worst >= threshold:
        raise typer.Exit(EXIT_FINDINGS)
