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
    sample, sample_labels, total, complete = images.list_image_folder(str(tmp_path), limit=10)
    assert total == 30 and complete and len(sample) == 10
    assert all(0 <= x < 3 for x in sample_labels)
    # a bounded walk: stopped after a few entries, sampled from what it saw
    cut, _, seen, whole = images.list_image_folder(str(tmp_path), limit=10, max_entries=5)
    assert not whole and 0 < seen < 30 and len(cut) == min(10, seen)
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


class _OomBackend:
    """Runs out of memory above `fits` samples a batch, as a GPU does; records the calls."""

    def __init__(self, fits: int) -> None:
        self.fits = fits
        self.calls: list[tuple[str, int]] = []
        self.batch = 0

    def build(self, model: str, batch: int, size: int, classes: int) -> None:
        self.batch = batch
        self.calls.append(("build", batch))

    def compute_step(self) -> None:
        if self.batch > self.fits:
            raise MemoryError(f"CUDA out of memory at batch {self.batch}")

    def sync(self) -> None:
        pass

    def release(self) -> None:
        self.calls.append(("release", self.batch))

    def is_oom(self, exc: BaseException) -> bool:
        return "out of memory" in str(exc)


def _probe() -> Probe:
    return Probe({"model": "small-cnn", "image_size": 32}, _Emitter())  # type: ignore[arg-type]


def test_out_of_memory_halves_the_batch_and_says_so() -> None:
    probe, backend = _probe(), _OomBackend(fits=16)
    assert probe.build_model(backend, 64, classes=2) == 16
    assert [c for c in backend.calls if c[0] == "build"] == [
        ("build", 64),
        ("build", 32),
        ("build", 16),
    ]
    assert [c for c in backend.calls if c[0] == "release"] == [("release", 64), ("release", 32)]
    assert probe.result["batch"] == {"requested": 64, "used": 16}
    assert probe.result["notes"] == ["out of memory at batch size 64; measured at 16"]


def test_out_of_memory_at_batch_size_one_is_a_probe_failure() -> None:
    from envcheck.probe.child.errors import ProbeFailure

    with pytest.raises(ProbeFailure) as failure:
        _probe().build_model(_OomBackend(fits=0), 4, classes=2)
    assert failure.value.kind == "oom"
    assert "out of memory even at batch size 1" in failure.value.message


def test_other_errors_are_not_retried() -> None:
    class Broken(_OomBackend):
        def compute_step(self) -> None:
            raise ValueError("shapes do not match")

    backend = Broken(fits=64)
    with pytest.raises(ValueError):
        _probe().build_model(backend, 64, classes=2)
    assert backend.calls == [("build", 64)]
