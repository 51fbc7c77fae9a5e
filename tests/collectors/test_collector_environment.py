"""environment collector: only allowlisted variables are recorded, never secrets."""

from __future__ import annotations

from envcheck.collectors import environment


def test_only_allowlisted_variables_are_recorded(machine) -> None:
    environ = {
        "OMP_NUM_THREADS": "4",
        "CUDA_VISIBLE_DEVICES": "0,1",
        "THEANO_FLAGS": "device=cuda",
        "SECRET_TOKEN": "hunter2",
        "AWS_SECRET_ACCESS_KEY": "abc",
        "HOME": "/home/someone",
        "PATH": "/usr/bin",
    }
    recorded = environment.collect(machine.ctx(environ))["environment"]
    assert recorded == {
        "OMP_NUM_THREADS": "4",
        "CUDA_VISIBLE_DEVICES": "0,1",
        "THEANO_FLAGS": "device=cuda",
    }
    assert "SECRET_TOKEN" not in recorded
    assert "hunter2" not in recorded.values()


def test_empty_values_are_kept_and_nothing_is_invented(machine) -> None:
    assert environment.collect(machine.ctx({}))["environment"] == {}
    recorded = environment.collect(machine.ctx({"CUDA_VISIBLE_DEVICES": ""}))["environment"]
    assert recorded == {"CUDA_VISIBLE_DEVICES": ""}


def test_every_allowlisted_variable_is_recorded(machine) -> None:
    environ = {name: f"value-{i}" for i, name in enumerate(environment.RELEVANT_VARIABLES)}
    recorded = environment.collect(machine.ctx({**environ, "SECRET_TOKEN": "x"}))
    assert recorded["environment"] == environ
