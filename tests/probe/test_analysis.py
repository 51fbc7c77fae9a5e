"""The probe's judgements from numbers: bands, stall split, worker recommendation."""

from __future__ import annotations

import pytest

from envcheck.probe.analysis import (
    input_share,
    recommend_workers,
    stall_split,
    summarize,
    verdict,
)
from envcheck.probe.runner import ProbeRun
from envcheck.probe.settings import ProbeSettings, worker_candidates


@pytest.mark.parametrize(
    ("share", "expected"),
    [
        (0.0, "not-input-bound"),
        (0.0499, "not-input-bound"),
        (0.05, "moderately-input-bound"),
        (0.1999, "moderately-input-bound"),
        (0.20, "highly-input-bound"),
        (0.95, "highly-input-bound"),
        (None, None),
    ],
)
def test_verdict_uses_the_profiler_bands(share: float | None, expected: str | None) -> None:
    assert verdict(share) == expected


def test_stall_split_is_the_differential_of_cold_and_cached_runs() -> None:
    # cached: 400 samples/s (2.5 ms each); cold: 100 samples/s (10 ms each): 7.5 ms fetch
    assert stall_split(400.0, 100.0) == {"fetch_share": 0.75, "prep_share": 0.25}
    # cold no slower than cached (noise): no fetch stall, never negative
    assert stall_split(100.0, 105.0) == {"fetch_share": 0.0, "prep_share": 1.0}
    assert stall_split(None, 100.0) == {"fetch_share": None, "prep_share": None}


def test_recommends_the_smallest_count_within_five_percent_of_the_best() -> None:
    points = [
        {"workers": 0, "rate": 300.0},
        {"workers": 2, "rate": 1500.0},
        {"workers": 4, "rate": 2100.0},
        {"workers": 8, "rate": 2150.0},
        {"workers": 16, "rate": 2140.0},
    ]
    assert recommend_workers(points, 0) == (4, 2100.0)
    assert recommend_workers([{"workers": 0, "rate": None}], 0) == (0, None)


def test_worker_candidates_double_up_to_the_usable_cores() -> None:
    assert worker_candidates(1) == [0, 1]
    assert worker_candidates(2) == [0, 1, 2]
    assert worker_candidates(6) == [0, 1, 2, 4, 6]
    assert worker_candidates(16) == [0, 1, 2, 4, 8, 16]


def _run(**phases: object) -> ProbeRun:
    run = ProbeRun(ProbeSettings(framework="torch", image_size=96, budget_s=10))
    run.result.update(
        {
            "backend": {"framework": "torch", "version": "2.5.1", "device": "cuda"},
            "loader": {"workers": 0, "pin_memory": False, "prefetch": 2},
            "batch": {"requested": 64, "used": 32},
            "dataset": {"source": "generated", "corrupt": 0, "checked": 256},
        }
    )
    run.result["phases"].update(phases)
    return run


def test_summary_follows_the_contract() -> None:
    run = _run(
        compute={"rate": 2400.0},
        input_warm={"rate": 320.0},
        input_cold={"rate": 300.0, "pages_dropped": True},
        end_to_end={"rate": 300.0, "input_share": 0.78, "copy_share": 0.02, "cache": "warm"},
        sweep={"points": [{"workers": 0, "rate": 300.0}, {"workers": 8, "rate": 2150.0}]},
    )
    probe = summarize(run, usable_cores=16)
    assert probe["status"] == "ok"
    assert probe["rates"] == {"compute": 2400.0, "input": 320.0, "end_to_end": 300.0}
    assert probe["verdict"] == "highly-input-bound"
    assert probe["workers"]["recommended"] == 8
    assert probe["batch_size"] == 32 and probe["batch_size_requested"] == 64
    assert probe["stall"]["fetch_share"] == pytest.approx(0.0625)


def test_cold_end_to_end_compares_with_the_cold_input_rate() -> None:
    run = _run(
        compute={"rate": 1000.0},
        input_warm={"rate": 900.0},
        input_cold={"rate": 200.0, "pages_dropped": True},
        end_to_end={"rate": 190.0, "input_share": 0.8, "cache": "cold"},
    )
    assert summarize(run)["rates"]["input"] == 200.0


def test_a_run_without_end_to_end_is_failed_or_partial() -> None:
    run = _run(compute={"rate": 1000.0})
    run.status, run.failure = "timeout", {"kind": "timeout", "message": "hard timeout"}
    probe = summarize(run)
    assert probe["status"] == "failed"
    assert probe["verdict"] is None
    assert probe["rates"]["compute"] == 1000.0  # what was measured is kept
    run = _run(end_to_end={"rate": 100.0, "input_share": 0.5})
    run.status = "timeout"
    assert summarize(run)["status"] == "partial"


def test_not_input_bound_without_a_sweep_keeps_the_current_workers() -> None:
    run = _run(compute={"rate": 100.0}, end_to_end={"rate": 99.0, "input_share": 0.01})
    assert summarize(run)["workers"]["recommended"] == 0


def test_on_the_cpu_input_that_steals_cores_counts_as_input_time() -> None:
    # tf.data's injected prefetch runs the pipeline in background threads: the step barely
    # waits, but it runs at 156/s against a ceiling of 364/s on the same two cores
    assert input_share("cpu", 0.03, 156.0, 364.0) == (pytest.approx(0.5714, abs=1e-4), "slowdown")
    assert input_share("cpu", 0.8, 100.0, 364.0) == (0.8, "wait")
    # on a GPU the model does not compete for the cores: the wait is the share
    assert input_share("cuda", 0.03, 156.0, 364.0) == (0.03, "wait")


def test_a_ceiling_below_the_end_to_end_rate_is_called_out() -> None:
    run = _run(compute={"rate": 16.8, "steps": 2}, end_to_end={"rate": 29.7, "input_share": 0.01})
    assert "too few steps" in summarize(run)["notes"][-1]
