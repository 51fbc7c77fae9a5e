"""tf.data / Keras rules (EC511-EC522) on the corpus in tests/scripts_corpus/: the
analyser's observations evaluated by the real rules, findings and their locations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envcheck.engine.evaluate import evaluate
from envcheck.engine.registry import Registry
from envcheck.model import Status
from envcheck.rulebook import builtin_registry
from envcheck.scripts.analyze import analyze_file
from envcheck.snapshot import Facts, Snapshot

CORPUS = Path(__file__).parent / "scripts_corpus"
OURS = [f"EC5{n}" for n in range(11, 23)]
KERAS2 = {
    "packages": {"tensorflow": "2.15.0", "keras": "2.15.0"},
    "modules": {"providers": {"tensorflow": ["tensorflow"], "keras": ["keras"]}},
}
A100 = {
    "gpu": {
        "status": "ok",
        "devices": [{"index": 0, "name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0"}],
    }
}


def _findings(name: str, folder: Path = CORPUS, **extra: Any) -> list[tuple[str, int]]:
    path = folder / name
    report = analyze_file(path, name)
    assert report.error is None
    data = {
        "schema_version": 1,
        "collectors": {"scripts": {"status": "ok", "reason": None}},
        "scripts": {
            "files": [name],
            "tf_pipelines": report.tf_pipelines,
            "keras_calls": report.keras_calls,
            "file_facts": [{"path": name, **report.facts}],
        },
        **extra,
    }
    registry = builtin_registry()
    rules = Registry([r for r in registry if r.id in OURS])
    found = []
    for result in evaluate(rules, Facts(Snapshot.from_dict(data))):
        assert result.status in (Status.PASS, Status.FAIL, Status.UNKNOWN), result
        for finding in result.findings:
            assert finding.location is not None and finding.location.path == name
            assert f"{name}:{finding.location.line}" in finding.message
            assert "<unknown>" not in finding.message + finding.fix
            found.append((finding.id, finding.location.line or 0))
    return sorted(found)


def test_serial_map_without_prefetch() -> None:
    # the pipeline make_dataset() returns is judged where it reaches fit (line 22)
    assert _findings("tf_serial_map_no_prefetch.py") == [("EC511", 14), ("EC512", 22)]


def test_fixed_pipeline_has_no_findings() -> None:
    assert _findings("tf_pipeline_fixed.py", **KERAS2) == []
    report = analyze_file(CORPUS / "tf_pipeline_fixed.py", "x.py")
    assert report.facts["mixed_precision"] is True
    # make_dataset()'s pipeline is judged where main() hands it to fit (line 45)
    [first] = [p for p in report.tf_pipelines if p["line"] == 45]
    assert first["built_by"] == "make_dataset() (line 20)"
    assert [op["op"] for op in first["operations"]] == [
        "map",
        "cache",
        "shuffle",
        "map",
        "batch",
        "prefetch",
    ]
    assert first["operations"][0]["num_parallel_calls"]["text"] == "AUTOTUNE"


def test_keras2_imagedatagenerator_and_fit_generator() -> None:
    assert _findings("keras2_imagedatagenerator_fit_generator.py", **KERAS2) == [
        ("EC516", 27),
        ("EC517", 27),
        ("EC517", 28),
        ("EC518", 24),  # the generator, built here: its flow_from_* calls are not repeated
    ]


def test_keras3_workers_rule_is_unknown() -> None:
    keras3 = {
        "packages": {"tensorflow": "2.16.1", "keras": "3.3.3"},
        "modules": {"providers": {"tensorflow": ["tensorflow"], "keras": ["keras"]}},
    }
    found = _findings("keras2_imagedatagenerator_fit_generator.py", **keras3)
    assert "EC517" not in {f for f, _ in found}


def test_custom_layer_numpy() -> None:
    assert _findings("keras_custom_layer_numpy.py") == [("EC519", 14)]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "import tensorflow as tf\n"
            "files = tf.io.gfile.glob('*.tfrecord')\n"
            "ds = tf.data.TFRecordDataset(files).map(parse, num_parallel_calls=4)\n"
            "ds = ds.batch(8).prefetch(1)\n",
            [("EC515", 3)],
        ),
        (
            # BERT's run_classifier: a variable named for one file holds one file
            "import tensorflow as tf\n"
            "def input_fn(input_file):\n"
            "    d = tf.data.TFRecordDataset(input_file)\n"
            "    return d.map(parse, num_parallel_calls=4).batch(8).prefetch(1)\n",
            [],
        ),
        (
            # retinaface-tf2's load_tfrecord_dataset: a parameter named for one record file
            "import tensorflow as tf\n"
            "def load_tfrecord_dataset(tfrecord_name, batch_size):\n"
            "    d = tf.data.TFRecordDataset(tfrecord_name)\n"
            "    return d.map(parse, num_parallel_calls=4).batch(8).prefetch(1)\n",
            [],
        ),
        (
            "import tensorflow as tf\n"
            "def load_tfrecord_dataset(tfrecord_names, batch_size):\n"
            "    d = tf.data.TFRecordDataset(tfrecord_names)\n"
            "    return d.map(parse, num_parallel_calls=4).batch(8).prefetch(1)\n",
            [("EC515", 3)],
        ),
        (
            "import tensorflow as tf\n"
            "import numpy as np\n"
            "def aug(x):\n"
            "    return tf.image.random_flip_left_right(x)\n"
            "def load(p):\n"
            "    return tf.py_function(lambda q: np.load(q), [p], tf.float32)\n"
            "ds = tf.data.Dataset.list_files('*.npy')\n"
            "ds = ds.map(load, num_parallel_calls=tf.data.AUTOTUNE)\n"
            "ds = ds.map(aug, num_parallel_calls=tf.data.AUTOTUNE).cache()\n"
            "model.fit(ds.batch(32).prefetch(tf.data.AUTOTUNE))\n",
            [("EC513", 8), ("EC514", 9)],
        ),
        (
            "from tensorflow import data\n"
            "def prepare(ds):\n"
            "    return ds\n"
            "ds = prepare(data.Dataset.range(10).map(lambda x: x, num_parallel_calls=2))\n",
            [],
        ),
        (
            # a pipeline returned by a function and prefetched by its caller
            "import tensorflow as tf\n"
            "def make_ds(paths):\n"
            "    ds = tf.data.Dataset.from_tensor_slices(paths)\n"
            "    ds = ds.map(decode, num_parallel_calls=tf.data.AUTOTUNE)\n"
            "    return ds.batch(32)\n"
            "def main():\n"
            "    train = make_ds(files)\n"
            "    train = train.prefetch(tf.data.AUTOTUNE)\n"
            "    model.fit(train)\n",
            [],
        ),
        (
            # ... and batched, not prefetched, by its caller: judged there
            "import tensorflow as tf\n"
            "def make_ds(paths):\n"
            "    ds = tf.data.Dataset.from_tensor_slices(paths)\n"
            "    return ds.map(decode, num_parallel_calls=tf.data.AUTOTUNE)\n"
            "def main():\n"
            "    train = make_ds(files).batch(32)\n"
            "    model.fit(train)\n",
            [("EC512", 6)],
        ),
        (
            # prefetch before batch: its own finding, at the prefetch
            "import tensorflow as tf\n"
            "ds = tf.data.Dataset.from_tensor_slices(paths).map(decode, num_parallel_calls=4)\n"
            "ds = ds.prefetch(tf.data.AUTOTUNE).batch(32)\n"
            "model.fit(ds)\n",
            [("EC512", 3)],
        ),
        (
            # import tensorflow.compat.v1 as tf is followed
            "import tensorflow.compat.v1 as tf\n"
            "ds = tf.data.TFRecordDataset(files).map(parse)\n"
            "ds = ds.batch(32)\n"
            "for x in ds:\n"
            "    pass\n",
            [("EC511", 2), ("EC512", 2), ("EC515", 2)],
        ),
        (
            # a factory class's build() method followed into its caller
            "import tensorflow as tf\n"
            "class Input:\n"
            "    def __init__(self, paths):\n"
            "        self.paths = paths\n"
            "    def build(self):\n"
            "        ds = tf.data.Dataset.from_tensor_slices(self.paths)\n"
            "        ds = ds.map(decode, num_parallel_calls=tf.data.AUTOTUNE)\n"
            "        return ds.batch(64)\n"
            "train = Input(files).build()\n"
            "model.fit(train)\n",
            [("EC512", 9)],
        ),
        (
            # a vectorised map after batch: the recommended order
            "import tensorflow as tf\n"
            "ds = tf.data.Dataset.range(1000).batch(256).map(lambda x: x * 2).prefetch(2)\n"
            "model.fit(ds)\n",
            [],
        ),
        (
            # time.sleep in a py_function releases the GIL: parallel calls overlap
            "import time\n"
            "import tensorflow as tf\n"
            "def slow(x):\n"
            "    time.sleep(0.01)\n"
            "    return x\n"
            "def f(x):\n"
            "    return tf.py_function(slow, [x], tf.int64)\n"
            "ds = tf.data.Dataset.range(10).map(f, num_parallel_calls=8).prefetch(1)\n"
            "model.fit(ds)\n",
            [],
        ),
        (
            # NumPy in a py_function holds the GIL
            "import numpy as np\n"
            "import tensorflow as tf\n"
            "def load(p):\n"
            "    return np.load(p.numpy())\n"
            'ds = tf.data.Dataset.list_files("*.npy")\n'
            "ds = ds.map(lambda p: tf.py_function(load, [p], tf.float32), num_parallel_calls=8)\n"
            "ds = ds.prefetch(1)\n"
            "model.fit(ds)\n",
            [("EC513", 6)],
        ),
        (
            # returned to callers outside the file: not judged (unknown)
            "import tensorflow as tf\n"
            "def input_fn(paths):\n"
            "    ds = tf.data.Dataset.from_tensor_slices(paths)\n"
            "    return ds.map(decode, num_parallel_calls=tf.data.AUTOTUNE).batch(32)\n",
            [],
        ),
    ],
)
def test_snippets(tmp_path: Path, source: str, expected: list[tuple[str, int]]) -> None:
    (tmp_path / "snippet.py").write_text(source)
    assert _findings("snippet.py", tmp_path) == expected


def test_skipped_without_script() -> None:
    data = {"schema_version": 1, "collectors": {"scripts": {"status": "ok", "reason": None}}}
    registry = builtin_registry()
    rules = Registry([r for r in registry if r.id in OURS])
    results = evaluate(rules, Facts(Snapshot.from_dict(data)))
    assert {r.status for r in results} == {Status.SKIPPED}


# EC520-EC522 ------------------------------------------------------------------------------


def test_keras2_generator_with_worker_threads() -> None:
    linux = {**KERAS2, **A100, "platform": {"system": "Linux"}}
    # batches() read by 4 threads (not the Sequence, not the @threadsafe_generator one, not
    # the generator wrapped in a locking iterator); float32 on an A100
    assert _findings("keras2_generator_workers.py", **linux) == [("EC521", 71), ("EC522", 71)]
    windows = {**linux, "platform": {"system": "Windows"}}
    assert _findings("keras2_generator_workers.py", **windows) == [
        ("EC520", 75),
        ("EC521", 71),
        ("EC522", 71),
    ]


def test_windows_multiprocessing_needs_the_platform() -> None:
    report = analyze_file(CORPUS / "keras2_imagedatagenerator_fit_generator.py", "k.py")
    data = {
        "schema_version": 1,
        "collectors": {"scripts": {"status": "ok", "reason": None}},
        "scripts": {"keras_calls": report.keras_calls, "file_facts": [report.facts]},
    }
    rule = builtin_registry().get("EC520")
    assert rule is not None
    [result] = evaluate(Registry([rule]), Facts(Snapshot.from_dict(data)))
    assert result.status is Status.UNKNOWN
    assert "platform" in result.reason
    data["platform"] = {"system": "Windows"}
    [result] = evaluate(Registry([rule]), Facts(Snapshot.from_dict(data)))
    [finding] = result.findings
    assert finding.location is not None and finding.location.line == 29
    assert finding.fix.startswith("fit(..., workers=")


def test_keras_float32_on_tensor_cores() -> None:
    assert ("EC522", 22) in _findings("tf_serial_map_no_prefetch.py", **A100)
    assert _findings("tf_pipeline_fixed.py", **KERAS2, **A100) == []  # mixed_float16
    pascal = {"gpu": {"status": "ok", "devices": [{"index": 0, "compute_capability": "6.1"}]}}
    assert "EC522" not in {f for f, _ in _findings("tf_serial_map_no_prefetch.py", **pascal)}


@pytest.mark.parametrize(
    ("source", "mixed"),
    [
        (
            "from tensorflow.keras import mixed_precision\n"
            "mixed_precision.set_global_policy('mixed_bfloat16')\n",
            True,
        ),
        (
            "from tensorflow.keras import mixed_precision\n"
            "policy = mixed_precision.Policy('mixed_float16')\n"
            "mixed_precision.experimental.set_policy(policy)\n",
            True,
        ),
        ("import keras\nkeras.config.set_dtype_policy('mixed_float16')\n", True),
        ("import tensorflow as tf\ntf.keras.layers.Dense(10, dtype='mixed_float16')\n", True),
        (
            "import tensorflow as tf\n"
            "opt = tf.train.experimental.enable_mixed_precision_graph_rewrite(opt)\n",
            True,
        ),
        (
            "import tensorflow as tf\ntf.keras.mixed_precision.set_global_policy(args.policy)\n",
            None,
        ),
        ("import tensorflow as tf\ntf.keras.mixed_precision.set_global_policy('float32')\n", False),
        ("import tensorflow as tf\ntf.keras.layers.Dense(10)\n", False),
    ],
)
def test_mixed_precision_policy_is_read(tmp_path: Path, source: str, mixed: Any) -> None:
    (tmp_path / "policy.py").write_text(source)
    assert analyze_file(tmp_path / "policy.py", "policy.py").facts["mixed_precision"] is mixed


def test_flow_from_dataframe_reported_once_per_generator(tmp_path: Path) -> None:
    """A generator built in the file is reported where it is built, not again at each of
    its flow_from_dataframe calls; one built out of sight is reported at the call."""
    (tmp_path / "built.py").write_text(
        "from tensorflow import keras\n"
        "def loaders(train_df, val_df):\n"
        "    gen = keras.preprocessing.image.ImageDataGenerator(horizontal_flip=True)\n"
        "    tr = gen.flow_from_dataframe(train_df, x_col='path', y_col='label')\n"
        "    te = gen.flow_from_dataframe(val_df, x_col='path', y_col='label')\n"
        "    return tr, te\n"
    )
    assert _findings("built.py", tmp_path) == [("EC518", 3)]
    (tmp_path / "handed.py").write_text(
        "import tensorflow as tf\n"
        "def loader(gen, df):\n"
        "    return gen.flow_from_dataframe(df, x_col='path', y_col='label')\n"
    )
    assert _findings("handed.py", tmp_path) == [("EC518", 3)]


LEARNER = """
from .imports import *


class Learner:
    def __init__(self, model, train_data, workers=1, use_multiprocessing=False):
        self.model = model
        self.train_data = train_data
        self.workers = workers
        self.use_multiprocessing = use_multiprocessing

    def fit_onecycle(self, lr, epochs):
        return self.fit(epochs)

    def fit(self, epochs):
        fit_fn = self.model.fit
        return fit_fn(
            self._prepare(self.train_data),
            epochs=epochs,
            workers=self.workers,
            use_multiprocessing=self.use_multiprocessing,
        )

    def top_losses(self, y):
        return tf.convert_to_tensor(y)
"""


def test_fit_through_a_bound_method_with_workers_reads_a_generator(tmp_path: Path) -> None:
    """`fit_fn = self.model.fit; fit_fn(data, workers=self.workers)` in a file whose
    TensorFlow comes through `from .imports import *`: Keras 2 reads workers= only for a
    generator or Sequence, so the input is one, loaded by the default single worker; the
    learner's own `self.fit(...)` is not a Keras fit."""
    (tmp_path / "learner.py").write_text(LEARNER)
    assert _findings("learner.py", tmp_path, **KERAS2) == [("EC517", 17)]
    report = analyze_file(tmp_path / "learner.py", "learner.py")
    assert report.facts["keras_fit"]["line"] == 17  # not self.fit() at 14


def test_fit_without_worker_options_on_an_unknown_input_is_not_judged(tmp_path: Path) -> None:
    source = LEARNER.replace("            workers=self.workers,\n", "").replace(
        "            use_multiprocessing=self.use_multiprocessing,\n", ""
    )
    (tmp_path / "learner.py").write_text(source)
    assert _findings("learner.py", tmp_path, **KERAS2) == []


def test_a_star_import_does_not_bring_a_name_the_file_binds(tmp_path: Path) -> None:
    """`tf = load_module()` in the file: `tf` is the file's own, not TensorFlow."""
    source = LEARNER.replace("from .imports import *\n", "from .imports import *\ntf = object()\n")
    (tmp_path / "learner.py").write_text(source)
    assert _findings("learner.py", tmp_path, **KERAS2) == []


# The class's own `copy()` constructs it anew, passing back what the object holds
# (`Learner(self.model, self.train_data, self.workers)`): no value of its own, so
# `self.workers` stays the signature's default of 1 (MIScnn's Neural_Network.copy).
COPIED_LEARNER = """\
import tensorflow as tf


class Learner:
    def __init__(self, model, train_data, workers=1):
        self.model = model
        self.train_data = train_data
        self.workers = workers

    def train(self, epochs):
        self.model.fit(make_sequence(self.train_data), epochs=epochs, workers=self.workers)

    def copy(self):
        return Learner(self.model, self.train_data, self.workers)
"""


def test_a_copy_passing_the_attribute_back_keeps_the_default(tmp_path: Path) -> None:
    (tmp_path / "learner.py").write_text(COPIED_LEARNER)
    assert _findings("learner.py", tmp_path, **KERAS2) == [("EC517", 11)]
    # a construction passing its own value is read, as before: 8 workers is fine
    built = COPIED_LEARNER + "\nlearner = Learner(net, data, workers=8)\n"
    (tmp_path / "learner.py").write_text(built)
    assert _findings("learner.py", tmp_path, **KERAS2) == []
