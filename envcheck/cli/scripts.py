"""`envcheck scripts`: the script audit alone, for pre-commit, editors and CI."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer

from envcheck import doctor as pipeline
from envcheck.cli.app import (
    DEFAULT_FAIL_ON,
    EXIT_FINDINGS,
    EXIT_INPUT,
    app,
    guarded,
)
from envcheck.cli.common import (
    emit_report,
    load_config,
    parse_severity,
    unaudited_scripts,
    write_output,
)
from envcheck.cli.options import (
    ConfigOpt,
    ExitZeroOpt,
    FailOnOpt,
    IgnoreOpt,
    OutputOpt,
    RulesOpt,
    VerboseOpt,
    nonempty,
)
from envcheck.engine.registry import builtin_registry
from envcheck.engine.selection import Selection
from envcheck.errors import UsageError
from envcheck.report import (
    OutputFormat,
    ScriptsFormat,
    script_lines,
)

# scripts ------------------------------------------------------------------------------

SCRIPT_RULES = "EC5"


@app.command("scripts")
@guarded
def scripts_command(
    paths: Annotated[
        Optional[List[Path]],
        typer.Argument(
            help="Training scripts, or folders searched for *.py.",
            show_default=False,
            metavar="PATH...",
        ),
    ] = None,
    output_format: Annotated[
        ScriptsFormat,
        typer.Option(
            "--format",
            "-f",
            metavar="<format>",
            help="text: path:line:col: ID severity message, with the fix under it; json: the "
            "doctor's report; sarif: SARIF 2.1.0 for code scanning; junit: JUnit XML.",
            case_sensitive=False,
        ),
    ] = ScriptsFormat.TEXT,
    output: OutputOpt = None,
    fail_on: FailOnOpt = None,
    exit_zero: ExitZeroOpt = False,
    select: Annotated[
        Optional[List[str]],
        typer.Option(
            "--select",
            help="Run only these script rules (id prefixes within EC5, e.g. EC50,EC511). "
            "\\[default: EC5]",
            show_default=False,
        ),
    ] = None,
    ignore: IgnoreOpt = None,
    rules: RulesOpt = None,
    config_path: ConfigOpt = None,
    python: Annotated[
        Optional[str],
        typer.Option(
            "--python",
            metavar="<python>",
            callback=nonempty,
            help="The interpreter the scripts train with (its TensorFlow version decides "
            "which tf.data defaults apply). Default: the one envcheck runs in.",
            show_default=False,
        ),
    ] = None,
    verbose: VerboseOpt = False,
) -> None:
    """Audit training scripts only (the EC5xx rules), for pre-commit, editors and CI.

    The input-pipeline and training-loop rules, with the scripts read by Python's ast,
    never run.

    The machine rules do not run, but the script rules still read this machine's facts
    where they matter: its usable CPUs (worker counts), its GPUs (mixed precision, TF32)
    and the installed framework versions.

    Exit codes: 0 nothing at or above --fail-on, 1 findings at or above it, 2 a path that
    is missing or does not parse (the other files are still audited), 3 internal error.
    """
    if not paths:
        raise UsageError("envcheck scripts needs at least one file or folder, e.g. train.py")
    settings = load_config(config_path)
    threshold = parse_severity(fail_on, "--fail-on") or settings.fail_on or DEFAULT_FAIL_ON
    registry = builtin_registry([*settings.rule_paths, *(rules or [])])
    chosen = Selection.of(select or [SCRIPT_RULES], ignore or [])
    outside = [p for p in chosen.select if not p.startswith(SCRIPT_RULES)]
    if outside:
        raise UsageError(
            f"--select {outside[0]}: envcheck scripts runs only the script rules "
            f"({SCRIPT_RULES}xx); use envcheck doctor for the others"
        )
    selection = Selection(
        chosen.select, tuple(dict.fromkeys(settings.selection.ignore + chosen.ignore))
    )
    selection.check_known(r.id for r in registry)
    snapshot = pipeline.take_snapshot(python, False, None, 5.0, paths)
    report = pipeline.diagnose(snapshot, registry, selection, settings.acknowledged)
    if output_format is ScriptsFormat.TEXT:
        write_output(script_lines.render(report, threshold), output)
    else:
        emit_report(report, OutputFormat(output_format.value), output, threshold, verbose)
    if unaudited_scripts(snapshot.data):
        raise typer.Exit(EXIT_INPUT)  # each unreadable file is named in the output already
    worst = report.worst_severity()
    if not exit_zero and worst is not None and worst >= threshold:
        raise typer.Exit(EXIT_FINDINGS)
