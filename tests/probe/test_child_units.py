"""The child's framework-free parts: the budget, the timed loops, the image helpers."""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path
from typing import Any

import pytest

from envcheck.probe.child import harness, images
from envcheck.probe.child.budget import Budget
from envcheck.probe.child.main import Probe


class _Emitter:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def emit(self, event: str, **fields: Any) -> None:
        self.events.append({"event": event, **fields})


def test_budget_gives_each_phase_its_share_of_what_is_left() -> None:
    budget = Budget(10.0, {"a": 0.5, "b": 0.25, "c": 0.25})
    assert budget.slice("a") == pytest.approx(5.0, abs=0.05)
    budget.total = 10.0 - 6.0  # "a" overran by a second: 4 s left of the plan
    assert budget.slice("b") == pytest.approx(2.0, abs=0.05)
    budget.extend(2.0)  # set-up time given back
    assert budget.slice("c") == pytest.approx(6.0, abs=0.05)


def test_end_to_end_loop_splits_each_step_into_wait_copy_and_compute() -> None:
    batches = itertools.repeat([0] * 4)

    def slow_input() -> Any:
        time.sleep(0.03)
        return next(batches)

    loop = harness.end_to_end_loop(
        iter(slow_input, None), len, lambda b: b, lambda b: time.sleep(0.01), lambda: None, 0.3
    )
    assert loop["steps"] >= 2 and loop["samples"] == 4 * loop["steps"]
    assert loop["wait_s"] > loop["compute_s"] > loop["copy_s"]
    assert 0.5 < loop["input_share"] < 0.95  # 30 ms of every 40 ms waits


def test_at_least_two_steps_are_measured_whatever_the_time() -> None:
    loop = harness.compute_loop(lambda: time.sleep(0.01), lambda: None, 8, seconds=0.0)
    assert loop["steps"] == 2 and loop["rate"] > 0


def test_cold_input_stops_after_one_pass_over_the_files() -> None:
    loop = harness.input_loop(itertools.repeat([0] * 8), len, 10.0, max_samples=32)
    assert loop["samples"] == 32


def test_generated_images_are_real_jpegs_and_validate(tmp_path: Path) -> None:
    pil = pytest.importorskip("PIL.Image")
    np = pytest.importorskip("numpy")
    import io

    def encode(array: Any) -> bytes:
        out = io.BytesIO()
        pil.fromarray(array).save(out, format="JPEG", quality=90)
        return out.getvalue()

    files, labels = images.generate_dataset(str(tmp_path), 30, encode, classes=3)
    assert len(files) == 30 and set(labels) == {0, 1, 2}
    assert Path(files[0]).read_bytes()[:2] == b"\xff\xd8"
    Path(files[3]).write_bytes(b"not an image")
    check = images.validate(files, labels, lambda data: pil.open(io.BytesIO(data)).load(), 10.0)
    assert check["corrupt"] == 1 and files[3] in check["corrupt_examples"]
    assert len(check["files"]) == 29 and check["decode_s"] > 0
    sample, sample_labels, total = images.list_image_folder(str(tmp_path), limit=10)
    assert total == 30 and len(sample) == 10 and all(0 <= x < 3 for x in sample_labels)
    assert np is not None


def test_dropping_cached_pages_never_writes(tmp_path: Path) -> None:
    path = tmp_path / "a.jpg"
    path.write_bytes(b"x" * 4096)
    before = path.stat().st_mtime_ns
    path.chmod(0o444)
    assert images.drop_cached_pages([str(path)]) is hasattr(os, "posix_fadvise")
    assert path.stat().st_mtime_ns == before


def test_end_to_end_reads_cold_only_when_the_data_cannot_stay_cached(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    probe = Probe({"cold_end_to_end": None}, _Emitter())  # type: ignore[arg-type]
    monkeypatch.setattr(images, "available_memory_bytes", lambda: 8 * 2**30)
    probe.result["dataset"] = {"source": "user", "mean_bytes": 110_000, "files_total": 1_281_167}
    assert probe.end_to_end_cold(None) is True  # ImageNet (~140 GB) in 8 GiB
    assert "larger than the memory" in probe.result["notes"][-1]
    probe.result["dataset"]["files_total"] = 10_000
    assert probe.end_to_end_cold(None) is False
    probe.result["dataset"] = {"source": "generated", "mean_bytes": 1e9, "files_total": 1e9}
    assert probe.end_to_end_cold(None) is False
    assert probe.end_to_end_cold(True) is True
