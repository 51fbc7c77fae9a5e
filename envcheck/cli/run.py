"""`envcheck run -- COMMAND`: the pre-training hook."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, List, Optional

import typer

from envcheck import defaults
from envcheck import output as outputs
from envcheck.cli.app import EXIT_FINDINGS, app, guarded
from envcheck.cli.common import parse_severity, write_output
from envcheck.cli.measured import emit_aside, interpreter_of, script_of
from envcheck.cli.options import (
    ConfigOpt,
    DataOpt,
    IgnoreOpt,
    PythonOpt,
    RulesOpt,
    ScriptOpt,
    VerboseOpt,
    within,
)
from envcheck.errors import InputError, UsageError
from envcheck.measure.service import DEFAULT_SECONDS, DEFAULT_STEPS
from envcheck.report import OutputFormat
from envcheck.report.escape import visible

# run ----------------------------------------------------------------------------------


@app.command(
    "run",
    context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
)
@guarded
def run_command(
    command: Annotated[
        Optional[List[str]],
        typer.Argument(
            help="The training command and its arguments, after `--`; passed on unchanged.",
            metavar="-- COMMAND [ARGS]...",
            show_default=False,
        ),
    ] = None,
    python: PythonOpt = None,
    data: DataOpt = None,
    script: ScriptOpt = None,
    probe: Annotated[
        bool,
        typer.Option(
            "--probe/--no-probe",
            help="Also run the micro training probe before the command (takes its budget).",
        ),
    ] = False,
    fail_on: Annotated[
        Optional[str],
        typer.Option(
            "--fail-on",
            metavar="<severity>",
            help="Do not run the command (exit 1) when a finding has this severity or "
            "higher. \\[default: high]",
            show_default=False,
        ),
    ] = None,
    warn_only: Annotated[
        bool,
        typer.Option("--warn-only", help="Print the findings and run the command anyway."),
    ] = False,
    select: Annotated[
        Optional[List[str]],
        typer.Option("--select", help="Run only rules with these id prefixes.", show_default=False),
    ] = None,
    ignore: IgnoreOpt = None,
    rules: RulesOpt = None,
    config_path: ConfigOpt = None,
    output_format: Annotated[
        OutputFormat,
        typer.Option(
            "--format",
            "-f",
            help="Format of the report, written to stderr when the doctor stops the command "
            "and, with --measure, after it (the command's own stdout stays untouched).",
            case_sensitive=False,
        ),
    ] = OutputFormat.TEXT,
    output: Annotated[
        Optional[Path],
        typer.Option(
            "--output",
            "-o",
            callback=outputs.check_target,
            help="Save the run's summary (JSON) to this file; with --measure, the report "
            "(in --format) instead of writing it to stderr.",
            show_default=False,
            dir_okay=False,
        ),
    ] = None,
    measure: Annotated[
        bool,
        typer.Option(
            "--measure",
            help="Measure the command's own training steps through a start-up hook (data "
            "wait, host syncs, copies, compute, checkpoints, logging) and report them with "
            "the doctor's findings.",
        ),
    ] = False,
    steps: Annotated[
        int,
        typer.Option(
            "--steps",
            metavar="<n>",
            callback=within(1),
            help="With --measure: training steps (at least 1) to measure after the warm-up.",
        ),
    ] = DEFAULT_STEPS,
    seconds: Annotated[
        float,
        typer.Option(
            "--seconds",
            metavar="<seconds>",
            callback=within(0.1),
            help="With --measure: end the window after this many seconds if --steps takes longer.",
        ),
    ] = DEFAULT_SECONDS,
    stop_after: Annotated[
        bool,
        typer.Option(
            "--stop-after",
            help="With --measure: end the command once the window is measured (exit 0) "
            "instead of letting it train on.",
        ),
    ] = False,
    watch: Annotated[
        float,
        typer.Option(
            "--watch",
            metavar="<seconds>",
            callback=within(1.0),
            help="Seconds (at least 1) of the command's start to sample GPU utilisation.",
        ),
    ] = defaults.WATCH_S,
    verbose: VerboseOpt = False,
) -> None:
    """Run the doctor, then the training command (after `--`), watching its GPU.

    Stops before the command (exit 1) when findings reach --fail-on, unless --warn-only.
    The command keeps its stdin, stdout and stderr; SIGINT and SIGTERM are forwarded to
    it; envcheck exits with its exit code (128+N when signal N killed it). A one-line
    summary of the GPU utilisation over the first --watch seconds goes to stderr.
    """
    from envcheck import hook

    args = list(command or [])
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        raise UsageError("envcheck run needs a command after `--`, e.g. -- python train.py")
    result = hook.doctor_audit(
        hook.doctor_request(
            python=python or (interpreter_of(args) if measure else None),
            data=data,
            scripts=script or (script_of(args) if measure else []),
            probe=probe,
            select=select or [],
            ignore=ignore or [],
            rules=rules or [],
            config_path=config_path,
            fail_on=parse_severity(fail_on, "--fail-on"),
        )
    )
    report, threshold = result.report, result.fail_on
    if result.blocking():
        # the doctor's report on stderr, so the command's stdout stays its own
        emit_aside(report, output_format, None, threshold, verbose)
        typer.echo(visible(hook.failure_line(report, threshold)), err=True)
        if not warn_only:
            typer.echo("envcheck: not running the command (--warn-only runs it anyway)", err=True)
            if output is not None:
                summary = hook.summary_json(
                    args, None, watch, 0.0, hook.utilisation([]), report, {}, True
                )
                write_output(json.dumps(summary, indent=2) + "\n", output)
            raise typer.Exit(EXIT_FINDINGS)
    else:
        below = hook.below_line(report, threshold)
        if below:
            typer.echo(visible(below), err=True)
    if measure:
        from envcheck.cli.measured import measured_run

        code = measured_run(
            args,
            result,
            steps=steps,
            seconds=seconds,
            stop_after=stop_after,
            output_format=output_format,
            output=output,
            verbose=verbose,
        )
        raise typer.Exit(code)
    sampler = hook.make_sampler()
    try:
        code, watched, util = hook.run_watched(args, watch, sampler)
    except hook.CommandNotRunnable as exc:
        typer.echo(f"envcheck: error: {visible(str(exc))}", err=True)
        raise typer.Exit(exc.code) from None
    finally:
        hook.close_gpu(sampler.nvml)
    about = sampler.summary()
    summary_line = hook.summary_line(util, watched, report, about.get("gpu_reason"))
    typer.echo(visible(summary_line), err=True)
    if output is not None:
        summary = hook.summary_json(args, code, watch, watched, util, report, about)
        try:
            write_output(json.dumps(summary, indent=2) + "\n", output)
        except InputError as exc:  # the command ran: its exit code still wins
            typer.echo(f"envcheck: error: {visible(str(exc))}", err=True)
    raise typer.Exit(code)
