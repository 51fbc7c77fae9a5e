"""Options shared by several commands, declared once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, List, Optional

import typer

from envcheck import finite
from envcheck import output as outputs
from envcheck.report import (
    DataFormat,
    OutputFormat,
)


def within(low: float, high: Optional[float] = None) -> Callable[[Optional[float]], Any]:
    """A number option's range check. Checked here rather than with typer's min/max, which
    print the range in --help's type column and widen that column for every option; the
    option's help states the range instead. Out of range: a usage error, exit 2."""

    def check(value: Optional[float]) -> Optional[float]:
        try:
            finite.require_finite(value, "the value")
        except ValueError as exc:  # NaN passes both comparisons below
            raise typer.BadParameter(str(exc)) from None
        if value is not None and (value < low or (high is not None and value > high)):
            span = f"from {low:g} to {high:g}" if high is not None else f"at least {low:g}"
            raise typer.BadParameter(f"{value:g} is out of range: {span}")
        return value

    return check


def nonempty(value: Optional[str]) -> Optional[str]:
    """An empty --python or --data is a mistake (an unset variable), never "the default"."""
    if value is not None and not value.strip():
        raise typer.BadParameter("an empty value (an unset variable?)")
    return value


def nonempty_path(value: str) -> Path:
    """A path option's parser: as Path('') would silently mean the current folder."""
    if not value.strip():
        raise typer.BadParameter("an empty path (an unset variable?)")
    return Path(value)


PythonOpt = Annotated[
    Optional[str],
    typer.Option(
        "--python",
        metavar="<python>",
        callback=nonempty,
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
        metavar="<format>",
        help="Output format: text; json (the JSON contract); html (one self-contained page "
        "with the probe's charts); sarif (SARIF 2.1.0, for code scanning); junit (JUnit "
        "XML, one test case per check).",
        case_sensitive=False,
    ),
]
OutputOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--output",
        "-o",
        callback=outputs.check_target,
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
        parser=nonempty_path,
        metavar="PATH",
    ),
]
DataBudgetOpt = Annotated[
    float,
    typer.Option(
        "--data-budget",
        metavar="<seconds>",
        callback=within(0.5, 600.0),
        help="Seconds (0.5 to 600) for walking the dataset and sampling its read rate "
        "together; larger trees are estimated, and the estimate is marked.",
    ),
]
TargetRateOpt = Annotated[
    Optional[float],
    typer.Option(
        "--target-rate",
        metavar="<samples/s>",
        callback=within(1.0),
        help="Samples per second (at least 1) the training must be fed "
        "(e.g. the GPU's measured rate); EC407 compares the cold read rate with it.",
        show_default=False,
    ),
]
FailOnOpt = Annotated[
    Optional[str],
    typer.Option(
        "--fail-on",
        metavar="<severity>",
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
    ),
]
