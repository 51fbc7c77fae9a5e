"""The node view: processes per node, per-process worker counts that fit the cores, and
demand against supply (pure functions; the probe for real is in test_probe_node.py)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from conftest import FIXTURES

from envcheck.errors import UsageError
from envcheck.probe.analysis import WITHIN_BEST, summarize
from envcheck.probe.node import (
    NodeShape,
    lightning_workers,
    node_shape,
    per_process_candidates,
)
from envcheck.probe.node_view import node_section, per_process_workers, verdict_sentence
from envcheck.probe.plan import plan
from envcheck.probe.runner import ProbeRun
from envcheck.probe.settings import ProbeSettings
from envcheck.schemas import load as load_schema

EIGHT_A100 = json.loads((FIXTURES / "gpu" / "datacenter-8x-a100-foreign-process.json").read_text())
NO_GPU: dict[str, Any] = {"gpu": {"status": "unavailable", "devices": []}}


@pytest.mark.parametrize(
    ("environ", "requested", "processes", "source"),
    [
        ({"LOCAL_WORLD_SIZE": "4"}, 2, 2, "--procs-per-node"),
        ({"LOCAL_WORLD_SIZE": "4", "SLURM_NTASKS_PER_NODE": "2"}, None, 4, "LOCAL_WORLD_SIZE=4"),
        ({"SLURM_NTASKS_PER_NODE": "4(x2)"}, None, 4, "SLURM_NTASKS_PER_NODE=4(x2)"),
        ({"LOCAL_WORLD_SIZE": "zero"}, None, 8, "8 GPU(s) seen by NVML"),
        ({}, None, 8, "8 GPU(s) seen by NVML"),
        ({"CUDA_VISIBLE_DEVICES": "0,1,2"}, None, 3, "CUDA_VISIBLE_DEVICES=0,1,2 (3 of 8 GPUs)"),
        # CUDA stops at the first index the node does not have
        ({"CUDA_VISIBLE_DEVICES": "6,7,9,1"}, None, 2, "CUDA_VISIBLE_DEVICES=6,7,9,1 (2 of 8"),
    ],
)
def test_processes_per_node_come_from_the_flag_the_launcher_or_the_gpus(
    environ: dict[str, str], requested: int | None, processes: int, source: str
) -> None:
    shape = node_shape(EIGHT_A100, environ, 64, requested)
    assert shape.processes == processes
    assert shape.source.startswith(source)


def test_without_gpus_or_launcher_variables_one_process() -> None:
    shape = node_shape(NO_GPU, {"CUDA_VISIBLE_DEVICES": "0,1"}, 2)
    assert (shape.processes, shape.cores_per_process, shape.worker_cap) == (1, 2, 2)
    # every GPU hidden: the node trains without them, one process
    assert node_shape(EIGHT_A100, {"CUDA_VISIBLE_DEVICES": ""}, 64).processes == 1


def test_lightning_rule_is_cpus_over_processes_minus_one_at_least_one() -> None:
    assert lightning_workers(64, 8) == 7
    assert lightning_workers(16, 8) == 1
    assert lightning_workers(2, 8) == 1
    assert lightning_workers(12, 1) == 11


@pytest.mark.parametrize("cores", [1, 2, 3, 8, 16, 64, 96])
@pytest.mark.parametrize("processes", [1, 2, 3, 4, 8, 16, 200])
def test_per_process_candidates_sum_within_the_cores(cores: int, processes: int) -> None:
    shape = NodeShape(processes, "test", cores)
    candidates = per_process_candidates(shape)
    assert candidates[0] == 0 and candidates == sorted(set(candidates))
    assert max(candidates) * processes <= cores
    assert max(candidates) == cores // processes  # the whole share is measured
    lightning = lightning_workers(cores, processes)
    if processes > 1 and lightning * processes <= cores:
        assert lightning in candidates  # the floor to beat is measured too


def test_plan_sweeps_one_process_share_on_an_eight_gpu_node() -> None:
    facts = {**EIGHT_A100, "frameworks": {"torch": {"version": "2.5.1"}, "tensorflow": None}}
    settings = plan(facts, ProbeSettings(), None, {}, 64, environ={})
    assert settings.processes == 8 and settings.node_cores == 64
    assert settings.worker_candidates == [0, 1, 2, 4, 7, 8]  # 7: Lightning's count
    assert settings.settings_from["processes"] == "8 GPU(s) seen by NVML"
    flagged = plan(facts, ProbeSettings(), None, {"procs_per_node": 2}, 64, environ={})
    assert flagged.processes == 2 and max(flagged.worker_candidates) == 32
    with pytest.raises(UsageError, match="--procs-per-node must be between 1 and"):
        plan(facts, ProbeSettings(), None, {"procs_per_node": 0}, 64, environ={})


def test_the_verdict_says_it_plainly() -> None:
    assert verdict_sentence("cuda", 8, 64, 23000.0, 2300.0) == (
        "input-bound",
        "8 GPUs consume 23,000 img/s; these 64 cores decode 2,300 img/s: input-bound 10x",
    )
    assert verdict_sentence("cuda", 1, 16, 900.0, 2700.0) == (
        "keeps-up",
        "1 GPU consumes 900 img/s; these 16 cores decode 2,700 img/s: keeps up (3.0x headroom)",
    )
    verdict, text = verdict_sentence("cpu", 2, 2, 500.0, 480.0)
    assert verdict == "balanced" and text.startswith("2 training processes (CPU) consume")


@pytest.mark.parametrize("processes", [1, 2, 4, 8])
def test_per_process_recommendation_fits_the_node(processes: int) -> None:
    # a sweep where more workers keep helping: the count is held to the process's share
    sweep = [{"workers": w, "rate": 100.0 * (1 + w)} for w in (0, 1, 2, 4, 8, 16)]
    cores = 16
    workers, rate = per_process_workers(sweep, cores // processes, WITHIN_BEST)
    assert workers is not None and rate is not None
    assert workers * processes <= cores
    assert workers == cores // processes


def _run(processes: int, **phases: Any) -> ProbeRun:
    settings = ProbeSettings(
        framework="torch", budget_s=10, processes=processes, processes_source="test", node_cores=16
    )
    run = ProbeRun(settings)
    run.result.update(
        {
            "backend": {"framework": "torch", "version": "2.5.1", "device": "cuda"},
            "loader": {"workers": 0, "pin_memory": False, "prefetch": 2},
            "batch": {"requested": 64, "used": 64},
            "cores": {"usable": 16, "processes": processes, "per_process": 16 // processes},
        }
    )
    run.result["phases"].update(phases)
    return run


def test_summary_has_a_schema_valid_node_section_with_demand_and_supply() -> None:
    run = _run(
        8,
        compute={"rate": 2875.0},
        input_warm={"rate": 150.0},
        input_cold={"rate": 140.0, "pages_dropped": True},
        end_to_end={"rate": 145.0, "input_share": 0.9, "cache": "warm"},
        sweep={
            "points": [
                {"workers": 0, "rate": 145.0},
                {"workers": 1, "rate": 260.0},
                {"workers": 2, "rate": 290.0},
            ]
        },
        node={"rate": 2300.0, "workers": 16},
        alternatives={
            "found": [
                {
                    "name": "pre-resized",
                    "label": "CPU",
                    "status": "measured",
                    "rate": 600.0,
                    "baseline_rate": 150.0,
                    "speedup": 4.0,
                },
                {"name": "dali", "label": "GPU", "status": "unavailable", "reason": "x"},
            ]
        },
    )
    probe = summarize(run, usable_cores=16)
    node = probe["node"]
    assert node["demand"] == 8 * 2875.0 and node["supply"] == 2300.0
    assert node["balance"] == pytest.approx(0.1)
    assert node["summary"].endswith("input-bound 10x")
    assert node["workers"]["per_process"] == 2 and node["workers"]["total"] == 16
    assert probe["workers"]["recommended"] == 2  # per process, not the whole node's cores
    schema = load_schema("snapshot")["properties"]["probe"]
    jsonschema.validate(probe, schema)
    assert probe["alternatives"][0]["speedup"] == 4.0


def test_a_used_count_above_the_share_is_not_recommended() -> None:
    # the script asks for 8 workers per process on a 16-core, 8-GPU node: 64 workers
    sweep = [
        {"workers": 8, "rate": 300.0},
        {"workers": 1, "rate": 240.0},
        {"workers": 2, "rate": 280.0},
    ]
    node = node_section({"phases": {}}, _run(8).settings, "cuda", sweep, WITHIN_BEST, 16)
    assert node["workers"]["per_process"] == 2 and node["workers"]["total"] == 16
    assert node["demand"] is None and node["balance"] is None and node["verdict"] is None


def test_concurrent_pipelines_extend_the_hard_timeout_by_their_start_up() -> None:
    from envcheck.probe.settings import CONCURRENT_ALLOWANCE_S, SETUP_ALLOWANCE_S

    alone = ProbeSettings(budget_s=20, processes=4)
    assert alone.hard_timeout() == 20 + SETUP_ALLOWANCE_S
    together = ProbeSettings(budget_s=20, processes=4, concurrent=True)
    assert together.hard_timeout() == 20 + SETUP_ALLOWANCE_S + CONCURRENT_ALLOWANCE_S
    assert ProbeSettings(budget_s=20, concurrent=True).hard_timeout() == alone.hard_timeout()


def test_concurrent_pipelines_that_decode_more_are_the_supply() -> None:
    phases = {
        "compute": {"rate": 120.0},
        "node": {"rate": 80.0, "workers": 2},
        "concurrent": {"status": "ok", "processes": 2, "rates": [60.0, 110.0], "total": 170.0},
    }
    node = node_section({"phases": phases}, _run(2).settings, "cpu", [], WITHIN_BEST, 2)
    assert node["supply"] == 170.0 and node["supply_basis"] == "2 concurrent pipelines"
    assert node["balance"] == pytest.approx(170.0 / 240.0, abs=1e-4)
    phases["concurrent"] = {
        "status": "partial",
        "processes": 2,
        "rates": [60.0, None],
        "total": 60.0,
    }
    node = node_section({"phases": phases}, _run(2).settings, "cpu", [], WITHIN_BEST, 2)
    assert node["supply"] == 80.0 and node["supply_basis"] == "one pipeline, a worker per core"


@pytest.mark.parametrize(
    ("fixture", "environ", "processes"),
    [
        ("mixed-rtx3090-a4000.json", {}, 2),
        ("mixed-rtx3090-a4000.json", {"CUDA_VISIBLE_DEVICES": "1"}, 1),
        ("mig-partitioned-a100.json", {"CUDA_VISIBLE_DEVICES": "MIG-1a2b,MIG-3c4d"}, 2),
        ("laptop-no-nvidia-driver.json", {"CUDA_VISIBLE_DEVICES": "0"}, 1),
        ("workstation-rtx4090-cpu-only-torch.json", {}, 1),
    ],
)
def test_processes_on_the_recorded_gpu_machines(
    fixture: str, environ: dict[str, str], processes: int
) -> None:
    facts = json.loads((FIXTURES / "gpu" / fixture).read_text())
    assert node_shape(facts, environ, 16).processes == processes
