"""The command line: a thin typer layer. Options in, exit code out.

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 usage or input
error (one line on stderr); 3 internal error (one line; the traceback with -v).
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Annotated, Any, Callable, List, Mapping, Optional, TypeVar

import typer

from envcheck import __version__, config, datadir
from envcheck import doctor as pipeline
from envcheck.diff import DiffFormat
from envcheck.engine.registry import builtin_registry
from envcheck.engine.selection import Selection
from envcheck.errors import EnvcheckError, InputError, UsageError
from envcheck.model import Report, Severity
from envcheck.probe.plan import plan
from envcheck.probe.session import measure
from envcheck.probe.settings import DEFAULT_BUDGET_S, ProbeSettings, usable_cores
from envcheck.report import (
    DataFormat,
    OutputFormat,
    ScriptsFormat,
    json_report,
    junit,
    sarif,
    script_lines,
    text,
)
from envcheck.report import html as html_report
from envcheck.snapshot import Snapshot

EXIT_OK, EXIT_FINDINGS, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
DEFAULT_FAIL_ON = Severity.HIGH

app = typer.Typer(
    name="envcheck",
    help="Why is GPU training slow here, and which fix buys the most? "
    "Audits the environment, the machine, the data and the training scripts, and measures "
    "the input pipeline with a short training probe.",
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
    OutputFormat,
    typer.Option(
        "--format",
        "-f",
        help="Output format. html: one self-contained page with the probe's charts; "
        "sarif: SARIF 2.1.0, for code scanning; junit: JUnit XML, one test case per check.",
        case_sensitive=False,
    ),
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
FailOnOpt = Annotated[
    Optional[str],
    typer.Option(
        "--fail-on",
        help="Exit with code 1 when a finding has this severity or higher: info, low, "
        "medium, high, critical. \\[default: high, or the config file's fail-on]",
        show_default=False,
    ),
]
ExitZeroOpt = Annotated[
    bool, typer.Option("--exit-zero", help="Exit 0 even when findings reach --fail-on.")
]
IgnoreOpt = Annotated[
    Optional[List[str]],
    typer.Option(
        "--ignore",
        help="Skip rules whose id starts with one of these prefixes. "
        "The longest matching prefix of --select/--ignore wins.",
        show_default=False,
    ),
]
RulesFormatOpt = Annotated[
    DataFormat,
    typer.Option("--format", "-f", help="Output format.", case_sensitive=False),
]
VerboseOpt = Annotated[
    bool, typer.Option("--verbose", "-v", help="Show passing checks too; tracebacks on errors.")
]
ConfigOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--config",
        help="Config file (default: envcheck.toml or \\[tool.envcheck] in "
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
        typer.Option("--probe-budget", min=2.0, max=3600.0, help="Seconds for the probe."),
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
    if not facts and _should_probe(probe, snapshot.data, data):
        snapshot = _probed(
            snapshot,
            ProbeSettings(data=data, budget_s=probe_budget),
            None,
            {},
            explicit=bool(probe),
        )
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


def _should_probe(asked: Optional[bool], facts: Mapping[str, Any], data: Any) -> bool:
    """--probe / --no-probe, else: a visible NVIDIA GPU and a --data folder."""
    if asked is not None:
        return asked
    gpu = facts.get("gpu") or {}
    return gpu.get("status") == "ok" and bool(gpu.get("devices")) and data is not None


def _probed(
    snapshot: Any,
    base: ProbeSettings,
    framework: Optional[str],
    flags: Mapping[str, Any],
    explicit: bool,
) -> Any:
    """The snapshot with the probe's section; an automatic probe that cannot choose a
    framework is recorded as skipped instead of failing the doctor."""
    start = time.monotonic()
    try:
        settings = plan(snapshot.data, base, framework, flags, usable_cores())
    except UsageError as exc:
        if explicit:
            raise
        data = snapshot.as_dict()
        data.setdefault("collectors", {})["probe"] = {
            "status": "unavailable",
            "reason": str(exc),
            "seconds": 0.0,
        }
        return Snapshot(data)
    section = measure(snapshot.data, settings)
    return pipeline.with_probe(snapshot, section, time.monotonic() - start)


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
    if fmt is OutputFormat.HTML:
        _write(html_report.render(report, fail_on), output)
        return
    if fmt is OutputFormat.SARIF:
        _write(sarif.render(report, fail_on), output)
        return
    if fmt is OutputFormat.JUNIT:
        _write(junit.render(report, fail_on), output)
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
            help="The interpreter the scripts train with (its TensorFlow version decides "
            "which tf.data defaults apply). Default: the one envcheck runs in.",
            show_default=False,
        ),
    ] = None,
    verbose: VerboseOpt = False,
) -> None:
    """Audit training scripts only: the input-pipeline and training-loop rules (EC5xx),
    read with Python's ast, never run. For pre-commit, editors and CI.

    The machine rules do not run, but the script rules still read this machine's facts
    where they matter: its usable CPUs (worker counts), its GPUs (mixed precision, TF32)
    and the installed framework versions.

    Exit codes: 0 nothing at or above --fail-on, 1 findings at or above it, 2 a path that
    is missing or does not parse (the other files are still audited), 3 internal error.
    """
    if not paths:
        raise UsageError("envcheck scripts needs at least one file or folder, e.g. train.py")
    settings = _load_config(config_path)
    threshold = _severity(fail_on, "--fail-on") or settings.fail_on or DEFAULT_FAIL_ON
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
        _write(script_lines.render(report, threshold), output)
    else:
        _emit_report(report, OutputFormat(output_format.value), output, threshold, verbose)
    if _script_problem(snapshot.data):
        raise typer.Exit(EXIT_INPUT)  # each unreadable file is named in the output already
    worst = report.worst_severity()
    if not exit_zero and worst is not None and worst >= threshold:
        raise typer.Exit(EXIT_FINDINGS)


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
            min=2.0,
            max=3600.0,
            help="Seconds for all measuring phases together, after the framework import.",
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
            help="Exit 1 when a probe finding has this severity or higher. \\[default: high]",
            show_default=False,
        ),
    ] = None,
    exit_zero: ExitZeroOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Measure whether training is input-bound: the model's compute ceiling, the input
    pipeline alone (cached and cold files), the two together, and the worker count that
    fixes it. Runs in a child process of the audited interpreter with a hard timeout.

    Without a GPU it runs on the CPU and labels every number as CPU.
    """
    threshold = _severity(fail_on, "--fail-on") or DEFAULT_FAIL_ON
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
    snapshot = _probed(snapshot, base, framework, flags, explicit=True)
    registry = builtin_registry()
    report = pipeline.diagnose(snapshot, registry, Selection.of(["EC6"], []))
    _emit_report(report, output_format, output, threshold, verbose)
    worst = report.worst_severity()
    if not exit_zero and worst is not None and worst >= threshold:
        raise typer.Exit(EXIT_FINDINGS)


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
        DataFormat,
        typer.Option(
            "--format",
            "-f",
            help="Format of the doctor's report, written to stderr when it stops the command "
            "(the command's own stdout stays untouched).",
            case_sensitive=False,
        ),
    ] = DataFormat.TEXT,
    output: Annotated[
        Optional[Path],
        typer.Option(
            "--output",
            "-o",
            help="Save the run's summary (JSON) to this file.",
            show_default=False,
            dir_okay=False,
        ),
    ] = None,
    watch: Annotated[
        float,
        typer.Option(
            "--watch", min=1.0, help="Seconds of the command's start to sample GPU utilisation."
        ),
    ] = 120.0,
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
    report, settings = hook.doctor_report(
        python=python,
        data=data,
        scripts=script or [],
        probe=probe,
        select=select or [],
        ignore=ignore or [],
        rules=rules or [],
        config_path=config_path,
    )
    threshold = _severity(fail_on, "--fail-on") or settings.fail_on or DEFAULT_FAIL_ON
    blocked = bool(hook.blocking(report, threshold))
    if blocked:
        _emit_report_to_stderr(report, output_format, threshold, verbose)
        typer.echo(hook.failure_line(report, threshold), err=True)
        if not warn_only:
            typer.echo("envcheck: not running the command (--warn-only runs it anyway)", err=True)
            if output is not None:
                summary = hook.summary_json(
                    args, None, watch, 0.0, hook.utilisation([]), report, {}, True
                )
                _write(json.dumps(summary, indent=2) + "\n", output)
            raise typer.Exit(EXIT_FINDINGS)
    else:
        below = hook.below_line(report, threshold)
        if below:
            typer.echo(below, err=True)
    sampler = hook.make_sampler()
    try:
        code, watched, util = hook.run_watched(args, watch, sampler)
    except hook.CommandNotRunnable as exc:
        typer.echo(f"envcheck: error: {exc}", err=True)
        raise typer.Exit(exc.code) from None
    finally:
        hook.close_gpu(sampler.nvml)
    about = sampler.summary()
    typer.echo(hook.summary_line(util, watched, report, about.get("gpu_reason")), err=True)
    if output is not None:
        summary = hook.summary_json(args, code, watch, watched, util, report, about)
        try:
            _write(json.dumps(summary, indent=2) + "\n", output)
        except InputError as exc:  # the command ran: its exit code still wins
            typer.echo(f"envcheck: error: {exc}", err=True)
    raise typer.Exit(code)


def _emit_report_to_stderr(
    report: Report, fmt: DataFormat, fail_on: Severity, verbose: bool
) -> None:
    """The doctor's report on stderr, so the command's stdout stays its own."""
    if fmt is DataFormat.JSON:
        sys.stderr.write(json_report.render(report, fail_on))
        sys.stderr.flush()
        return
    text.print_report(report, text.make_console(file=sys.stderr), verbose)


# diff ---------------------------------------------------------------------------------


@app.command("diff")
@guarded
def diff_command(
    a: Annotated[
        Path,
        typer.Argument(
            help="The baseline: a snapshot (envcheck collect -o) or a JSON report "
            "(envcheck doctor --format json).",
            show_default=False,
            metavar="A",
        ),
    ],
    b: Annotated[
        Path,
        typer.Argument(
            help="The one compared with it (same kinds).", show_default=False, metavar="B"
        ),
    ],
    output_format: Annotated[
        DiffFormat, typer.Option("--format", "-f", help="Output format.", case_sensitive=False)
    ] = DiffFormat.TEXT,
    output: OutputOpt = None,
    fail_on: Annotated[
        Optional[str],
        typer.Option(
            "--fail-on",
            help="Exit 1 when B has findings of this severity or higher that A did not "
            "have (matched by rule id and location). \\[default: high]",
            show_default=False,
        ),
    ] = None,
    exit_zero: Annotated[
        bool, typer.Option("--exit-zero", help="Exit 0 even when B has new findings.")
    ] = False,
    verbose: VerboseOpt = False,
) -> None:
    """Compare two saved snapshots or reports (two machines, or one machine on two days):
    what differs for speed first (driver, GPUs, framework builds, storage, CPU, memory,
    probe rates, findings added/removed), then packages, environment and platform.

    A bare snapshot is evaluated with the built-in rules, so it compares alike with a report.

    Exit codes: 0 no new findings at or above --fail-on, 1 new ones, 2 bad input.
    """
    from envcheck import diff as diffing

    threshold = _severity(fail_on, "--fail-on") or DEFAULT_FAIL_ON
    registry = builtin_registry()

    def evaluate(snapshot: Snapshot) -> Any:
        return [r.finding for r in pipeline.diagnose(snapshot, registry).findings]

    result = diffing.compare(diffing.load_side(a, evaluate), diffing.load_side(b, evaluate))
    if output_format is DiffFormat.JSON:
        _write(diffing.render_json(result, threshold), output)
    else:
        _write(diffing.render_text(result, threshold), output)
    if not exit_zero and result.new_failures(threshold):
        raise typer.Exit(EXIT_FINDINGS)


# rules --------------------------------------------------------------------------------


@rules_app.command("list")
@guarded
def rules_list(
    output_format: RulesFormatOpt = DataFormat.TEXT,
    rules: RulesOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """List every rule: id, severity, category, name and summary."""
    registry = builtin_registry(rules or [])
    if output_format is DataFormat.JSON:
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
    output_format: RulesFormatOpt = DataFormat.TEXT,
    rules: RulesOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Explain one rule: what it detects, why it costs time, the fix and the evidence."""
    registry = builtin_registry(rules or [])
    rule = registry.get(rule_id)
    if rule is None:
        raise UsageError(f"no rule with id {rule_id!r} (see `envcheck rules list`)")
    if output_format is DataFormat.JSON:
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
