"""`envcheck doctor` and `envcheck collect`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer

from envcheck import defaults, service
from envcheck.cli.app import EXIT_FINDINGS, app, guarded
from envcheck.cli.common import emit_report, parse_severity, write_output
from envcheck.cli.options import (
    ConfigOpt,
    DataBudgetOpt,
    DataOpt,
    DeepOpt,
    ExitZeroOpt,
    FailOnOpt,
    FormatOpt,
    IgnoreOpt,
    OutputOpt,
    PythonOpt,
    RulesOpt,
    ScriptOpt,
    TargetRateOpt,
    VerboseOpt,
    within,
)
from envcheck.errors import InputError
from envcheck.probe.settings import (
    DEFAULT_BUDGET_S,
    MAX_BUDGET_S,
    MIN_BUDGET_S,
    ProbeSettings,
)
from envcheck.report import OutputFormat

# doctor -------------------------------------------------------------------------------


@app.command()
@guarded
def doctor(
    python: PythonOpt = None,
    facts: Annotated[
        Optional[Path],
        typer.Option(
            "--facts",
            help="Evaluate a saved snapshot (from `envcheck collect` or a "
            "JSON report) instead of collecting from this machine.",
            show_default=False,
            dir_okay=False,
        ),
    ] = None,
    output_format: FormatOpt = OutputFormat.TEXT,
    output: OutputOpt = None,
    fail_on: FailOnOpt = None,
    exit_zero: ExitZeroOpt = False,
    select: Annotated[
        Optional[List[str]],
        typer.Option(
            "--select",
            help="Run only rules whose id starts with one of these "
            "prefixes (comma-separated or repeated), e.g. EC1.",
            show_default=False,
        ),
    ] = None,
    ignore: IgnoreOpt = None,
    rules: RulesOpt = None,
    config_path: ConfigOpt = None,
    deep: DeepOpt = False,
    data: DataOpt = None,
    data_budget: DataBudgetOpt = defaults.DATA_BUDGET_S,
    target_rate: TargetRateOpt = None,
    script: ScriptOpt = None,
    probe: Annotated[
        Optional[bool],
        typer.Option(
            "--probe/--no-probe",
            help="Run the micro training probe (see `envcheck probe`) inside the doctor. "
            "Default: probe when an NVIDIA GPU is visible and --data is given.",
            show_default=False,
        ),
    ] = None,
    probe_budget: Annotated[
        float,
        typer.Option(
            "--probe-budget",
            metavar="<seconds>",
            callback=within(MIN_BUDGET_S, MAX_BUDGET_S),
            help=f"Seconds ({MIN_BUDGET_S:g} to {MAX_BUDGET_S:g}) for the probe.",
        ),
    ] = DEFAULT_BUDGET_S,
    verbose: VerboseOpt = False,
) -> None:
    """Audit the environment and machine; print a ranked list of fixes.

    Exit codes: 0 nothing at or above --fail-on, 1 findings at or above it,
    2 usage or input error, 3 internal error.
    """
    request = service.AuditRequest(
        python=python,
        facts_file=facts,
        deep=deep,
        data=data,
        data_budget_s=data_budget,
        target_rate=target_rate,
        scripts=tuple(script or ()),
        probe=probe,
        probe_request=service.ProbeRequest(
            ProbeSettings(budget_s=probe_budget), explicit=bool(probe)
        ),
        select=tuple(select or ()),
        ignore=tuple(ignore or ()),
        rule_paths=tuple(rules or ()),
        config_path=config_path,
        fail_on=parse_severity(fail_on, "--fail-on"),
        data_is_fatal=True,  # a report without the data asked for would read as clean
    )
    result = service.audit(request)
    emit_report(result.report, output_format, output, result.fail_on, verbose)
    result.raise_problems()  # the rest ran; a script that does not parse is an input error
    if not exit_zero and result.blocking():
        raise typer.Exit(EXIT_FINDINGS)


# collect ------------------------------------------------------------------------------


@app.command()
@guarded
def collect(
    python: PythonOpt = None,
    output: OutputOpt = None,
    deep: DeepOpt = False,
    data: DataOpt = None,
    data_budget: DataBudgetOpt = defaults.DATA_BUDGET_S,
    script: ScriptOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Collect the snapshot of facts only (JSON), for `envcheck doctor --facts` later.

    The snapshot can be evaluated later or on another machine with
    `envcheck doctor --facts FILE`, or compared with another with `envcheck diff`."""
    snapshot, problems = service.collect(
        service.AuditRequest(
            python=python,
            deep=deep,
            data=data,
            data_budget_s=data_budget,
            scripts=tuple(script or ()),
            data_is_fatal=True,
        )
    )
    write_output(snapshot.to_json(), output)
    if problems:
        raise InputError("; ".join(problems))
