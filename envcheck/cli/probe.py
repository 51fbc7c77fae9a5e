"""`envcheck probe`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from envcheck import service
from envcheck.cli.app import EXIT_FINDINGS, app, guarded
from envcheck.cli.common import emit_report, parse_severity
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
from envcheck.probe.settings import (
    DEFAULT_BUDGET_S,
    MAX_BUDGET_S,
    MAX_PROCESSES,
    MIN_BUDGET_S,
    ProbeSettings,
)
from envcheck.report import OutputFormat

# probe --------------------------------------------------------------------------------

PROBE_RULES = "EC6"


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
    procs_per_node: Annotated[
        Optional[int],
        typer.Option(
            "--procs-per-node",
            metavar="<n>",
            callback=within(1, MAX_PROCESSES),
            help=f"Training processes (1 to {MAX_PROCESSES}) sharing this node's cores (one "
            "per GPU in data-parallel training) \\[default: LOCAL_WORLD_SIZE, "
            "SLURM_NTASKS_PER_NODE, else the visible GPUs, else 1]. The probe measures one "
            "process on its share of the cores; worker advice is per process.",
            show_default=False,
        ),
    ] = None,
    concurrent: Annotated[
        bool,
        typer.Option(
            "--concurrent",
            help="Also run one input pipeline per training process, all at once, and "
            "report what they decode together (starts the framework once per process).",
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
    settings = ProbeSettings(
        model=model,
        image_size=image_size,
        budget_s=budget,
        data=data,
        device=device,
        sweep="full" if tune_workers else "auto",
        concurrent=concurrent,
    )
    flags = {
        "workers": workers,
        "pin_memory": pin_memory,
        "prefetch": prefetch,
        "batch_size": batch_size,
        "procs_per_node": procs_per_node,
    }
    result = service.audit(
        service.AuditRequest(
            python=python,
            only=service.PROBE_SECTIONS,
            data=data,
            data_is_fatal=True,
            scripts=tuple(script or ()),
            probe=True,
            probe_request=service.ProbeRequest(settings, framework, flags, explicit=True),
            scope=PROBE_RULES,
            fail_on=parse_severity(fail_on, "--fail-on"),
        )
    )
    emit_report(result.report, output_format, output, result.fail_on, verbose)
    result.raise_problems()
    if not exit_zero and result.blocking():
        raise typer.Exit(EXIT_FINDINGS)
