"""collect_snapshot: every collector runs, each guarded; the snapshot round-trips as JSON."""

from __future__ import annotations

import dataclasses
import json

import pytest

from envcheck.collect import COLLECTORS, collect_snapshot
from envcheck.collectors.base import CollectContext
from envcheck.interpreter import current
from envcheck.snapshot import (
    DATA_SECTIONS,
    KNOWN_SECTIONS,
    OPTIONAL_SECTIONS,
    SCHEMA_VERSION,
    SCRIPT_SECTIONS,
    Snapshot,
)

ALL_SECTIONS = [section for _, sections, _ in COLLECTORS for section in sections]


def _assert_round_trips(snapshot: Snapshot) -> None:
    text = snapshot.to_json()
    again = Snapshot.from_json(text)
    assert again.data == snapshot.data
    assert again.to_json() == text
    assert json.loads(text) == snapshot.data  # plain JSON types only: no tuples, no paths


def _assert_statuses(snapshot: Snapshot) -> None:
    assert set(snapshot.data["collectors"]) == set(ALL_SECTIONS)
    for section in ALL_SECTIONS:
        status = snapshot.data["collectors"][section]
        assert status["status"] in ("ok", "unavailable"), section
        if status["status"] == "ok":
            assert status["reason"] is None, section
            if section in (*DATA_SECTIONS, *SCRIPT_SECTIONS) and snapshot.data[section] is None:
                continue  # no --data / --script given
            assert isinstance(snapshot.data[section], dict), section
        else:
            assert isinstance(status["reason"], str), section
            assert status["reason"], section
            assert snapshot.data[section] is None, section
        assert status["seconds"] >= 0


def test_real_machine_snapshot_round_trips() -> None:
    snapshot = collect_snapshot(CollectContext(interpreter=current()))
    assert snapshot.data["schema_version"] == SCHEMA_VERSION
    assert snapshot.data["tool"]["name"] == "envcheck"
    _assert_statuses(snapshot)
    _assert_round_trips(snapshot)


def test_sections_cover_the_known_sections() -> None:
    always = [s for s in KNOWN_SECTIONS if s not in OPTIONAL_SECTIONS]
    assert sorted(ALL_SECTIONS) == sorted(always)


def test_fake_machine_snapshot_round_trips(machine) -> None:
    machine.proc_file("sys/kernel/osrelease", "5.15.90.1-microsoft-standard-WSL2")
    machine.sys_file("fs/cgroup/cpu.max", "150000 100000")
    machine.home_file(".theanorc", "[global]\ndevice = cuda\n")
    (machine.root / "dev" / "shm").mkdir(parents=True)
    snapshot = collect_snapshot(machine.ctx({"OMP_NUM_THREADS": "1", "SECRET_TOKEN": "x"}))
    _assert_statuses(snapshot)
    _assert_round_trips(snapshot)
    data = snapshot.data
    assert data["platform"]["wsl_version"] == 2
    assert data["cpu"]["cgroup_quota_cpus"] == 1.5
    assert data["environment"] == {"OMP_NUM_THREADS": "1"}
    assert data["theano"]["flags"] == {"device": "cuda"}
    assert "SECRET_TOKEN" not in snapshot.to_json()


def test_a_failing_collector_leaves_its_sections_null_with_a_reason(machine, monkeypatch) -> None:
    def broken(ctx):
        raise RuntimeError("boom")

    patched = [
        (name, sections, broken if name == "packages" else fn) for name, sections, fn in COLLECTORS
    ]
    monkeypatch.setattr("envcheck.collect.COLLECTORS", patched)
    snapshot = collect_snapshot(machine.ctx())
    for section in ("packages", "modules"):
        assert snapshot.data[section] is None
        assert snapshot.data["collectors"][section]["reason"] == "RuntimeError: boom"
    assert snapshot.data["collectors"]["cpu"]["status"] == "ok"
    _assert_round_trips(snapshot)


@pytest.mark.parametrize("section", ["packages", "modules"])
def test_empty_sys_path_snapshot(machine, section: str) -> None:
    interpreter = dataclasses.replace(current(), sys_path=())
    snapshot = collect_snapshot(machine.ctx(interpreter=interpreter))
    assert snapshot.data["collectors"][section]["status"] == "unavailable"
    _assert_statuses(snapshot)
    _assert_round_trips(snapshot)
