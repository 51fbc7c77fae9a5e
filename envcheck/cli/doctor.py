"""`envcheck doctor` and `envcheck collect`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

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
    load_config,
    parse_severity,
    should_probe,
    unaudited_scripts,
    usable_data,
    with_probe_section,
    write_output,
)
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
from envcheck.engine.registry import builtin_registry
from envcheck.engine.selection import Selection
from envcheck.errors import InputError, UsageError
from envcheck.probe.settings import (
    DEFAULT_BUDGET_S,
    MAX_BUDGET_S,
    MIN_BUDGET_S,
    ProbeSettings,
)
from envcheck.report import (
    OutputFormat,
)

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
    data_budget: DataBudgetOpt = 5.0,
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
    if facts and (python or deep or data or script or probe):
        flag = (
            "--python"
            if python
            else "--deep"
            if deep
            else "--data"
            if data
            else "--script"
            if script
            else "--probe"
        )
        raise UsageError(
            f"{flag} and --facts exclude each other: the saved snapshot was collected already"
        )
    settings = load_config(config_path)
    threshold = parse_severity(fail_on, "--fail-on") or settings.fail_on or DEFAULT_FAIL_ON
    registry = builtin_registry([*settings.rule_paths, *(rules or [])])
    selection = Selection.of(select or [], ignore or []).merged_over(settings.selection)
    selection.check_known(r.id for r in registry)
    for rule_id in settings.acknowledged:
        if registry.get(rule_id) is None:
            raise InputError(f"{settings.path}: acknowledge {rule_id}: no such rule")
    data, data_problem = usable_data(data)
    if facts:
        snapshot = pipeline.load_snapshot(facts)
    else:
        snapshot = pipeline.take_snapshot(python, deep, data, data_budget, script or [])
    snapshot = pipeline.with_target_rate(snapshot, target_rate)
    if not facts and should_probe(probe, snapshot.data, data):
        snapshot = with_probe_section(
            snapshot,
            ProbeSettings(data=data, budget_s=probe_budget),
            None,
            {},
            explicit=bool(probe),
        )
    report = pipeline.diagnose(snapshot, registry, selection, settings.acknowledged)
    emit_report(report, output_format, output, threshold, verbose)
    if data_problem:  # the rest of the doctor ran; the bad --data is still an input error
        raise InputError(data_problem)
    script_problem = unaudited_scripts(snapshot.data)
    if script_problem:  # the other scripts were audited; the bad ones are input errors
        raise InputError(script_problem)
    worst = report.worst_severity()
    if not exit_zero and worst is not None and worst >= threshold:
        raise typer.Exit(EXIT_FINDINGS)


# collect ------------------------------------------------------------------------------


@app.command()
@guarded
def collect(
    python: PythonOpt = None,
    output: OutputOpt = None,
    deep: DeepOpt = False,
    data: DataOpt = None,
    data_budget: DataBudgetOpt = 5.0,
    script: ScriptOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Collect the snapshot of facts only (JSON), for `envcheck doctor --facts` later.

    The snapshot can be evaluated later or on another machine with
    `envcheck doctor --facts FILE`, or compared with another with `envcheck diff`."""
    if data is not None:
        problem = datadir.problem_with(data)
        if problem:
            raise InputError(f"--data {data}: {problem}")
    snapshot = pipeline.take_snapshot(python, deep, data, data_budget, script or [])
    write_output(snapshot.to_json(), output)
    problem = unaudited_scripts(snapshot.data)
    if problem:
        raise InputError(problem)
