"""`envcheck diff A B`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from envcheck import defaults, service
from envcheck.cli.app import EXIT_FINDINGS, app, guarded
from envcheck.cli.common import (
    parse_severity,
    write_output,
)
from envcheck.cli.options import (
    OutputOpt,
    VerboseOpt,
)
from envcheck.report import DataFormat
from envcheck.report.escape import visible_lines
from envcheck.rulebook import builtin_registry
from envcheck.snapshot import Snapshot

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
        DataFormat, typer.Option("--format", "-f", help="Output format.", case_sensitive=False)
    ] = DataFormat.TEXT,
    output: OutputOpt = None,
    fail_on: Annotated[
        Optional[str],
        typer.Option(
            "--fail-on",
            metavar="<severity>",
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
    """Compare two saved snapshots or reports: what differs for speed first.

    Two machines, or one machine on two days: first what matters for speed (driver, GPUs,
    framework builds, storage, CPU, memory, probe rates, findings added or removed), then
    packages, environment and platform.

    A bare snapshot is evaluated with the built-in rules, so it compares alike with a report.

    Exit codes: 0 no new findings at or above --fail-on, 1 new ones, 2 bad input.
    """
    from envcheck import diff as diffing
    from envcheck.report import diff as rendering

    threshold = parse_severity(fail_on, "--fail-on") or defaults.FAIL_ON
    registry = builtin_registry()

    def evaluate(snapshot: Snapshot) -> Any:
        return [r.finding for r in service.diagnose(snapshot, registry).findings]

    result = diffing.compare(diffing.load_side(a, evaluate), diffing.load_side(b, evaluate))
    if output_format is DataFormat.JSON:
        write_output(rendering.render_json(result, threshold), output)
    else:
        write_output(visible_lines(rendering.render_text(result, threshold)), output)
    if not exit_zero and result.new_failures(threshold):
        raise typer.Exit(EXIT_FINDINGS)
