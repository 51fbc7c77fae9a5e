"""antivirus collector: Defender through recorded PowerShell answers, ClamAV and Linux agents
from a fake root and /proc, macOS system extensions from recorded `systemextensionsctl list`.

The outputs below are shaped like the real ones: `ConvertTo-Json` of Windows PowerShell 5.1
(four-space indent, two spaces after the colon), `mdatp health --output json` as captured in
glpi-project/glpi-agent resources/linux/antivirus/defender-101.23062.0010.json, and
`systemextensionsctl list` with its "--- <category>" headers and tab-separated rows.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from pathlib import Path
from typing import Any, Optional, Union

import pytest
from conftest import failing_rules, rule_statuses

from envcheck.collectors import antivirus
from envcheck.collectors.antivirus import linux, macos, windows
from envcheck.collectors.base import CollectContext, run_collector
from envcheck.interpreter import Interpreter, current
from envcheck.subprocess_runner import Completed

DOC = Path(__file__).resolve().parents[2] / "docs" / "snapshot-data.md"

SECTION_KEYS = {"products", "checked", "reasons"}
PRODUCT_KEYS = {"name", "realtime", "excludes_data", "detected_by", "notes"}

Answer = Union[Completed, BaseException]


class FakeRunner:
    """Answers a command by the first pattern found in its joined argv; records the calls."""

    def __init__(self, answers: Optional[dict[str, Answer]] = None) -> None:
        self.answers = answers or {}
        self.calls: list[list[str]] = []

    def __call__(self, argv: Any, timeout: float) -> Completed:
        self.calls.append(list(argv))
        joined = " ".join(argv)
        for pattern, answer in self.answers.items():
            if pattern in joined:
                if isinstance(answer, BaseException):
                    raise answer
                return answer
        raise FileNotFoundError(2, "No such file or directory", argv[0])


def ok(stdout: str) -> Completed:
    return Completed(0, stdout, "")


def _section(result: dict[str, Any]) -> dict[str, Any]:
    assert set(result) == {"antivirus"}
    section = result["antivirus"]
    assert set(section) == SECTION_KEYS
    for product in section["products"]:
        assert set(product) == PRODUCT_KEYS
        assert isinstance(product["notes"], list)
    json.dumps(section)  # plain JSON all the way down
    return section


def test_keys_are_those_of_the_doc() -> None:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("## `antivirus`", 1)[1].split("```", 2)[1]
    block = re.sub(r'"[^"]*"', '""', block)  # values and comments are not keys
    block = re.sub(r"#.*", "", block)
    top = set(re.findall(r"^  (\w+):", block, flags=re.M))
    inner = set(re.findall(r"[{ ,]\s*(\w+):", block.split("products:", 1)[1].split("]", 1)[0]))
    assert top == SECTION_KEYS
    assert inner == PRODUCT_KEYS


# --- Windows ---------------------------------------------------------------------------------

VENV = "C:\\Users\\me\\proj\\.venv"
PYTHON = VENV + "\\Scripts\\python.exe"
DIR = "D:\\datasets\\imagenet"


def _status(rtp: bool = True, mode: str = "Normal", enabled: bool = True) -> Completed:
    return ok(
        "{\n"
        f'    "RealTimeProtectionEnabled":  {json.dumps(rtp)},\n'
        f'    "AMRunningMode":  "{mode}",\n'
        f'    "AntivirusEnabled":  {json.dumps(enabled)}\n'
        "}\n"
    )


def _preference(paths: Optional[list[str]], processes: Optional[list[str]] = None) -> Completed:
    def value(items: Optional[list[str]]) -> str:
        if items is None:
            return "null"
        inner = ",\n".join(" " * 26 + json.dumps(item) for item in items)
        return "[\n" + inner + "\n" + " " * 22 + "]"

    return ok(
        "{\n"
        f'    "ExclusionPath":  {value(paths)},\n'
        f'    "ExclusionProcess":  {value(processes)}\n'
        "}\n"
    )


NOT_ADMIN = "N/A: Must be an administrator to view exclusions"


def _windows_ctx(machine, data: Optional[str] = DIR) -> CollectContext:
    interpreter = dataclasses.replace(
        current(), executable=PYTHON, prefix=VENV, base_prefix="C:\\Python311"
    )
    ctx = machine.ctx(
        environ={"USERPROFILE": "C:\\Users\\me", "SystemRoot": "C:\\Windows"},
        interpreter=interpreter,
    )
    return dataclasses.replace(ctx, data=Path(data) if data is not None else None)


def _windows(machine, runner: FakeRunner, data: Optional[str] = DIR) -> dict[str, Any]:
    return _section(
        antivirus.collect(_windows_ctx(machine, data), run=runner, system="Windows", timeout=3)
    )


def _defender(section: dict[str, Any]) -> dict[str, Any]:
    assert section["checked"] == ["windows-defender"]
    [product] = section["products"]
    assert product["name"] == "Microsoft Defender Antivirus"
    assert product["detected_by"] == "Get-MpComputerStatus"
    return product


def test_defender_commands_are_the_documented_ones(machine) -> None:
    runner = FakeRunner({"Get-MpComputerStatus": _status(), "Get-MpPreference": _preference([])})
    _windows(machine, runner)
    head = ["powershell", "-NoProfile", "-NonInteractive", "-Command"]
    assert runner.calls == [
        [
            *head,
            "Get-MpComputerStatus | Select-Object RealTimeProtectionEnabled,AMRunningMode,"
            "AntivirusEnabled | ConvertTo-Json",
        ],
        [*head, "Get-MpPreference | Select-Object ExclusionPath,ExclusionProcess | ConvertTo-Json"],
    ]


@pytest.mark.parametrize(
    ("paths", "excluded"),
    [
        (["D:\\datasets"], True),
        (["D:\\datasets\\imagenet"], True),
        (["d:\\DATASETS\\ImageNet\\"], True),  # case and a trailing backslash do not matter
        (["D:/datasets"], True),
        (["D:\\datasets\\*"], True),
        (["C:\\Temp", "D:\\"], True),
        (["D:\\datasets\\imagenet-old"], False),  # a sibling with a longer name
        (["D:\\data"], False),
        (["C:\\Temp"], False),
        ([], False),
        (None, False),
    ],
    ids=[
        "parent",
        "itself",
        "case-insensitive",
        "forward-slashes",
        "wildcard",
        "drive-root",
        "longer-sibling",
        "prefix-not-folder",
        "elsewhere",
        "empty-list",
        "no-exclusions-null",
    ],
)
def test_defender_on_elevated_dir_excluded_or_not(machine, paths, excluded: bool) -> None:
    runner = FakeRunner({"Get-MpComputerStatus": _status(), "Get-MpPreference": _preference(paths)})
    section = _windows(machine, runner)
    product = _defender(section)
    assert product["realtime"] is True
    assert product["excludes_data"] is excluded
    assert section["reasons"] == {}
    if excluded:
        assert any(note.startswith(f"DIR {DIR} is excluded") for note in product["notes"])
    else:
        assert any(f"Add-MpPreference -ExclusionPath '{DIR}'" in n for n in product["notes"])
    storage = {"path": DIR}
    assert failing_rules(storage=storage, antivirus=section) == ([] if excluded else ["EC408"])


def test_defender_python_and_venv_excluded_but_not_dir(machine) -> None:
    runner = FakeRunner(
        {
            "Get-MpComputerStatus": _status(),
            "Get-MpPreference": _preference(["C:\\Users\\me\\proj\\.venv", "E:\\scratch"]),
        }
    )
    product = _defender(_windows(machine, runner))
    assert product["excludes_data"] is False
    notes = "\n".join(product["notes"])
    assert f"the audited Python {PYTHON} is excluded" in notes
    assert f"its environment {VENV} is excluded" in notes
    assert "DIR D:\\datasets\\imagenet is under no ExclusionPath" in notes


def test_defender_exclusion_with_environment_variable(machine) -> None:
    runner = FakeRunner(
        {"Get-MpComputerStatus": _status(), "Get-MpPreference": _preference(["%USERPROFILE%"])}
    )
    product = _defender(_windows(machine, runner))
    assert product["excludes_data"] is False
    assert any("the audited Python" in note for note in product["notes"])


def test_defender_process_exclusion_of_python_is_noted(machine) -> None:
    runner = FakeRunner(
        {
            "Get-MpComputerStatus": _status(),
            "Get-MpPreference": _preference(None, ["python.exe"]),
        }
    )
    product = _defender(_windows(machine, runner))
    assert product["excludes_data"] is False  # excludes_data is about DIR's own path
    assert any("ExclusionProcess python.exe matches" in note for note in product["notes"])


def test_defender_unelevated_exclusions_are_unknown(machine) -> None:
    runner = FakeRunner(
        {
            "Get-MpComputerStatus": _status(),
            "Get-MpPreference": _preference([NOT_ADMIN], [NOT_ADMIN]),
        }
    )
    section = _windows(machine, runner)
    product = _defender(section)
    assert product["realtime"] is True
    assert product["excludes_data"] is None
    assert windows.ADMIN_NOTE in product["notes"]
    assert "elevated" in windows.ADMIN_NOTE and "administrator" in windows.ADMIN_NOTE
    assert section["reasons"] == {}
    # never "not excluded" when it cannot be told: the rule says unknown
    assert rule_statuses(storage={"path": DIR}, antivirus=section)["EC408"] == "unknown"


def test_defender_unelevated_single_string_form(machine) -> None:
    """ConvertTo-Json may give one string instead of a one-element array."""
    text = json.dumps({"ExclusionPath": NOT_ADMIN, "ExclusionProcess": None}, indent=4)
    runner = FakeRunner({"Get-MpComputerStatus": _status(), "Get-MpPreference": ok(text)})
    product = _defender(_windows(machine, runner))
    assert product["excludes_data"] is None
    assert windows.ADMIN_NOTE in product["notes"]


@pytest.mark.parametrize("mode", ["Passive Mode", "SxS Passive Mode", "EDR Block Mode"])
def test_defender_passive_modes_do_not_scan_in_real_time(machine, mode: str) -> None:
    runner = FakeRunner(
        {
            "Get-MpComputerStatus": _status(rtp=True, mode=mode),
            "Get-MpPreference": _preference(None),
        }
    )
    product = _defender(_windows(machine, runner))
    assert product["realtime"] is False
    assert any(mode in note and "not the primary" in note for note in product["notes"])


@pytest.mark.parametrize(
    ("rtp", "enabled"),
    [(False, True), (True, False), (False, False)],
    ids=["rtp-off", "av-off", "both"],
)
def test_defender_off(machine, rtp: bool, enabled: bool) -> None:
    runner = FakeRunner(
        {
            "Get-MpComputerStatus": _status(rtp=rtp, enabled=enabled),
            "Get-MpPreference": _preference(None),
        }
    )
    product = _defender(_windows(machine, runner))
    assert product["realtime"] is False


def test_defender_without_data_still_reports(machine) -> None:
    runner = FakeRunner(
        {"Get-MpComputerStatus": _status(), "Get-MpPreference": _preference([VENV])}
    )
    product = _defender(_windows(machine, runner, data=None))
    assert product["excludes_data"] is None
    assert "no --data given" in product["notes"]
    assert any("its environment" in note for note in product["notes"])


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (FileNotFoundError(2, "No such file or directory", "powershell"), "powershell not found"),
        (PermissionError(13, "Permission denied"), "cannot run Get-MpComputerStatus"),
        (OSError(8, "Exec format error"), "Exec format error"),
        (subprocess.TimeoutExpired(["powershell"], 3), "did not answer within 3 s"),
        (RuntimeError("runner bug"), "RuntimeError: runner bug"),
    ],
    ids=["missing", "permission", "oserror", "hangs", "any-exception"],
)
def test_powershell_cannot_run(machine, error: BaseException, expected: str) -> None:
    section = _windows(machine, FakeRunner({"powershell": error}))
    assert section["products"] == []
    assert section["checked"] == []
    assert expected in section["reasons"]["windows-defender"]


def test_get_mpcomputerstatus_fails(machine) -> None:
    stderr = (
        "Get-MpComputerStatus : The service cannot be started, either because it is disabled"
        " or because it has no enabled devices associated with it.\r\n"
        "At line:1 char:1\r\n"
    )
    runner = FakeRunner({"Get-MpComputerStatus": Completed(1, "", stderr)})
    section = _windows(machine, runner)
    assert section["products"] == []
    reason = section["reasons"]["windows-defender"]
    assert "exited with code 1" in reason and "service cannot be started" in reason


def test_get_mpcomputerstatus_unreadable(machine) -> None:
    section = _windows(machine, FakeRunner({"Get-MpComputerStatus": ok("WARNING: odd\n")}))
    assert section["products"] == []
    assert "no readable JSON" in section["reasons"]["windows-defender"]


def test_get_mppreference_hangs(machine) -> None:
    runner = FakeRunner(
        {
            "Get-MpComputerStatus": _status(),
            "Get-MpPreference": subprocess.TimeoutExpired(["powershell"], 3),
        }
    )
    section = _windows(machine, runner)
    product = _defender(section)
    assert product["realtime"] is True
    assert product["excludes_data"] is None
    assert any("did not answer within 3 s" in note for note in product["notes"])


# --- Linux -----------------------------------------------------------------------------------


def _proc(machine, pid: int, comm: str, *argv: str) -> None:
    machine.proc_file(f"{pid}/comm", comm + "\n")
    machine.proc_file(f"{pid}/cmdline", "".join(arg + "\0" for arg in (argv or (comm,))))


def _base_processes(machine) -> None:
    _proc(machine, 1, "systemd", "/sbin/init", "splash")
    _proc(machine, 734, "sshd", "sshd: /usr/sbin/sshd -D [listener] 0 of 10-100 startups")
    _proc(machine, 4121, "python3", "/home/me/.venv/bin/python3", "train.py")


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    folder = tmp_path / "srv" / "datasets" / "imagenet"
    folder.mkdir(parents=True)
    return folder.resolve()


def _linux(machine, data: Optional[Path], runner: Optional[FakeRunner] = None) -> dict[str, Any]:
    ctx = dataclasses.replace(machine.ctx(), data=data)
    return _section(antivirus.collect(ctx, run=runner or FakeRunner(), system="Linux", timeout=3))


CLAMD_CONF = """\
#Automatically Generated by clamav-daemon postinst
#To reconfigure clamd run #dpkg-reconfigure clamav-daemon
LocalSocket /var/run/clamav/clamd.ctl
FixStaleSocket true
LocalSocketGroup clamav
LocalSocketMode 666
User clamav
ScanMail true
ScanArchive true
MaxThreads 12
LogFile /var/log/clamav/clamav.log
DatabaseDirectory /var/lib/clamav
# On-access scanning (clamonacc)
OnAccessMaxFileSize 100M
OnAccessPrevention yes
OnAccessExcludeUname clamav
{onaccess}
"""


def _clamonacc(machine) -> None:
    _base_processes(machine)
    _proc(machine, 3377, "clamd", "/usr/sbin/clamd", "--foreground=true")
    _proc(machine, 3390, "clamonacc", "/usr/sbin/clamonacc", "-F", "--fdpass", "--stream")


def _clam_product(section: dict[str, Any]) -> dict[str, Any]:
    assert section["checked"] == ["clamav", "linux-agents"]
    [product] = section["products"]
    assert product["name"] == "ClamAV on-access"
    assert product["detected_by"] == "process clamonacc"
    assert product["realtime"] is True
    return product


def test_clamav_on_access_covers_dir(machine, dataset: Path) -> None:
    _clamonacc(machine)
    onaccess = f"OnAccessIncludePath /home\nOnAccessIncludePath {dataset.parent}\n"
    machine.root_file("etc/clamav/clamd.conf", CLAMD_CONF.format(onaccess=onaccess))
    section = _linux(machine, dataset)
    product = _clam_product(section)
    assert product["excludes_data"] is False
    assert any(f"OnAccessExcludePath {dataset}" in note for note in product["notes"])
    assert section["reasons"] == {}


def test_clamav_on_access_excludes_dir(machine, dataset: Path) -> None:
    _clamonacc(machine)
    onaccess = (
        f"OnAccessIncludePath {dataset.parents[1]}\n"
        f"OnAccessExcludePath {dataset.parent}/\n"  # a trailing slash as people write it
    )
    machine.root_file("etc/clamav/clamd.conf", CLAMD_CONF.format(onaccess=onaccess))
    product = _clam_product(_linux(machine, dataset))
    assert product["excludes_data"] is True
    assert any("excluded by OnAccessExcludePath" in note for note in product["notes"])


def test_clamav_dir_outside_include_paths_is_not_scanned(machine, dataset: Path) -> None:
    _clamonacc(machine)
    onaccess = "OnAccessIncludePath /home\nOnAccessIncludePath /var/www\n"
    machine.root_file("etc/clamd.d/scan.conf", CLAMD_CONF.format(onaccess=onaccess))
    product = _clam_product(_linux(machine, dataset))
    assert product["excludes_data"] is True
    assert any("outside every OnAccessIncludePath" in note for note in product["notes"])


def test_clamav_mount_path_covers_dir(machine, dataset: Path) -> None:
    _clamonacc(machine)
    machine.root_file("etc/clamd.conf", CLAMD_CONF.format(onaccess="OnAccessMountPath /"))
    assert _clam_product(_linux(machine, dataset))["excludes_data"] is False


def test_clamonacc_without_config(machine, dataset: Path) -> None:
    _clamonacc(machine)
    section = _linux(machine, dataset)
    product = _clam_product(section)
    assert product["excludes_data"] is None
    assert any("no readable clamd.conf" in note for note in product["notes"])
    assert section["reasons"] == {}


def test_clamonacc_config_file_option_is_followed(machine, dataset: Path) -> None:
    _base_processes(machine)
    _proc(machine, 3390, "clamonacc", "/usr/sbin/clamonacc", "--config-file=/opt/av/onacc.conf")
    machine.root_file("etc/clamav/clamd.conf", CLAMD_CONF.format(onaccess="OnAccessMountPath /"))
    onaccess = f"OnAccessIncludePath /\nOnAccessExcludePath {dataset}\n"
    machine.root_file("opt/av/onacc.conf", CLAMD_CONF.format(onaccess=onaccess))
    assert _clam_product(_linux(machine, dataset))["excludes_data"] is True


def test_clamonacc_exclude_list_file(machine, dataset: Path) -> None:
    _base_processes(machine)
    _proc(machine, 3390, "clamonacc", "/usr/sbin/clamonacc", "-e", "/etc/clamav/skip.txt")
    machine.root_file("etc/clamav/clamd.conf", CLAMD_CONF.format(onaccess="OnAccessMountPath /"))
    machine.root_file("etc/clamav/skip.txt", f"/var/cache\n{dataset.parent}\n")
    assert _clam_product(_linux(machine, dataset))["excludes_data"] is True


def test_clamonacc_without_data(machine) -> None:
    _clamonacc(machine)
    machine.root_file("etc/clamav/clamd.conf", CLAMD_CONF.format(onaccess="OnAccessMountPath /"))
    product = _clam_product(_linux(machine, None))
    assert product["excludes_data"] is None
    assert "no --data given" in product["notes"]


def test_clamd_alone_is_not_on_access(machine, dataset: Path) -> None:
    _base_processes(machine)
    _proc(machine, 3377, "clamd", "/usr/sbin/clamd")
    machine.root_file("etc/clamav/clamd.conf", CLAMD_CONF.format(onaccess="OnAccessMountPath /"))
    assert _linux(machine, dataset)["products"] == []


def test_parse_clamd_conf() -> None:
    conf = linux.parse_clamd_conf(
        "Example\n# OnAccessIncludePath /commented\nOnAccessIncludePath\t/home\n"
        'OnAccessExcludePath "/home/me/data"\nOnAccessMountPath /mnt\nScanOnAccess yes\n'
    )
    assert conf.example is True
    assert conf.include == ["/home"]
    assert conf.exclude == ["/home/me/data"]
    assert conf.mount == ["/mnt"]
    assert conf.scan_on_access is True


def test_crowdstrike_by_process(machine, dataset: Path) -> None:
    _base_processes(machine)
    _proc(machine, 1502, "falcon-sensor", "/opt/CrowdStrike/falcon-sensor")
    section = _linux(machine, dataset)
    [product] = section["products"]
    assert product["name"] == "CrowdStrike Falcon"
    assert product["detected_by"] == "process falcon-sensor"
    assert product["realtime"] is None
    assert product["excludes_data"] is None
    assert any("vendor's console" in note for note in product["notes"])


def test_sentinelone_by_path(machine, dataset: Path) -> None:
    _base_processes(machine)
    machine.root_file("opt/sentinelone/bin/sentinelctl", "#!/bin/sh\n")
    [product] = _linux(machine, dataset)["products"]
    assert product["name"] == "SentinelOne"
    assert product["detected_by"] == "path /opt/sentinelone"
    assert product["realtime"] is None and product["excludes_data"] is None
    assert any("no running process" in note for note in product["notes"])


@pytest.mark.parametrize(
    ("comm", "name"),
    [
        ("s1-agent", "SentinelOne"),
        ("sentinelone-age", "SentinelOne"),  # comm is cut at 15 characters
        ("mfetpd", "Trellix/McAfee Endpoint Security"),
        ("sophos_threat_d", "Sophos Protection for Linux"),
        ("traps_pmd", "Cortex XDR"),
        ("esets_daemon", "ESET"),
    ],
)
def test_agents_by_process_name(machine, dataset: Path, comm: str, name: str) -> None:
    _base_processes(machine)
    _proc(machine, 2001, comm)
    [product] = _linux(machine, dataset)["products"]
    assert product["name"] == name
    assert product["detected_by"] == f"process {comm}"


# As captured by glpi-agent (defender-101.23062.0010.json), real-time protection switched on.
MDATP_HEALTH = {
    "$type": "getHealthAllResult",
    "appVersion": "101.23062.0010",
    "definitionsStatus": {"$type": "upToDate"},
    "healthy": True,
    "licensed": True,
    "passiveModeEnabled": {"displayValue": True, "isManaged": False, "value": False},
    "realTimeProtectionAvailable": True,
    "realTimeProtectionEnabled": {"displayValue": True, "isManaged": False, "value": True},
    "realTimeProtectionSubsystem": "fanotify",
}


def _mdatp_exclusions(*paths: str) -> str:
    rule = "=" * 37
    blocks = [
        f'{rule}\nExclusion type: "excludedPath"\nPath: "{path}"\nIs directory: true\n'
        for path in paths
    ]
    blocks.append(f'{rule}\nExclusion type: "excludedFileName"\nProcess name: "java"\n')
    return "".join(blocks) + rule + "\n"


def _mde(machine) -> None:
    _base_processes(machine)
    _proc(machine, 990, "wdavdaemon", "/opt/microsoft/mdatp/sbin/wdavdaemon")
    machine.root_file("opt/microsoft/mdatp/sbin/wdavdaemon", "")


def test_mdatp_health_and_exclusion_of_dir(machine, dataset: Path) -> None:
    _mde(machine)
    runner = FakeRunner(
        {
            "mdatp health": ok(json.dumps(MDATP_HEALTH)),
            "mdatp exclusion list": ok(_mdatp_exclusions("/var/log/", f"{dataset.parent}/")),
        }
    )
    section = _linux(machine, dataset, runner)
    [product] = section["products"]
    assert product["name"] == "Microsoft Defender for Endpoint"
    assert product["detected_by"] == "process wdavdaemon"
    assert product["realtime"] is True
    assert product["excludes_data"] is True
    assert ["mdatp", "health", "--output", "json"] in runner.calls
    assert ["mdatp", "exclusion", "list"] in runner.calls
    assert section["reasons"] == {}


def test_mdatp_exclusions_without_dir(machine, dataset: Path) -> None:
    _mde(machine)
    health = dict(MDATP_HEALTH, realTimeProtectionEnabled={"value": False})
    health["passiveModeEnabled"] = {"value": True}
    runner = FakeRunner(
        {
            "mdatp health": ok(json.dumps(health)),
            "mdatp exclusion list": ok(_mdatp_exclusions("/var/log/")),
        }
    )
    [product] = _linux(machine, dataset, runner)["products"]
    assert product["realtime"] is False
    assert product["excludes_data"] is False
    assert any("mdatp exclusion folder add --path" in note for note in product["notes"])
    assert any("passive mode" in note for note in product["notes"])


def test_mdatp_hangs(machine, dataset: Path) -> None:
    _mde(machine)
    runner = FakeRunner({"mdatp": subprocess.TimeoutExpired(["mdatp"], 3)})
    section = _linux(machine, dataset, runner)
    [product] = section["products"]
    assert product["realtime"] is None
    assert product["excludes_data"] is None
    assert sum("did not answer within 3 s" in note for note in product["notes"]) == 2


def test_mdatp_missing(machine, dataset: Path) -> None:
    _mde(machine)
    [product] = _linux(machine, dataset, FakeRunner())["products"]
    assert product["realtime"] is None
    assert product["excludes_data"] is None
    assert any("mdatp not found" in note for note in product["notes"])


def test_parse_mdatp_exclusions_skips_processes() -> None:
    text = _mdatp_exclusions("/data/", "/home/me/file.bin")
    assert linux.parse_mdatp_exclusions(text) == ["/data/", "/home/me/file.bin"]
    as_json = json.dumps([{"$type": "excludedPath", "path": "/x", "isDirectory": True}])
    assert linux.parse_mdatp_exclusions(as_json) == ["/x"]


def test_clean_linux_machine(machine, dataset: Path) -> None:
    _base_processes(machine)
    runner = FakeRunner()
    section = _linux(machine, dataset, runner)
    assert section == {"products": [], "checked": ["clamav", "linux-agents"], "reasons": {}}
    assert runner.calls == []  # nothing to ask, nothing run


def test_no_processes_visible(machine, dataset: Path) -> None:
    machine.root_file("opt/CrowdStrike/falconctl", "")
    section = _linux(machine, dataset)
    assert "no process readable" in section["reasons"]["clamav"]
    assert "only install folders were checked" in section["reasons"]["linux-agents"]
    assert section["checked"] == ["linux-agents"]
    assert [p["detected_by"] for p in section["products"]] == ["path /opt/CrowdStrike"]


# --- macOS -----------------------------------------------------------------------------------

SYSEXT_WITH_ES = (
    "3 extension(s)\n"
    "--- com.apple.system_extension.network_extension (Go to 'System Settings > General >"
    " Login Items & Extensions > Network Extensions' to modify these system extension(s))\n"
    "enabled\tactive\tteamID\tbundleID (version)\tname\t[state]\n"
    "*\t*\tPXPZ95SK77\tcom.paloaltonetworks.GlobalProtect.client.extension (6.1.1-5/1)"
    "\tGlobalProtectExtension\t[activated enabled]\n"
    "--- com.apple.system_extension.endpoint_security (Go to 'System Settings > General >"
    " Login Items & Extensions > Endpoint Security Extensions' to modify these system"
    " extension(s))\n"
    "enabled\tactive\tteamID\tbundleID (version)\tname\t[state]\n"
    "*\t*\tX9E956P446\tcom.crowdstrike.falcon.Agent (7.14/171.06)\tFalcon Sensor"
    "\t[activated enabled]\n"
    "\t\tGVZRY6KDKR\tcom.malwarebytes.mbam.engine.sys.ext (5.27.1/5.27.1.4191)"
    "\tMalwarebytes Engine\t[terminated waiting to uninstall on reboot]\n"
)


def _macos(machine, runner: FakeRunner, data: Optional[Path] = None) -> dict[str, Any]:
    ctx = dataclasses.replace(machine.ctx(), data=data)
    return _section(antivirus.collect(ctx, run=runner, system="Darwin", timeout=3))


def test_macos_endpoint_security_extension(machine, dataset: Path) -> None:
    runner = FakeRunner({"systemextensionsctl": ok(SYSEXT_WITH_ES)})
    section = _macos(machine, runner, dataset)
    assert runner.calls == [["systemextensionsctl", "list"]]
    assert section["checked"] == ["macos-system-extensions"]
    [product] = section["products"]  # the network extension and the uninstalled one are not
    assert product["name"] == "CrowdStrike Falcon"
    assert product["detected_by"] == (
        "system extension com.crowdstrike.falcon.Agent (team X9E956P446)"
    )
    assert product["realtime"] is None
    assert product["excludes_data"] is None
    assert section["reasons"] == {}


def test_macos_unknown_vendor_is_named_by_the_extension(machine) -> None:
    text = (
        "1 extension(s)\n--- com.apple.system_extension.endpoint_security\n"
        "enabled\tactive\tteamID\tbundleID (version)\tname\t[state]\n"
        "*\t*\tW5HSYBBJGA\tcom.example.edr.ES (1.0/1)\tExample EDR\t[activated enabled]\n"
    )
    section = _macos(machine, FakeRunner({"systemextensionsctl": ok(text)}))
    [product] = section["products"]
    assert product["name"] == "Example EDR"
    assert "no --data given" in product["notes"]


def test_macos_two_extensions_of_one_vendor_are_one_product(machine) -> None:
    row = "*\t*\t4C6364ACXT\tcom.sentinelone.{0} (23.4.2/7)\t{0}\t[activated enabled]\n"
    text = (
        "2 extension(s)\n--- com.apple.system_extension.endpoint_security\n"
        "enabled\tactive\tteamID\tbundleID (version)\tname\t[state]\n"
        + row.format("sentineld")
        + row.format("network-monitoring")
    )
    [product] = _macos(machine, FakeRunner({"systemextensionsctl": ok(text)}))["products"]
    assert product["name"] == "SentinelOne"
    assert product["detected_by"] == "system extension com.sentinelone.sentineld (team 4C6364ACXT)"
    assert any("also system extension com.sentinelone.network" in n for n in product["notes"])


def test_macos_without_extensions(machine) -> None:
    section = _macos(machine, FakeRunner({"systemextensionsctl": ok("0 extension(s)\n")}))
    assert section == {"products": [], "checked": ["macos-system-extensions"], "reasons": {}}


def test_parse_systemextensionsctl_space_separated() -> None:
    """As pasted into web pages, with the tabs turned into spaces."""
    text = (
        "1 extension(s)\n--- com.apple.system_extension.endpoint_security\n"
        "enabled active teamID bundleID (version) name [state]\n"
        "* * 864VDCS2QY com.infomaniak.drive.desktopclient.LiteSyncExt (3.5.0/1)"
        " kDrive LiteSync Extension [activated enabled]\n"
    )
    [ext] = macos.parse_systemextensionsctl(text)
    assert ext.section == "com.apple.system_extension.endpoint_security"
    assert (ext.team, ext.bundle_id, ext.version) == (
        "864VDCS2QY",
        "com.infomaniak.drive.desktopclient.LiteSyncExt",
        "3.5.0/1",
    )
    assert ext.name == "kDrive LiteSync Extension"
    assert ext.state == "activated enabled"


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (subprocess.TimeoutExpired(["systemextensionsctl"], 3), "did not answer within 3 s"),
        (FileNotFoundError(2, "No such file or directory"), "systemextensionsctl not found"),
    ],
    ids=["hangs", "missing"],
)
def test_macos_command_fails(machine, error: BaseException, expected: str) -> None:
    section = _macos(machine, FakeRunner({"systemextensionsctl": error}))
    assert section["products"] == [] and section["checked"] == []
    assert expected in section["reasons"]["macos-system-extensions"]


def test_macos_command_exits_nonzero(machine) -> None:
    runner = FakeRunner({"systemextensionsctl": Completed(1, "", "systemextensionsctl: bad\n")})
    section = _macos(machine, runner)
    assert "exited with code 1" in section["reasons"]["macos-system-extensions"]


# --- anywhere --------------------------------------------------------------------------------


def test_other_system(machine) -> None:
    section = _section(antivirus.collect(machine.ctx(), run=FakeRunner(), system="FreeBSD"))
    assert section["products"] == [] and section["checked"] == []
    assert "FreeBSD" in section["reasons"]["platform"]


def test_real_machine_does_not_raise(tmp_path: Path) -> None:
    interpreter: Interpreter = current()
    for data in (None, tmp_path):
        ctx = CollectContext(interpreter=interpreter, data=data)
        section = _section(antivirus.collect(ctx, timeout=5))
        assert isinstance(section["checked"], list)
        outcome = run_collector("antivirus", antivirus.collect, ctx)
        assert outcome.status == "ok", outcome.reason
