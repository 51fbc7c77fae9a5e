"""The measuring pieces that are pure functions: the aggregation of the hook's records,
the paired decision, the candidates, the source patch."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from envcheck.measure import aggregate, candidates, patch, stats
from envcheck.schemas import load as load_schema


def step(wait: float, compute: float, other: float = 0.0, **more: Any) -> dict[str, Any]:
    return {
        "data_wait": wait,
        "compute": compute,
        "step_s": wait + compute + other + sum(more.values()),
        "syncs": 1,
        "loader": "torch:1",
        **more,
    }


def process(steps: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {
        "pid": 10,
        "role": "main",
        "framework": "torch",
        "state": "done",
        "warmup": 2,
        "steps_wanted": len(steps),
        "seconds_wanted": 60,
        "train_steps": len(steps) + 2,
        "first_step": 101.0,
        "window": {"t0": 102.0, "t1": 103.0},
        "steps": steps,
        "loaders": {"torch:1": {"framework": "torch", "kind": "DataLoader", "num_workers": 0}},
        "fetch": {"s": 0.3, "n": 10, "window_s": 0.2, "window_n": 4},
        **more,
    }


def summarize(processes: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    return aggregate.summarize(
        processes, kw.pop("workers", []), command=["python", "t.py"], exit_code=0, began=100.0, **kw
    )


def test_split_sums_to_one_and_the_input_share_is_the_wait() -> None:
    run = summarize([process([step(0.03, 0.06, 0.01)] * 4)])
    assert run["split"]["data_wait"] == pytest.approx(0.3)
    assert run["split"]["other"] == pytest.approx(0.1)
    assert sum(run["split"].values()) == pytest.approx(1.0, abs=1e-9)
    assert (run["input_share"], run["verdict"]) == (0.3, "highly-input-bound")
    assert run["step_time_s"]["median"] == pytest.approx(0.1)
    assert run["loader"]["dataset_s_per_batch"] == pytest.approx(0.05)
    assert run["loader"]["dataset_share_of_wait"] == pytest.approx(1.0)
    assert (run["startup_s"], run["time_to_verdict_s"]) == (1.0, 3.0)


def test_rounding_never_breaks_the_sum() -> None:
    steps = [step(1 / 3, 1 / 3, 1 / 3)] * 3
    assert sum(aggregate.split(steps).values()) == pytest.approx(1.0, abs=1e-9)


def test_percentiles_of_known_values() -> None:
    values = [float(v) for v in range(1, 12)]  # 1..11
    assert aggregate.percentiles(values) == {"median": 6.0, "p10": 2.0, "p90": 10.0}
    assert aggregate.percentiles([0.5]) == {"median": 0.5, "p10": 0.5, "p90": 0.5}


def test_the_process_with_the_window_is_the_measured_one() -> None:
    launcher = process([], pid=1, train_steps=0)
    run = summarize([launcher, process([step(0.0, 0.1)] * 5)])
    assert run["steps"] == 5


def test_worker_time_is_attributed_from_their_records() -> None:
    proc = process([step(0.01, 0.1)] * 3, fetch={"s": 0, "n": 0, "window_s": 0, "window_n": 0})
    workers = [
        {"role": "worker", "ppid": 10, "fetch_s": 1.0, "fetch_n": 10},
        {"role": "worker", "ppid": 10, "fetch_s": 3.0, "fetch_n": 10},
        {"role": "worker", "ppid": 99, "fetch_s": 100.0, "fetch_n": 1},
    ]
    loader = summarize([proc], workers=workers)["loader"]
    assert loader["dataset_s_per_batch"] == pytest.approx(0.2)
    assert loader["dataset_measured_in"] == "2 loader worker processes"


def test_no_steps_explains_why() -> None:
    assert summarize([])["status"] == "no-steps"
    assert "hook did not load" in summarize([])["reason"]
    loaded = summarize([process([], train_steps=0)])
    assert "no step ran a backward pass" in loaded["reason"]
    short = summarize([process([], train_steps=2)])
    assert "inside the warm-up" in short["reason"]


def test_a_program_ending_inside_the_window_is_partial() -> None:
    run = summarize([process([step(0.0, 0.1)] * 3, state="final", steps_wanted=50)])
    assert run["status"] == "partial"
    assert "ended after 3 measured steps" in run["reason"]


def test_timeline_keeps_the_window_only() -> None:
    samples = [{"t": t, "gpu_util": 50, "cpu_util": [1.0]} for t in (1.0, 2.5, 3.5)]
    run = summarize([process([step(0.0, 0.1)] * 2)], samples=samples)
    assert [p["t"] for p in run["timeline"]] == [0.5]
    assert run["gpu_util_mean"] == 50


def test_the_run_section_validates_against_the_report_schema() -> None:
    schema = load_schema("report")
    run = summarize([process([step(0.02, 0.08)] * 4)])
    resolver = {"$ref": "#/$defs/run", "$defs": schema["$defs"]}
    jsonschema.validate(json.loads(json.dumps(run)), resolver)
    empty = summarize([])
    jsonschema.validate(json.loads(json.dumps(empty)), resolver)


# stats -----------------------------------------------------------------------------------


def test_paired_ratio_and_interval() -> None:
    ratio, interval, won = stats.paired_ratio([0.2, 0.2, 0.2], [0.1, 0.1, 0.1])
    assert (ratio, interval, won) == (2.0, [2.0, 2.0], 3)
    ratio, interval, won = stats.paired_ratio([0.2, 0.21, 0.19], [0.1, 0.11, 0.09])
    assert interval[0] is not None and interval[0] > 1.0 and won == 3
    # t interval on the log ratios, by hand
    logs = [math.log(a / b) for a, b in [(0.2, 0.1), (0.21, 0.11), (0.19, 0.09)]]
    mean = sum(logs) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 2)
    assert interval[0] == pytest.approx(math.exp(mean - 4.303 * sd / math.sqrt(3)), abs=1e-4)


def test_decisions() -> None:
    assert stats.decide([1.2, 1.5], "identical") == "keep"
    assert stats.decide([1.2, 1.5], "changed") == "discard"
    assert stats.decide([0.7, 0.9], "identical") == "discard"
    assert stats.decide([0.9, 1.1], "within") == "inconclusive"
    assert stats.decide([None, None], "unknown") == "inconclusive"
    _, interval, _ = stats.paired_ratio([0.1], [0.05])
    assert interval == [None, None]  # one pair proves nothing


def test_loss_comparison() -> None:
    same = [[2.0, 1.5, 1.2]] * 2
    assert stats.compare_losses(same, same) == "identical"
    assert stats.compare_losses(same, [[2.0, 1.5, 1.2000000001]]) == "within"
    assert stats.compare_losses(same, [[2.0, 1.4, 1.1]]) == "changed"
    noisy = [[2.0, 1.5, 1.2], [2.1, 1.6, 1.1]]
    assert stats.compare_losses(noisy, [[2.05, 1.55, 1.15]]) == "within"
    assert stats.compare_losses(noisy, [[5.0, 4.0, 3.0]]) == "changed"
    assert stats.compare_losses([[]], [[1.0]]) == "unknown"


# candidates ------------------------------------------------------------------------------


def test_worker_sweep_within_the_cores() -> None:
    assert candidates.worker_values(0, 2) == [2]
    assert candidates.worker_values(0, 16) == [2, 4, 16]
    assert candidates.worker_values(4, 16) == [8, 16]
    assert candidates.worker_values(8, 8) == []


def test_torch_candidates_follow_the_live_settings() -> None:
    run = {"framework": "torch", "device": None}
    serial = {"framework": "torch", "num_workers": 0, "site": "t.py:3"}
    names = [c.change for c in candidates.propose({**run, "loader": serial}, 4)]
    assert names == ["num_workers=2", "num_workers=4"]
    workers = {**serial, "num_workers": 2, "persistent_workers": False, "prefetch_factor": 2}
    gpu = {"framework": "torch", "device": "cuda", "loader": workers}
    names = [c.change for c in candidates.propose(gpu, 4)]
    assert names == [
        "num_workers=4",
        "persistent_workers=True",
        "prefetch_factor=4",
        "pin_memory=True",
        "torch.backends.cudnn.benchmark=True",
    ]
    only = candidates.propose({**run, "loader": serial}, 4, ["num_workers=3"])
    assert [(c.change, c.overrides) for c in only] == [
        ("num_workers=3", {"loader": {"num_workers": 3}, "site": "t.py:3"})
    ]


def test_tf_candidates() -> None:
    loader = {"framework": "tensorflow", "chain": ["TensorSlice", "Map", "Batch"]}
    names = [c.change for c in candidates.propose({"loader": loader}, 2)]
    assert names == ["map(num_parallel_calls=tf.data.AUTOTUNE)", "prefetch(tf.data.AUTOTUNE)"]
    keras = {"framework": "keras", "kind": "PyDatasetAdapter", "workers": 1}
    assert [c.change for c in candidates.propose({"loader": keras}, 4)] == ["workers=4"]


# patch -----------------------------------------------------------------------------------

SCRIPT = """import torch
# a comment that stays
loader = torch.utils.data.DataLoader(
    data,
    batch_size=32,
    num_workers=0,
)
other = DataLoader(data, batch_size=8)  # é
"""


def test_patch_replaces_and_adds_keywords(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT, encoding="utf-8")
    diff, why = patch.loader_patch(f"{script}:3", {"num_workers": 4, "persistent_workers": True})
    assert why == "" and diff is not None
    assert "-    num_workers=0,\n+    num_workers=4, persistent_workers=True,\n" in diff
    diff, _ = patch.loader_patch(f"{script}:8", {"num_workers": 2})
    assert diff is not None
    assert "+other = DataLoader(data, batch_size=8, num_workers=2)  # é\n" in diff
    assert script.read_text(encoding="utf-8") == SCRIPT  # only --apply writes
    patch.apply_patch(f"{script}:8", {"num_workers": 2})
    compile(script.read_text(encoding="utf-8"), "train.py", "exec")


def test_no_patch_without_a_loader_there(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("x = 1\n", encoding="utf-8")
    assert patch.loader_patch(f"{script}:1", {"num_workers": 2})[0] is None
    assert patch.loader_patch(None, {"num_workers": 2})[1] == (
        "the DataLoader's source line is not known"
    )
