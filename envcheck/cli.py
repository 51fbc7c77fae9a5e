"""The command line: a thin typer layer. Options in, exit code out.

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 usage or input
error (one line on stderr); 3 internal error (one line; the traceback with -v).
"""

from __future__ import annotations

import functools
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Annotated, Any, Callable, List, Mapping, Optional, TypeVar

import typer

from envcheck import __version__, config, datadir
from envcheck import doctor as pipeline
from envcheck.engine.registry import builtin_registry
from envcheck.engine.selection import Selection
from envcheck.errors import EnvcheckError, InputError, UsageError
from envcheck.model import Report, Severity
from envcheck.report import OutputFormat, json_report, text

EXIT_OK, EXIT_FINDINGS, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
DEFAULT_FAIL_ON = Severity.HIGH

app = typer.Typer(
    name="envcheck",
    help="Why is GPU training slow here, and which fix buys the most? "
    "Audits the environment, the machine and (later) the data and the training script.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
rules_app = typer.Typer(help="List and explain the rules envcheck applies.", no_args_is_help=True)
app.add_typer(rules_app, name="rules")

F = TypeVar("F", bound=Callable[..., Any])


def guarded(command: F) -> F:
    """Turn domain errors into exit 2 and crashes into exit 3, each as one line."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        verbose = bool(kwargs.get("verbose")) or bool(os.environ.get("ENVCHECK_DEBUG"))
        try:
            return command(*args, **kwargs)
        except typer.Exit:
            raise
        except EnvcheckError as exc:
            typer.echo(f"envcheck: error: {exc}", err=True)
            raise typer.Exit(EXIT_INPUT) from None
        except KeyboardInterrupt:
            typer.echo("envcheck: interrupted", err=True)
            raise typer.Exit(130) from None
        except Exception as exc:
            if verbose:
                traceback.print_exc()
            hint = "" if verbose else " (run with -v for the traceback)"
            typer.echo(f"envcheck: internal error: {type(exc).__name__}: {exc}{hint}", err=True)
            raise typer.Exit(EXIT_INTERNAL) from None

    return wrapper  # type: ignore[return-value]


# Shared options ---------------------------------------------------------------------

PythonOpt = Annotated[
    Optional[str],
    typer.Option(
        "--python",
        help="Audit this interpreter's environment (a path, a venv/conda folder, or a "
        "command on PATH) instead of the one envcheck runs in. It is run once to learn "
        "its sys.path; its packages are never imported.",
        show_default=False,
    ),
]
FormatOpt = Annotated[
    OutputFormat, typer.Option("--format", "-f", help="Output format.", case_sensitive=False)
]
OutputOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--output",
        "-o",
        help="Write the output to this file instead of stdout.",
        show_default=False,
        dir_okay=False,
    ),
]
RulesOpt = Annotated[
    Optional[List[Path]],
    typer.Option(
        "--rules",
        help="Extra rule file or folder of *.toml rule files "
        "(repeatable), e.g. your cluster's policy.",
        show_default=False,
    ),
]
DeepOpt = Annotated[
    bool,
    typer.Option(
        "--deep",
        help="Also import each installed framework (TensorFlow, PyTorch) "
        "in a child process of the audited interpreter, with a timeout, to see "
        "whether it really finds the GPU. Takes seconds per framework.",
    ),
]
ScriptOpt = Annotated[
    Optional[List[Path]],
    typer.Option(
        "--script",
        help="A training script, or a folder searched for *.py "
        "(repeatable). Read with Python's ast, never run: DataLoader, tf.data and "
        "Keras input-pipeline settings, each finding with file:line.",
        show_default=False,
    ),
]
DataOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--data",
        help="The dataset folder to audit: its storage class, file layout, "
        "cold and warm read rates, and antivirus scanning of it. Only ever read.",
        show_default=False,
        file_okay=True,
        dir_okay=True,
    ),
]
DataBudgetOpt = Annotated[
    float,
    typer.Option(
        "--data-budget",
        min=0.5,
        max=600.0,
        help="Seconds for walking the dataset and sampling its read rate together; "
        "larger trees are estimated, and the estimate is marked.",
    ),
]
TargetRateOpt = Annotated[
    Optional[float],
    typer.Option(
        "--target-rate",
        min=1.0,
        help="Samples per second the training must be fed "
        "(e.g. the GPU's measured rate); EC407 compares the cold read rate with it.",
        show_default=False,
    ),
]
VerboseOpt = Annotated[
    bool, typer.Option("--verbose", "-v", help="Show passing checks too; tracebacks on errors.")
]
ConfigOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--config",
        help="Config file (default: envcheck.toml or [tool.envcheck] in "
        "pyproject.toml, searched from the current folder upwards).",
        show_default=False,
        dir_okay=False,
    ),
]


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"envcheck {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version_callback,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """envcheck: measure why GPU training is slow and rank the fixes."""


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
    fail_on: Annotated[
        Optional[str],
        typer.Option(
            "--fail-on",
            help="Exit with code 1 when a finding has this severity or "
            "higher: info, low, medium, high, critical. [default: high]",
            show_default=False,
        ),
    ] = None,
    exit_zero: Annotated[
        bool, typer.Option("--exit-zero", help="Exit 0 even when findings reach --fail-on.")
    ] = False,
    select: Annotated[
        Optional[List[str]],
        typer.Option(
            "--select",
            help="Run only rules whose id starts with one of these "
            "prefixes (comma-separated or repeated), e.g. EC1.",
            show_default=False,
        ),
    ] = None,
    ignore: Annotated[
        Optional[List[str]],
        typer.Option(
            "--ignore",
            help="Skip rules whose id starts with one of these prefixes. "
            "The longest matching prefix of --select/--ignore wins.",
            show_default=False,
        ),
    ] = None,
    rules: RulesOpt = None,
    config_path: ConfigOpt = None,
    deep: DeepOpt = False,
    data: DataOpt = None,
    data_budget: DataBudgetOpt = 5.0,
    target_rate: TargetRateOpt = None,
    script: ScriptOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Audit the environment and machine; print a ranked list of fixes.

    Exit codes: 0 nothing at or above --fail-on, 1 findings at or above it,
    2 usage or input error, 3 internal error.
    """
    if facts and (python or deep or data or script):
        flag = "--python" if python else "--deep" if deep else "--data" if data else "--script"
        raise UsageError(
            f"{flag} and --facts exclude each other: the saved snapshot was collected already"
        )
    settings = _load_config(config_path)
    threshold = _severity(fail_on, "--fail-on") or settings.fail_on or DEFAULT_FAIL_ON
    registry = builtin_registry([*settings.rule_paths, *(rules or [])])
    selection = Selection.of(select or [], ignore or []).merged_over(settings.selection)
    selection.check_known(r.id for r in registry)
    for rule_id in settings.acknowledged:
        if registry.get(rule_id) is None:
            raise InputError(f"{settings.path}: acknowledge {rule_id}: no such rule")
    data, data_problem = _usable_data(data)
    if facts:
        snapshot = pipeline.load_snapshot(facts)
    else:
        snapshot = pipeline.take_snapshot(python, deep, data, data_budget, script or [])
    snapshot = pipeline.with_target_rate(snapshot, target_rate)
    report = pipeline.diagnose(snapshot, registry, selection, settings.acknowledged)
    _emit_report(report, output_format, output, threshold, verbose)
    if data_problem:  # the rest of the doctor ran; the bad --data is still an input error
        raise InputError(data_problem)
    script_problem = _script_problem(snapshot.data)
    if script_problem:  # the other scripts were audited; the bad ones are input errors
        raise InputError(script_problem)
    worst = report.worst_severity()
    if not exit_zero and worst is not None and worst >= threshold:
        raise typer.Exit(EXIT_FINDINGS)


def _script_problem(facts: Mapping[str, Any]) -> Optional[str]:
    """One line naming the --script files that could not be audited, if any."""
    section = facts.get("scripts")
    errors = section.get("errors") if isinstance(section, dict) else None
    if not errors:
        return None
    shown = []
    for error in errors[:3]:
        where = str(error.get("path"))
        if error.get("line"):
            where += f":{error['line']}" + (f":{error['column']}" if error.get("column") else "")
        shown.append(f"{where}: {error.get('reason')}")
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return f"--script: {len(errors)} could not be audited: " + "; ".join(shown) + more


def _usable_data(data: Optional[Path]) -> tuple[Optional[Path], Optional[str]]:
    """(the folder to audit, or None; the problem with --data, if any)."""
    if data is None:
        return None, None
    problem = datadir.problem_with(data)
    if problem:
        return None, f"--data {data}: {problem}"
    return data, None


def _load_config(path: Optional[Path]) -> config.Config:
    if path is not None:
        return config.load(path, explicit=True)
    return config.load(config.find(Path.cwd()))


def _severity(value: Optional[str], flag: str) -> Optional[Severity]:
    if value is None:
        return None
    try:
        return Severity.parse(value)
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc}") from None


def _emit_report(
    report: Report, fmt: OutputFormat, output: Optional[Path], fail_on: Severity, verbose: bool
) -> None:
    if fmt is OutputFormat.JSON:
        _write(json_report.render(report, fail_on), output)
        return
    if output is None:
        text.print_report(report, text.make_console(), verbose)
        return
    with _open_output(output) as handle:
        text.print_report(report, text.make_console(file=handle), verbose)


def _write(content: str, output: Optional[Path]) -> None:
    if output is None:
        sys.stdout.write(content)
        sys.stdout.flush()
        return
    with _open_output(output) as handle:
        handle.write(content)


def _open_output(output: Path) -> Any:
    try:
        return open(output, "w", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"-o {output}: cannot write ({exc.strerror or exc})") from None


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
    """Collect the snapshot of facts only (JSON), to evaluate later or elsewhere with
    `envcheck doctor --facts FILE`."""
    if data is not None:
        problem = datadir.problem_with(data)
        if problem:
            raise InputError(f"--data {data}: {problem}")
    snapshot = pipeline.take_snapshot(python, deep, data, data_budget, script or [])
    _write(snapshot.to_json(), output)
    problem = _script_problem(snapshot.data)
    if problem:
        raise InputError(problem)


# rules --------------------------------------------------------------------------------


@rules_app.command("list")
@guarded
def rules_list(
    output_format: FormatOpt = OutputFormat.TEXT,
    rules: RulesOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """List every rule: id, severity, category, name and summary."""
    registry = builtin_registry(rules or [])
    if output_format is OutputFormat.JSON:
        _write(json.dumps([_rule_json(r) for r in registry], indent=2) + "\n", None)
        return
    for rule in registry:
        typer.echo(
            f"{rule.id}  {rule.severity.value:<8} {rule.category:<12} {rule.name}: {rule.summary}"
        )


@rules_app.command("show")
@guarded
def rules_show(
    rule_id: Annotated[str, typer.Argument(help="The rule id, e.g. EC101.", show_default=False)],
    output_format: FormatOpt = OutputFormat.TEXT,
    rules: RulesOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Explain one rule: what it detects, why it costs time, the fix and the evidence."""
    registry = builtin_registry(rules or [])
    rule = registry.get(rule_id)
    if rule is None:
        raise UsageError(f"no rule with id {rule_id!r} (see `envcheck rules list`)")
    if output_format is OutputFormat.JSON:
        _write(json.dumps(_rule_json(rule), indent=2) + "\n", None)
        return
    typer.echo(f"{rule.id} {rule.name}  [{rule.severity.value}, {rule.category}]")
    typer.echo(f"{rule.summary}\n")
    if rule.docs:
        typer.echo(rule.docs + "\n")
    typer.echo(f"Message: {rule.message}")
    typer.echo(f"Fix:     {rule.fix}")
    if rule.impact:
        typer.echo(
            f"Impact:  up to {rule.impact.speedup:g}x ({rule.impact.basis.value}: "
            f"{rule.impact.source})"
        )
    typer.echo("Evidence:")
    for item in rule.evidence:
        typer.echo(f"  - {item}")
    typer.echo(f"Defined in: {rule.origin}")


def _rule_json(rule: Any) -> dict[str, Any]:
    return {
        "id": rule.id,
        "name": rule.name,
        "severity": rule.severity.value,
        "category": rule.category,
        "summary": rule.summary,
        "message": rule.message,
        "fix": rule.fix,
        "impact": rule.impact.to_json() if rule.impact else None,
        "evidence": list(rule.evidence),
        "docs": rule.docs,
        "origin": rule.origin,
    }


def main() -> None:
    app()
