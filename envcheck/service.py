"""The application service: one request in, one audit (a ranked Report) out.

Why: every entry point (`doctor`, `collect`, `scripts`, `probe`, `run`, `preflight()`,
`inspect()` and the training callbacks) used to wire configuration, rule registry,
selection, snapshot, probe, evaluation and ranking itself, and they drifted apart (an
unknown acknowledged rule failed the doctor but not `scripts`). Modelled on pip-audit's
`Auditor`: a frozen request and one function from request to result, so the same input
behaves the same everywhere and new capabilities plug into one place.

The order is fixed: validate the request and load the configuration and rules (cheap,
so bad input fails before any work), then the snapshot (collected, or loaded with
--facts), the probe when asked, evaluation and ranking. Input problems that should not
stop the rest (a bad --data folder in the doctor, an unreadable script) are returned in
`Audit.problems`; the adapter prints the report first, then fails with them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from envcheck import __version__, config, datadir, defaults, inputs, interpreter
from envcheck.collect import collect_snapshot, now_iso
from envcheck.collectors.base import CollectContext, run_collector
from envcheck.deep import deep_check
from envcheck.engine.evaluate import evaluate
from envcheck.engine.rank import rank
from envcheck.engine.registry import Registry
from envcheck.engine.selection import Selection
from envcheck.errors import InputError, UsageError
from envcheck.model import Finding, Report, Severity
from envcheck.probe.settings import ProbeSettings
from envcheck.rulebook import builtin_registry
from envcheck.scripts import target as training_machine
from envcheck.snapshot import Facts, Snapshot

# The collectors the probe's plan reads (interpreter, GPUs, frameworks, the script's
# loader settings, usable cores): `envcheck probe` collects only these.
PROBE_SECTIONS = ("platform", "cpu", "memory", "packages", "gpu", "frameworks", "scripts")
# The id ranges a command can be limited to, as users read them.
SCOPES = {"EC5": "the script rules", "EC6": "the probe rules"}


@dataclass(frozen=True)
class ProbeRequest:
    """The probe inside an audit: the user's settings before planning, the framework
    asked for ("auto" or a name), loader flags, and whether it was asked for explicitly
    (an automatic probe that cannot run is recorded as skipped instead of failing)."""

    settings: ProbeSettings = field(default_factory=ProbeSettings)
    framework: Optional[str] = None
    flags: Mapping[str, Any] = field(default_factory=dict)
    explicit: bool = True
    show_progress: Optional[bool] = None


@dataclass(frozen=True)
class AuditRequest:
    """What to audit and how; every field has the default a user gets without flags."""

    python: Optional[str] = None  # the audited interpreter; None: this one
    facts_file: Optional[Path] = None  # evaluate a saved snapshot instead of collecting
    only: Optional[tuple[str, ...]] = None  # collectors to run; None: all
    supplied: Mapping[str, Any] = field(default_factory=dict)  # sections given by the caller
    deep: bool = False
    data: Optional[Path] = None
    data_budget_s: float = defaults.DATA_BUDGET_S
    target_rate: Optional[float] = None
    scripts: tuple[Path, ...] = ()
    # None: probe when an NVIDIA GPU is visible and --data is given; True/False: as asked
    probe: Optional[bool] = False
    probe_request: ProbeRequest = field(default_factory=ProbeRequest)
    scope: Optional[str] = None  # a command limited to one id range ("EC5", "EC6")
    # Judge machine-dependent rules against a declared training machine (--target FILE,
    # else the config's [target]; without either they say unknown), not this machine:
    # `envcheck scripts`, which runs on a laptop or CI runner.
    judge_target: bool = False
    target: Optional[Path] = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    rule_paths: tuple[Path, ...] = ()
    config_path: Optional[Path] = None  # --config; None: found from the current folder
    fail_on: Optional[Severity] = None  # None: the config's, else defaults.FAIL_ON
    data_is_fatal: bool = False  # a bad --data stops before collecting (collect, run, probe)


@dataclass(frozen=True)
class Plan:
    """The validated request with its configuration, rules and selection."""

    request: AuditRequest
    config: config.Config
    registry: Registry
    selection: Selection
    fail_on: Severity
    data: Optional[Path]
    problems: tuple[str, ...]
    target: Optional[training_machine.Target] = None


@dataclass(frozen=True)
class Audit:
    """The outcome: the ranked Report, the snapshot it judged, the threshold in force and
    the input problems met on the way (reported after the report, exit 2)."""

    report: Report
    snapshot: Snapshot
    config: config.Config
    fail_on: Severity
    problems: tuple[str, ...] = ()
    plan: Optional[Plan] = None

    def blocking(self) -> list[Finding]:
        """Active findings at or above the threshold, in rank order."""
        return self.report.at_or_above(self.fail_on)

    def raise_problems(self) -> None:
        if self.problems:
            raise InputError("; ".join(self.problems))


def prepare(request: AuditRequest) -> Plan:
    """Check the request and load configuration and rules; raise before any work."""
    if request.facts_file is not None:
        _check_facts_exclusive(request)
    settings = (
        config.load(request.config_path, explicit=True)
        if request.config_path is not None
        else config.load(config.find(Path.cwd()))
    )
    registry = builtin_registry([*settings.rule_paths, *request.rule_paths])
    selection = _selection(request, settings)
    selection.check_known(r.id for r in registry)
    for rule_id in settings.acknowledged:
        if registry.get(rule_id) is None:
            raise InputError(f"{settings.path}: acknowledge {rule_id}: no such rule")
    threshold = request.fail_on or settings.fail_on or defaults.FAIL_ON
    target = (
        training_machine.from_snapshot(request.target)
        if request.target is not None
        else settings.target
    )
    data, problems = request.data, tuple[str, ...]()
    if data is not None:
        inputs.note(data, "inside the --data folder", tree=True)  # -o never writes there
        problem = datadir.problem_with(data)
        if problem:
            if request.data_is_fatal:
                raise InputError(f"--data {data}: {problem}")
            data, problems = None, (f"--data {request.data}: {problem}",)
    return Plan(request, settings, registry, selection, threshold, data, problems, target)


def audit(request: AuditRequest) -> Audit:
    """The whole pipeline: plan, snapshot, probe, evaluate, rank."""
    plan = prepare(request)
    snapshot = snapshot_for(plan)
    report = diagnose(snapshot, plan.registry, plan.selection, plan.config.acknowledged)
    problems = plan.problems + _script_problems(snapshot.data)
    return Audit(report, snapshot, plan.config, plan.fail_on, problems, plan)


def with_measured(result: Audit, sections: Mapping[str, Any]) -> Audit:
    """The same audit judged again with measured sections added (a real run's `run`, a
    fix's `fix`), by the same rules and selection: one ranked list of the measured, the
    static and the environment's findings."""
    if result.plan is None:
        raise ValueError("with_measured needs an audit made by service.audit")
    facts = result.snapshot.as_dict()
    collectors = facts.setdefault("collectors", {})
    for name, section in sections.items():
        facts[name] = section
        collectors[name] = {"status": "ok", "reason": None, "seconds": 0.0}
    snapshot = Snapshot(facts)
    plan = result.plan
    report = diagnose(snapshot, plan.registry, plan.selection, plan.config.acknowledged)
    return Audit(report, snapshot, result.config, result.fail_on, result.problems, plan)


def collect(request: AuditRequest) -> tuple[Snapshot, tuple[str, ...]]:
    """The snapshot alone (`envcheck collect`), and the input problems met."""
    plan = prepare(request)
    snapshot = snapshot_for(plan)
    return snapshot, plan.problems + _script_problems(snapshot.data)


def snapshot_for(plan: Plan) -> Snapshot:
    request = plan.request
    if request.facts_file is not None:
        snapshot = Snapshot.load(request.facts_file)
    else:
        snapshot = take_snapshot(
            request.python,
            request.deep,
            plan.data,
            request.data_budget_s,
            request.scripts,
            request.only,
            request.supplied,
        )
    if request.judge_target:
        snapshot = training_machine.apply(snapshot, plan.target)
    snapshot = with_target_rate(snapshot, request.target_rate)
    if request.facts_file is None and should_probe(request.probe, snapshot.data, plan.data):
        snapshot = with_probe_run(snapshot, request.probe_request, plan.data)
    return snapshot


def take_snapshot(
    python: Optional[str] = None,
    deep: bool = False,
    data: Optional[Path] = None,
    data_budget: float = defaults.DATA_BUDGET_S,
    scripts: Sequence[Path] = (),
    only: Optional[Sequence[str]] = None,
    supplied: Mapping[str, Any] = {},
) -> Snapshot:
    """Collect facts about this machine and the audited interpreter (this one by default).

    With `deep`, each installed framework is also imported, in a child process of the
    audited interpreter with a timeout, to record whether it really sees the GPU.
    `supplied` sections (a live loader's facts) are taken as given, as if collected."""
    audited = interpreter.target(python) if python else interpreter.current()
    ctx = CollectContext(
        interpreter=audited, data=data, data_budget_s=data_budget, scripts=tuple(scripts)
    )
    snapshot = collect_snapshot(ctx, only)
    if not deep and not supplied:
        return snapshot
    facts = snapshot.as_dict()
    for section, value in supplied.items():
        facts["collectors"][section] = {"status": "ok", "reason": None, "seconds": 0.0}
        facts[section] = value
    if deep:
        frameworks = facts.get("frameworks") or {}
        installed = {name: bool(frameworks.get(name)) for name in ("tensorflow", "torch")}
        outcome = run_collector(
            "deep", lambda _ctx: deep_check(audited.executable, installed), CollectContext(audited)
        )
        facts["collectors"]["deep"] = outcome.status_json()
        facts["deep"] = outcome.sections.get("deep")
    return Snapshot(facts)


def with_target_rate(snapshot: Snapshot, rate: Optional[float]) -> Snapshot:
    """Record the samples/s the training needs next to the measured read rate (EC407)."""
    throughput = snapshot.data.get("read_throughput")
    if rate is None or not isinstance(throughput, dict):
        return snapshot
    data = snapshot.as_dict()
    data["read_throughput"]["target_samples_per_s"] = rate
    data["read_throughput"]["target_source"] = "given with --target-rate"
    return Snapshot(data)


def should_probe(asked: Optional[bool], facts: Mapping[str, Any], data: Any) -> bool:
    """--probe / --no-probe, else: a visible NVIDIA GPU and a --data folder."""
    if asked is not None:
        return asked
    gpu = facts.get("gpu") or {}
    return gpu.get("status") == "ok" and bool(gpu.get("devices")) and data is not None


def with_probe_run(snapshot: Snapshot, probe: ProbeRequest, data: Optional[Path]) -> Snapshot:
    """The snapshot with the probe's section. An automatic probe that cannot choose a
    framework is recorded as unavailable instead of failing the audit."""
    from dataclasses import replace

    from envcheck.probe.plan import plan
    from envcheck.probe.session import measure
    from envcheck.probe.settings import usable_cores

    base = probe.settings if probe.settings.data is not None else replace(probe.settings, data=data)
    start = time.monotonic()
    try:
        settings = plan(snapshot.data, base, probe.framework, dict(probe.flags), usable_cores())
    except UsageError as exc:
        if probe.explicit:
            raise
        facts = snapshot.as_dict()
        facts.setdefault("collectors", {})["probe"] = {
            "status": "unavailable",
            "reason": str(exc),
            "seconds": 0.0,
        }
        return Snapshot(facts)
    section = measure(snapshot.data, settings, show_progress=probe.show_progress)
    return with_probe(snapshot, section, time.monotonic() - start)


def with_probe(snapshot: Snapshot, probe: Mapping[str, Any], seconds: float) -> Snapshot:
    """Add the probe's measurements; its compute rate becomes EC407's target read rate
    unless --target-rate gave one."""
    data = snapshot.as_dict()
    data["probe"] = dict(probe)
    data.setdefault("collectors", {})["probe"] = {
        "status": "ok",
        "reason": None,
        "seconds": round(seconds, 4),
    }
    throughput = data.get("read_throughput")
    compute = (probe.get("rates") or {}).get("compute")
    if isinstance(throughput, dict) and compute and not throughput.get("target_samples_per_s"):
        throughput["target_samples_per_s"] = compute
        throughput["target_source"] = f"the probe's compute ceiling on {probe.get('device')}"
    return Snapshot(data)


def diagnose(
    snapshot: Snapshot,
    registry: Registry,
    selection: Optional[Selection] = None,
    acknowledged: Optional[Mapping[str, str]] = None,
) -> Report:
    """Evaluate the selected rules on a snapshot and rank the findings."""
    checks = evaluate(registry, Facts(snapshot), selection, acknowledged)
    findings = [f for c in checks for f in c.findings]
    rules = {c.id: rule.info() for c in checks if (rule := registry.get(c.id)) is not None}
    return Report(
        tool_version=__version__,
        created=now_iso(),
        findings=rank(findings),
        checks=checks,
        facts=snapshot.data,
        probe=snapshot.data.get("probe"),
        rules=rules,
    )


def _selection(request: AuditRequest, settings: config.Config) -> Selection:
    """Command-line choices over the config file's; a scoped command (scripts, probe)
    keeps only the config's choices within its id range."""
    chosen = Selection.of(request.select, request.ignore)
    scope = request.scope
    if scope is None:
        return chosen.merged_over(settings.selection)
    outside = [p for p in chosen.select if not p.startswith(scope)]
    if outside:
        raise UsageError(
            f"--select {outside[0]}: this command runs only {SCOPES.get(scope, 'the')} "
            f"({scope}xx); "
            "use envcheck doctor for the others"
        )
    configured = tuple(p for p in settings.selection.select if p.startswith(scope))
    select = chosen.select or configured or (scope,)
    return Selection(select, tuple(dict.fromkeys(settings.selection.ignore + chosen.ignore)))


def _check_facts_exclusive(request: AuditRequest) -> None:
    for flag, given in (
        ("--python", request.python),
        ("--deep", request.deep),
        ("--data", request.data),
        ("--script", request.scripts),
        ("--probe", request.probe),
    ):
        if given:
            raise UsageError(
                f"{flag} and --facts exclude each other: the saved snapshot was collected already"
            )


def _script_problems(facts: Mapping[str, Any]) -> tuple[str, ...]:
    """One line naming the --script files that could not be audited, if any."""
    section = facts.get("scripts")
    errors = section.get("errors") if isinstance(section, dict) else None
    if not errors:
        return ()
    shown = []
    for error in errors[:3]:
        where = str(error.get("path"))
        if error.get("line"):
            where += f":{error['line']}" + (f":{error['column']}" if error.get("column") else "")
        shown.append(f"{where}: {error.get('reason')}")
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return (f"--script: {len(errors)} could not be audited: " + "; ".join(shown) + more,)
