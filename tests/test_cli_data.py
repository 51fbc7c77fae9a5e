"""`--data DIR` end to end through the CLI, on real folders of this machine."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from envcheck.cli import app


def run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def listing(root: Path) -> dict[str, tuple[int, float]]:
    """Every entry under root with its size and modification time."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            stat = path.lstat()
            out[str(path.relative_to(root))] = (stat.st_size, stat.st_mtime)
    return out


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    root = tmp_path / "train"
    for label in ("cat", "dog", "bird"):
        (root / label).mkdir(parents=True)
        for i in range(20):
            # a minimal JPEG header and some bytes: enough for sizes and magic bytes
            (root / label / f"{i:03d}.jpg").write_bytes(b"\xff\xd8\xff\xe0" + os.urandom(2000))
    return root


def test_doctor_with_data_reports_storage_shape_and_rate(dataset: Path) -> None:
    before = listing(dataset)
    result = run(
        "doctor", "--data", str(dataset), "--format", "json", "--exit-zero", "--data-budget", "2"
    )
    assert result.exit_code == 0, result.output
    facts = json.loads(result.stdout)["facts"]
    assert facts["storage"]["path"] == str(dataset)
    assert facts["storage"]["kind"] not in (None, "")
    assert facts["dataset"]["files"] == 60
    assert facts["dataset"]["layout"] == "class-folders"
    assert facts["dataset"]["formats"] == {".jpg": 60}
    cold = facts["read_throughput"]["cold"]
    assert cold["files"] > 0 and cold["files_per_s"] > 0
    assert isinstance(facts["antivirus"]["products"], list)
    assert listing(dataset) == before  # nothing written into the data folder


def test_target_rate_feeds_ec407(dataset: Path) -> None:
    # an unreachable target: the cold rate measured here is certainly below it
    result = run(
        "doctor",
        "--data",
        str(dataset),
        "-f",
        "json",
        "--exit-zero",
        "--target-rate",
        "1e9",
        "--select",
        "EC407",
    )
    report = json.loads(result.stdout)
    [check] = [c for c in report["checks"] if c["id"] == "EC407"]
    assert check["status"] == "fail"
    assert (
        "below the 1,000,000,000 samples/s given with --target-rate"
        in report["findings"][0]["message"]
    )


def test_without_data_the_data_rules_are_skipped() -> None:
    report = json.loads(run("doctor", "-f", "json", "--exit-zero").stdout)
    statuses = {c["status"] for c in report["checks"] if c["id"].startswith("EC4")}
    assert statuses == {"skipped"}


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda tmp: tmp / "missing", "no such directory"),
        (lambda tmp: (tmp / "file.txt").write_text("x") and tmp / "file.txt", "not a directory"),
    ],
)
def test_bad_data_is_one_line_and_exit_2_before_any_report(
    tmp_path: Path, make: Any, needle: str
) -> None:
    target = make(tmp_path)
    result = run("doctor", "--data", str(target), "-f", "json")
    assert result.exit_code == 2
    assert needle in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == ""  # no report that reads as clean (no data audited)
    written = tmp_path / "report.json"
    result = run("doctor", "--data", str(target), "--no-probe", "-o", str(written))
    assert result.exit_code == 2 and not written.exists()
    collect = run("collect", "--data", str(target))
    assert collect.exit_code == 2 and needle in collect.stderr


def test_unreadable_data_folder(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root can list any folder: permission errors cannot be produced")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        result = run("doctor", "--data", str(locked), "-f", "json")
    finally:
        locked.chmod(0o755)
    assert result.exit_code == 2 and "permission denied" in result.stderr


def test_empty_data_folder_is_valid(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run("doctor", "--data", str(empty), "-f", "json", "--exit-zero")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["facts"]["dataset"]["layout"] == "empty"


def test_a_hanging_data_folder_is_bounded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import threading

    from envcheck import datadir

    release = threading.Event()

    def hang(_path: Path) -> None:
        release.wait(30)

    monkeypatch.setattr(datadir, "_inspect", hang)
    try:
        problem = datadir.problem_with(tmp_path, timeout=0.2)
    finally:
        release.set()
    assert problem is not None and "hung network mount" in problem


def _tmpfs_mount() -> Path | None:
    try:
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            fields = line.split(" - ")
            if len(fields) == 2 and fields[1].split()[0] == "tmpfs":
                point = Path(fields[0].split()[4])
                if point == Path("/dev/shm") and os.access(point, os.W_OK):
                    return point
    except OSError:
        return None
    return None


def test_real_tmpfs_is_classified_tmpfs() -> None:
    import shutil
    import tempfile

    mount = _tmpfs_mount()
    if mount is None:
        pytest.skip("no writable tmpfs at /dev/shm on this machine")
    folder = Path(tempfile.mkdtemp(prefix="envcheck-test-", dir=mount))
    try:
        (folder / "a.jpg").write_bytes(b"\xff\xd8\xff\xe0" + b"0" * 100)
        result = run("collect", "--data", str(folder))
        assert result.exit_code == 0, result.stderr
        storage = json.loads(result.stdout)["storage"]
        assert (storage["kind"], storage["fs_type"], storage["mount_point"]) == (
            "tmpfs",
            "tmpfs",
            str(mount),
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_real_root_file_system_is_classified() -> None:
    result = run("collect", "--data", "/")
    assert result.exit_code == 0, result.stderr
    storage = json.loads(result.stdout)["storage"]
    assert storage["mount_point"] == "/"
    assert storage["kind"] in (
        "hdd",
        "ssd",
        "nvme",
        "overlay",
        "usb",
        "network",
        "fuse",
        "tmpfs",
        "unknown",
    )
    assert storage["fs_type"]
