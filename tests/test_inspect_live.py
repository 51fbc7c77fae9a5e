"""envcheck.inspect() on real objects: a CPU torch DataLoader and tensorflow-cpu tf.data
pipelines, built in the framework environment (`make frameworks`) and inspected there,
as the pre-training hook does inside a user's training environment. Each framework runs
once, in its own subprocess; the cases are read from the JSON it prints.

The type checks (anything else is a UsageError; nothing is imported to decide) also run
here, in envcheck's own environment, without either framework.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import envcheck
from envcheck.errors import UsageError

REPO = Path(__file__).resolve().parents[1]
from conftest import FW_PYTHON  # noqa: E402

requires_frameworks = pytest.mark.skipif(
    not FW_PYTHON.exists(), reason=f"no framework environment at {FW_PYTHON} (make frameworks)"
)

# Helpers shared by both scripts: findings as JSON-able rows.
PRELUDE = """
import json, os, sys
import envcheck
from envcheck.errors import UsageError
from envcheck.live import observe

def rows(findings):
    return [
        {"id": f.id, "path": f.location.path, "line": f.location.line, "message": f.message}
        for f in findings
    ]

out = {}
"""

TORCH_SCRIPT = """
import torch
from torch.utils.data import DataLoader, TensorDataset

data = TensorDataset(torch.zeros(16, 3))
usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()

zero = DataLoader(data, batch_size=4, num_workers=0)
out["zero"] = rows(envcheck.inspect(zero, uses_cuda=True))  # CALL:zero
good = DataLoader(data, batch_size=4, num_workers=2, pin_memory=True, persistent_workers=True)
out["good"] = rows(envcheck.inspect(good, uses_cuda=True))
out["zero_on_cpu"] = rows(envcheck.inspect(zero, uses_cuda=False))
many = DataLoader(data, batch_size=4, num_workers=usable + 2, persistent_workers=True)
out["many"] = rows(envcheck.inspect(many))  # CALL:many
out["many_item"] = observe(many)["loaders"][0]
one = DataLoader(data, batch_size=4, num_workers=1, persistent_workers=True)
out["one_alone"] = rows(envcheck.inspect(one, uses_cuda=True))
os.environ["LOCAL_WORLD_SIZE"] = str(usable + 1)  # as torchrun sets it in each process
out["one_in_ddp"] = rows(envcheck.inspect(one, uses_cuda=True))  # CALL:ddp
out["ddp_item"] = observe(one)["loaders"][0]
del os.environ["LOCAL_WORLD_SIZE"]
out["default_cuda"] = observe(zero)["file_facts"][0]["uses_cuda"]
out["cuda_available"] = torch.cuda.is_available()
try:
    envcheck.inspect(data)
except UsageError as exc:
    out["usage_error"] = str(exc)
out["tensorflow_imported"] = "tensorflow" in sys.modules
print(json.dumps(out))
"""

TF_SCRIPT = """
import tensorflow as tf

AUTOTUNE = tf.data.AUTOTUNE
numbers = tf.data.Dataset.range(64)

def double(x):
    return x * 2

def jitter(x):
    return x + tf.random.uniform([], maxval=2, dtype=tf.int64)

def host(x):
    return tf.py_function(lambda v: v + 1, [x], tf.int64)

def augment(x):
    image = tf.cast(tf.reshape(x, [1, 1, 1]), tf.float32)
    return tf.image.random_flip_left_right(image)

def case(name, dataset):
    out[name] = {"findings": rows(envcheck.inspect(dataset)), "facts": observe(dataset)}

no_autotune = tf.data.Options()
no_autotune.autotune.enabled = False
serial = numbers.map(double).batch(8).with_options(no_autotune)
out["serial"] = rows(envcheck.inspect(serial))  # CALL:serial
out["serial_facts"] = observe(serial)["tf_pipelines"][0]
case("fixed", numbers.map(double, num_parallel_calls=AUTOTUNE).batch(8).prefetch(AUTOTUNE))
case("rewritten", numbers.map(double).batch(8))
case("stateful", numbers.map(jitter).batch(8))
case("py_function", numbers.map(host, num_parallel_calls=AUTOTUNE).prefetch(1))
case("cache_after_augment", numbers.map(augment, num_parallel_calls=AUTOTUNE).cache().prefetch(1))
case("shards", tf.data.TFRecordDataset(["a.tfrecord", "b.tfrecord"]).batch(2).prefetch(1))
shards = ["a.tfrecord", "b.tfrecord"]
case("shards_parallel", tf.data.TFRecordDataset(shards, num_parallel_reads=2).batch(2).prefetch(1))
case(
    "unknown_class",
    tf.data.Dataset.sample_from_datasets([numbers, numbers.enumerate().map(lambda i, x: x)])
    .apply(tf.data.experimental.copy_to_device("/cpu:0"))
    .batch(4)
    .prefetch(1),
)
try:
    envcheck.inspect(iter(numbers))
except UsageError as exc:
    out["usage_error"] = str(exc)
out["torch_imported"] = "torch" in sys.modules
print(json.dumps(out))
"""


def run_case(tmp_path: Path, name: str, body: str) -> tuple[dict[str, Any], Path]:
    script = tmp_path / f"{name}.py"
    script.write_text(textwrap.dedent(PRELUDE) + textwrap.dedent(body), encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "CUDA_VISIBLE_DEVICES": "",
    }
    proc = subprocess.run(
        [str(FW_PYTHON), str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), script


def line_of(script: Path, marker: str) -> int:
    lines = script.read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if f"# CALL:{marker}" in text)


def ids(rows: list[dict[str, Any]]) -> list[str]:
    return sorted({r["id"] for r in rows})


@pytest.fixture(scope="module")
def torch_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    return run_case(tmp_path_factory.mktemp("torch"), "torch_loaders", TORCH_SCRIPT)


@pytest.fixture(scope="module")
def tf_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    return run_case(tmp_path_factory.mktemp("tf"), "tf_pipelines", TF_SCRIPT)


# -- without the frameworks ----------------------------------------------------------------


@pytest.mark.parametrize("obj", [object(), [1, 2], "loader.py"])
def test_other_objects_are_a_usage_error_naming_the_type(obj: object) -> None:
    with pytest.raises(UsageError) as caught:
        envcheck.inspect(obj)
    kind = type(obj)
    message = str(caught.value)
    assert f"{kind.__module__}.{kind.__qualname__}" in message
    assert "\n" not in message


def test_a_lookalike_class_outside_the_frameworks_is_refused() -> None:
    class DataLoader:  # named like torch's, but from this module
        num_workers = 0

    before = {m for m in sys.modules if m.split(".")[0] in ("torch", "tensorflow")}
    with pytest.raises(UsageError, match="DataLoader"):
        envcheck.inspect(DataLoader())
    after = {m for m in sys.modules if m.split(".")[0] in ("torch", "tensorflow")}
    assert after == before


def test_the_package_stays_import_light() -> None:
    code = "import sys, envcheck; print(sorted(m for m in sys.modules if m.startswith('envcheck')))"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert json.loads(proc.stdout.replace("'", '"')) == ["envcheck"]


# -- torch.utils.data.DataLoader -----------------------------------------------------------


@pytest.mark.slow
@requires_frameworks
def test_loader_without_workers_is_ec501_at_the_callers_line(
    torch_run: tuple[dict[str, Any], Path],
) -> None:
    out, script = torch_run
    assert "EC501" in ids(out["zero"])
    ec501 = next(r for r in out["zero"] if r["id"] == "EC501")
    assert ec501["path"] == str(script)
    assert ec501["line"] == line_of(script, "zero")
    assert "num_workers=0 (live object)" in ec501["message"]


@pytest.mark.slow
@requires_frameworks
def test_a_well_set_loader_has_no_worker_findings(torch_run: tuple[dict[str, Any], Path]) -> None:
    out, _ = torch_run
    assert not {"EC501", "EC502", "EC503"} & set(ids(out["good"]))


@pytest.mark.slow
@requires_frameworks
def test_a_loader_said_to_feed_the_cpu_has_no_gpu_findings(
    torch_run: tuple[dict[str, Any], Path],
) -> None:
    out, _ = torch_run
    assert "EC501" in ids(out["zero"])  # the same loader, said to feed CUDA
    assert not {"EC501", "EC502"} & set(ids(out["zero_on_cpu"]))


@pytest.mark.slow
@requires_frameworks
def test_workers_above_the_usable_cpus_are_ec504(torch_run: tuple[dict[str, Any], Path]) -> None:
    out, script = torch_run
    ec504 = [r for r in out["many"] if r["id"] == "EC504"]
    assert ec504 and ec504[0]["line"] == line_of(script, "many")
    args = out["many_item"]["args"]
    assert args["num_workers"]["value"] > 2
    assert args["persistent_workers"] == {
        "known": True,
        "value": True,
        "text": "True",
        "source": "live object",
    }
    assert out["many_item"]["kind"] == "torch.DataLoader"


@pytest.mark.slow
@requires_frameworks
def test_workers_count_once_per_ddp_process(torch_run: tuple[dict[str, Any], Path]) -> None:
    """Issue 16: inside a DDP process (LOCAL_WORLD_SIZE set) one worker per process is
    usable + 1 workers on the node: EC504, saying so; alone, the same loader is fine."""
    out, script = torch_run
    assert "EC504" not in ids(out["one_alone"])
    ec504 = [r for r in out["one_in_ddp"] if r["id"] == "EC504"]
    assert ec504 and ec504[0]["line"] == line_of(script, "ddp")
    assert "processes per node (LOCAL_WORLD_SIZE=" in ec504[0]["message"]
    assert out["ddp_item"]["processes"]["per_gpu"] is False


@pytest.mark.slow
@requires_frameworks
def test_torch_side_defaults_and_isolation(torch_run: tuple[dict[str, Any], Path]) -> None:
    out, _ = torch_run
    assert out["default_cuda"] == out["cuda_available"]
    assert "torch.utils.data.dataset.TensorDataset" in out["usage_error"]
    assert out["tensorflow_imported"] is False


# -- tf.data.Dataset -----------------------------------------------------------------------


@pytest.mark.slow
@requires_frameworks
def test_serial_map_without_prefetch_is_ec511_and_ec512(
    tf_run: tuple[dict[str, Any], Path],
) -> None:
    """With autotuning off, TensorFlow neither parallelises the map nor adds a prefetch."""
    out, script = tf_run
    assert ids(out["serial"]) == ["EC511", "EC512"]
    assert {r["line"] for r in out["serial"]} == {line_of(script, "serial")}
    ec512 = next(r for r in out["serial"] if r["id"] == "EC512")
    # the message names the dataset's chain, not the line that called inspect()
    assert "the pipeline `range(...).map(double).batch(8)" in ec512["message"]
    assert "envcheck.inspect" not in ec512["message"]
    facts = out["serial_facts"]
    assert [op["op"] for op in facts["operations"]] == ["map", "batch", "with_options"]
    assert facts["operations"][0]["num_parallel_calls"] is None
    assert facts["operations"][0]["map_function"] == "double"
    assert facts["last_operation"] == "batch"
    assert facts["ends_with_prefetch"] is False
    assert facts["options"]["autotune"] is False


@pytest.mark.slow
@requires_frameworks
def test_parallel_map_batch_prefetch_is_clean(tf_run: tuple[dict[str, Any], Path]) -> None:
    out, _ = tf_run
    assert out["fixed"]["findings"] == []
    pipeline = out["fixed"]["facts"]["tf_pipelines"][0]
    assert pipeline["source"] == "range"
    assert [op["op"] for op in pipeline["operations"]] == ["map", "batch", "prefetch"]
    parallel = pipeline["operations"][0]["num_parallel_calls"]
    assert parallel["known"] is True and parallel["text"] == "AUTOTUNE"
    assert pipeline["ends_with_prefetch"] is True and pipeline["last_operation"] == "prefetch"


@pytest.mark.slow
@requires_frameworks
def test_tensorflows_default_rewrites_are_honoured(tf_run: tuple[dict[str, Any], Path]) -> None:
    """Autotuning on (the default): a stateless serial map is parallelised and a final
    prefetch injected by TensorFlow itself; a stateful one stays serial."""
    out, _ = tf_run
    assert out["rewritten"]["findings"] == []
    pipeline = out["rewritten"]["facts"]["tf_pipelines"][0]
    assert pipeline["operations"][0]["parallelized_by_tensorflow"] == "map_parallelization"
    assert "inject_prefetch" in pipeline["prefetch"]
    assert ids(out["stateful"]["findings"]) == ["EC511"]


@pytest.mark.slow
@requires_frameworks
def test_host_calls_augmentation_and_shards(tf_run: tuple[dict[str, Any], Path]) -> None:
    out, _ = tf_run
    assert ids(out["py_function"]["findings"]) == ["EC513"]
    assert "tf.py_function" in out["py_function"]["findings"][0]["message"]
    assert ids(out["cache_after_augment"]["findings"]) == ["EC514"]
    assert ids(out["shards"]["findings"]) == ["EC515"]
    assert out["shards_parallel"]["findings"] == []


@pytest.mark.slow
@requires_frameworks
def test_unknown_classes_are_kept_by_name(tf_run: tuple[dict[str, Any], Path]) -> None:
    out, _ = tf_run
    pipeline = out["unknown_class"]["facts"]["tf_pipelines"][0]
    names = [op["op"] for op in pipeline["operations"]]
    assert "_CopyToDeviceDataset" in names
    assert names[-3:] == ["_CopyToDeviceDataset", "batch", "prefetch"]
    assert "sample_from_datasets" in names
    assert out["unknown_class"]["findings"] == []


@pytest.mark.slow
@requires_frameworks
def test_tf_side_isolation(tf_run: tuple[dict[str, Any], Path]) -> None:
    out, _ = tf_run
    assert "OwnedIterator" in out["usage_error"]
    assert out["torch_imported"] is False
