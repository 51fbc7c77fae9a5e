"""`envcheck fix -- COMMAND`: prove which injectable changes make the user's run faster."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, List, Optional

import typer

from envcheck import service
from envcheck.cli.app import app, guarded
from envcheck.cli.common import emit_report
from envcheck.cli.measured import interpreter_of, script_of
from envcheck.cli.options import ConfigOpt, OutputOpt, VerboseOpt, within
from envcheck.errors import UsageError
from envcheck.measure.prove import DEFAULT_BUDGET_S, DEFAULT_PAIRS, DEFAULT_STEPS
from envcheck.report import OutputFormat


@app.command(
    "fix",
    context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
)
@guarded
def fix_command(
    command: Annotated[
        Optional[List[str]],
        typer.Argument(
            help="The training command and its arguments, after `--`.",
            metavar="-- COMMAND [ARGS]...",
            show_default=False,
        ),
    ] = None,
    steps: Annotated[
        int,
        typer.Option(
            "--steps",
            metavar="<n>",
            callback=within(1),
            help="Training steps (at least 1) measured in each run, after the warm-up.",
        ),
    ] = DEFAULT_STEPS,
    seconds: Annotated[
        float,
        typer.Option(
            "--seconds",
            metavar="<seconds>",
            callback=within(0.1),
            help="End each run's window after this many seconds if --steps takes longer.",
        ),
    ] = 60.0,
    pairs: Annotated[
        int,
        typer.Option(
            "--pairs",
            metavar="<n>",
            callback=within(2, 30),
            help="Most interleaved pairs (unchanged, changed) per candidate, 2 to 30; a "
            "candidate stops after 3 once its 95 % interval excludes 1.",
        ),
    ] = DEFAULT_PAIRS,
    budget: Annotated[
        float,
        typer.Option(
            "--budget",
            metavar="<seconds>",
            callback=within(1.0),
            help="Seconds for the whole fix: candidates that do not fit are not tried.",
        ),
    ] = DEFAULT_BUDGET_S,
    tries: Annotated[
        Optional[List[str]],
        typer.Option(
            "--try",
            metavar="<change>",
            help="Try only this change (repeatable), e.g. num_workers=4 or "
            "prefetch_factor=4; without it, every change that applies.",
            show_default=False,
        ),
    ] = None,
    apply: Annotated[
        bool,
        typer.Option("--apply", help="Apply the kept DataLoader changes to the script."),
    ] = False,
    patch_path: Annotated[
        Optional[Path],
        typer.Option(
            "--patch",
            help="Write the unified diff of the kept changes here (default: beside --output, "
            "else in a temporary folder; the report names it).",
            show_default=False,
            dir_okay=False,
        ),
    ] = None,
    output_format: Annotated[
        OutputFormat,
        typer.Option("--format", "-f", help="Output format.", case_sensitive=False),
    ] = OutputFormat.TEXT,
    output: OutputOpt = None,
    config_path: ConfigOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Prove which loader change speeds the training command up, by paired A/B runs.

    Tries the changes that can be injected without editing the script (DataLoader
    num_workers, persistent_workers, prefetch_factor, pin_memory, cudnn.benchmark; tf.data
    parallel map and prefetch; Keras PyDataset workers), each against the unchanged command
    in interleaved pairs, and keep only those whose 95 % interval of the speed ratio is
    above 1 with the loss unchanged. The command's own output goes to log files; the
    report (with the doctor's findings) and progress lines go to stdout and stderr.
    """
    from envcheck import hook
    from envcheck.measure.prove import FixRequest, prove_fixes
    from envcheck.probe.settings import usable_cores

    args = list(command or [])
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        raise UsageError("envcheck fix needs a command after `--`, e.g. -- python train.py")
    if patch_path is None and output is not None:
        patch_path = output.with_suffix(".patch")
    audit = hook.doctor_audit(
        hook.doctor_request(
            python=interpreter_of(args), scripts=script_of(args), config_path=config_path
        )
    )
    request = FixRequest(
        command=args,
        steps=steps,
        seconds=seconds,
        pairs=pairs,
        budget_s=budget,
        only=list(tries or []),
        apply=apply,
        patch_path=patch_path,
        cores=usable_cores(),
        progress=lambda line: print(line, file=sys.stderr, flush=True),
    )
    try:
        sections = prove_fixes(request)
    except hook.CommandNotRunnable as exc:
        typer.echo(f"envcheck: error: {exc}", err=True)
        raise typer.Exit(exc.code) from None
    final = service.with_measured(audit, sections).report
    emit_report(final, output_format, output, audit.fail_on, verbose)
    fix = sections["fix"]
    kept = [t["change"] for t in fix["trials"] if t["decision"] == "keep"]
    line = f"envcheck fix: kept {', '.join(kept)}" if kept else "envcheck fix: no proven win"
    if fix.get("patch"):
        line += f"; patch: {fix['patch']}" + (" (applied)" if fix.get("applied") else "")
    typer.echo(line, err=True)
