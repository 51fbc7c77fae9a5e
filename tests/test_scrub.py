"""tests/fixtures/scrub.py: what a recorded machine's fixture must not keep."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import FIXTURES

sys.path.insert(0, str(FIXTURES))
import scrub


def test_uuids_and_serials_are_removed_and_the_rest_kept() -> None:
    recorded = {
        "environment": {"CUDA_VISIBLE_DEVICES": "GPU-5f3a2c1e-9b7d-4e2f-8a6c-0d1e2f3a4b5c,1"},
        "gpu": {
            "devices": [
                {"name": "NVIDIA H100 80GB HBM3", "serial": "1654922012345", "index": 0},
                {"mig": "MIG-1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809", "board_serial": None},
            ],
            "driver_version": "580.159.04",
        },
        "note": "uuid 123e4567-e89b-12d3-a456-426614174000 in text",
    }
    assert scrub.scrub(recorded) == {
        "environment": {"CUDA_VISIBLE_DEVICES": "GPU-00000000-0000-0000-0000-000000000000,1"},
        "gpu": {
            "devices": [
                {"name": "NVIDIA H100 80GB HBM3", "serial": "SCRUBBED", "index": 0},
                {"mig": "MIG-00000000-0000-0000-0000-000000000000", "board_serial": None},
            ],
            "driver_version": "580.159.04",
        },
        "note": "uuid 00000000-0000-0000-0000-000000000000 in text",
    }


def test_main_rewrites_in_place_and_refuses_bad_input(tmp_path: Path, capsys) -> None:
    path = tmp_path / "snap.json"
    path.write_text(json.dumps({"u": "GPU-5f3a2c1e-9b7d-4e2f-8a6c-0d1e2f3a4b5c"}))
    assert scrub.main([str(path)]) == 0
    assert json.loads(path.read_text()) == {"u": "GPU-00000000-0000-0000-0000-000000000000"}
    (tmp_path / "bad.json").write_text("{broken")
    assert scrub.main([str(tmp_path / "bad.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert scrub.main([]) == 2


def test_committed_fixtures_hold_no_uuids() -> None:
    for path in FIXTURES.rglob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        assert scrub.scrub(data) == data, f"{path} holds a UUID or serial: run scrub.py on it"
