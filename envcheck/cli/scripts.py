"""`envcheck scripts`: the script audit alone, for pre-commit, editors and CI."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, List, Optional

import typer

from envcheck import service
from envcheck.cli.app import EXIT_FINDINGS, EXIT_INPUT, EXIT_INTERNAL, app, guarded
from envcheck.cli.common import emit_report, parse_severity
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
from envcheck.errors import UsageError
from envcheck.report import ScriptsFormat

# scripts ------------------------------------------------------------------------------

SCRIPT_RULES = "EC5"
# The facts the script rules read beside the scripts: the platform (spawn), usable CPUs
# (worker counts), GPUs (mixed precision, TF32) and the installed framework versions.
SCRIPT_COLLECTORS = (
    "platform",
    "cpu",
    "memory",
    "packages",
    "environment",
    "gpu",
    "frameworks",
    "scripts",
)


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
    target: Annotated[
        Optional[Path],
        typer.Option(
            "--target",
            metavar="<snapshot.json>",
            help="The training machine to judge against: a snapshot from `envcheck collect` "
            "there. Default: \\[target] in envcheck.toml; without either, the rules that "
            "depend on the machine say unknown.",
            show_default=False,
        ),
    ] = None,
    verbose: VerboseOpt = False,
) -> None:
    """Audit training scripts only (the EC5xx rules), for pre-commit, editors and CI.

    The input-pipeline and training-loop rules, with the scripts read by Python's ast,
    never run. A file named here is judged with the project modules it imports (its
    configs, datasets, models: found beside it as Python would, read but not audited).

    The machine rules do not run. The script rules that depend on the training machine
    (worker counts against its CPUs, mixed precision and TF32 by its GPUs, spawned
    workers by its platform) judge against --target or \\[target] in envcheck.toml, never
    the machine running the audit; the framework versions are the --python
    interpreter's.

    Exit codes: 0 nothing at or above --fail-on, 1 findings at or above it, 2 a path that
    is missing or does not parse (the other files are still audited), 3 internal error.
    """
    if not paths:
        raise UsageError("envcheck scripts needs at least one file or folder, e.g. train.py")
    result = service.audit(
        service.AuditRequest(
            python=python,
            only=SCRIPT_COLLECTORS,
            scripts=tuple(paths),
            scope=SCRIPT_RULES,
            judge_target=True,
            target=target,
            select=tuple(select or ()),
            ignore=tuple(ignore or ()),
            rule_paths=tuple(rules or ()),
            config_path=config_path,
            fail_on=parse_severity(fail_on, "--fail-on"),
        )
    )
    emit_report(result.report, output_format.report_format(), output, result.fail_on, verbose)
    crashed = _collector_failure(result.report.facts)
    if crashed:  # never a silent "0 findings in 0 files" with exit 0
        typer.echo(
            f"envcheck scripts: internal error: the script audit stopped ({crashed})", err=True
        )
        raise typer.Exit(EXIT_INTERNAL)
    faults = _analyser_faults(result.report.facts)
    if faults:  # a fault of the analyser, not of the user's file: named, the rest audited
        typer.echo(
            f"envcheck scripts: internal error: {faults} could not be analysed "
            "(named above); please report them",
            err=True,
        )
        raise typer.Exit(EXIT_INTERNAL)
    if result.problems:
        raise typer.Exit(EXIT_INPUT)  # each unreadable file is named in the output already
    if not exit_zero and result.blocking():
        raise typer.Exit(EXIT_FINDINGS)


def _analyser_faults(facts: Mapping[str, Any]) -> int:
    """How many files the analyser failed on (an exception of its own on that file)."""
    section = facts.get("scripts")
    errors = section.get("errors") if isinstance(section, Mapping) else None
    return sum(1 for e in errors or [] if isinstance(e, Mapping) and e.get("internal"))


def _collector_failure(facts: Mapping[str, Any]) -> Optional[str]:
    """Why the scripts collector itself failed (an exception, not a bad file), or None."""
    collectors = facts.get("collectors")
    status = collectors.get("scripts") if isinstance(collectors, Mapping) else None
    if isinstance(status, Mapping) and status.get("status") == "unavailable":
        return str(status.get("reason") or "no reason given")
    return None
