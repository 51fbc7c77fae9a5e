"""tf.data dataflow shapes from library loader code (issue 11): pipelines handed in as
parameters, num_parallel_calls from a parameter's default, selector and dataset-making
maps, maps before cache(), sources unpacked into several pipelines, pipelines stored
in lists. Each snippet goes through the real analyser and the real rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envcheck.engine.evaluate import evaluate
from envcheck.engine.registry import Registry
from envcheck.rulebook import builtin_registry
from envcheck.scripts.analyze import analyze_file
from envcheck.snapshot import Facts, Snapshot

TF_RULES = {"EC511", "EC512", "EC513", "EC514", "EC515"}


def _audit(tmp_path: Path, source: str) -> tuple[list[tuple[str, int]], list[dict[str, Any]]]:
    path = tmp_path / "loader.py"
    path.write_text(source)
    report = analyze_file(path, "loader.py")
    assert report.error is None
    data = {
        "schema_version": 1,
        "collectors": {"scripts": {"status": "ok", "reason": None}},
        "scripts": {
            "files": ["loader.py"],
            "tf_pipelines": report.tf_pipelines,
            "keras_calls": report.keras_calls,
            "file_facts": [{"path": "loader.py", **report.facts}],
        },
    }
    rules = Registry([r for r in builtin_registry() if r.id in TF_RULES])
    found: list[tuple[str, int]] = []
    messages: list[dict[str, Any]] = []
    for result in evaluate(rules, Facts(Snapshot.from_dict(data))):
        for finding in result.findings:
            assert finding.location is not None
            found.append((finding.id, finding.location.line or 0))
            messages.append({"id": finding.id, "message": finding.message})
    return sorted(found), messages


LIBRARY_DEFAULT = """\
import tensorflow as tf


def _files(pattern, num_threads=1):
    names = tf.data.Dataset.list_files(pattern)
    return names.map(tf.io.read_file, num_parallel_calls=num_threads)


def provide(pattern, batch_size, num_threads=1):
    ds = _files(pattern, num_threads=num_threads)
    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)
"""


def test_num_parallel_calls_from_a_parameter_default_is_serial(tmp_path: Path) -> None:
    found, messages = _audit(tmp_path, LIBRARY_DEFAULT)
    assert found == [("EC511", 6)]
    assert "num_parallel_calls=num_threads = 1 (" in messages[0]["message"]
    assert "num_threads=1" in messages[0]["message"] or "defaults to 1" in messages[0]["message"]


def test_num_parallel_calls_passed_by_the_file_is_followed(tmp_path: Path) -> None:
    called = LIBRARY_DEFAULT + "\nprovide('*.jpg', 32, num_threads=tf.data.AUTOTUNE)\n"
    assert _audit(tmp_path, called)[0] == []
    # calls that disagree: unknown, not judged serial
    mixed = LIBRARY_DEFAULT + "\nprovide('*.jpg', 32, num_threads=8)\nprovide('*.png', 32)\n"
    assert _audit(tmp_path, mixed)[0] == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            # a parameter annotated tf.data.Dataset holds the caller's pipeline
            "import tensorflow as tf\n"
            "def augment(ds: tf.data.Dataset, fn) -> tf.data.Dataset:\n"
            "    return ds.map(fn)\n",
            [("EC511", 3)],
        ),
        (
            # unannotated, but only ever extended with dataset operations
            "import tensorflow as tf\n"
            "def prepare(dataset, batch_size):\n"
            "    patches = dataset.map(lambda img: tf.image.resize(img, (64, 64)))\n"
            "    patches = patches.shuffle(100)\n"
            "    return patches.batch(batch_size).prefetch(1)\n",
            [("EC511", 3)],
        ),
        (
            # a parameter used otherwise (cardinality().numpy()) is not taken for a pipeline
            "import tensorflow as tf\n"
            "def size(table):\n"
            "    n = table.cardinality().numpy()\n"
            "    return table.map(str)\n",
            [],
        ),
    ],
)
def test_pipelines_handed_in_as_parameters(
    tmp_path: Path, source: str, expected: list[tuple[str, int]]
) -> None:
    assert _audit(tmp_path, source)[0] == expected


def test_the_choice_dataset_of_choose_from_datasets_is_not_data(tmp_path: Path) -> None:
    source = (
        "import tensorflow as tf\n"
        "def choices(n, k):\n"
        "    return tf.data.Dataset.range(n).shuffle(n).map(lambda z: [[z] * k]).repeat()\n"
        "def sampler(datasets, n, k, load):\n"
        "    picks = choices(n, k)\n"
        "    count = tf.data.Dataset.counter()\n"
        "    ds = tf.data.Dataset.choose_from_datasets(datasets, picks)\n"
        "    ds = tf.data.Dataset.choose_from_datasets(\n"
        "        [ds.take(2), ds.map(load)], count.map(lambda x: tf.cast(x > 2, tf.int64)))\n"
        "    return ds.batch(8).prefetch(tf.data.AUTOTUNE)\n"
    )
    # the selector maps (lines 3, 9 col 32) are not flagged; the data map (line 9) is
    found, _ = _audit(tmp_path, source)
    assert found == [("EC511", 9)]
    path = tmp_path / "loader.py"
    report = analyze_file(path, "loader.py")
    selectors = [p for p in report.tf_pipelines if p["selector"]]
    assert {p["source"] for p in selectors} == {"range", "counter"}


def test_a_map_that_makes_datasets_is_read_by_the_interleave(tmp_path: Path) -> None:
    source = (
        "import tensorflow as tf\n"
        "def distribute(dataset: tf.data.Dataset, n):\n"
        "    ids = tf.data.Dataset.range(n)\n"
        "    ds = ids.map(lambda i: dataset.shard(n, i))\n"
        "    return ds.interleave(lambda x: x, cycle_length=n, num_parallel_calls=n)\n"
    )
    assert _audit(tmp_path, source)[0] == []
    serial = source.replace(", num_parallel_calls=n", "")
    assert _audit(tmp_path, serial)[0] == [("EC511", 5)]


def test_a_map_before_cache_runs_in_the_first_epoch_only(tmp_path: Path) -> None:
    cheap = (
        "import tensorflow as tf\n"
        "def scale(e):\n"
        "    return tf.cast(e['image'], tf.float32) / 255.0\n"
        "ds = tf.data.Dataset.from_tensor_slices(x).map(scale).cache().repeat()\n"
        "model.fit(ds.shuffle(1000).batch(64).prefetch(tf.data.AUTOTUNE))\n"
    )
    assert _audit(tmp_path, cheap)[0] == []
    python = cheap.replace(
        "tf.cast(e['image'], tf.float32) / 255.0", "tf.py_function(load, [e], tf.float32)"
    )
    assert _audit(tmp_path, python)[0] == [("EC511", 4), ("EC513", 4)]
    augmented = cheap.replace("tf.cast(", "tf.image.random_flip_left_right(").replace(
        ", tf.float32)", ")"
    )
    # random augmentation before the cache runs once too: it is frozen, EC514's finding
    assert _audit(tmp_path, augmented)[0] == [("EC514", 4)]


def test_one_source_unpacked_into_two_pipelines(tmp_path: Path) -> None:
    source = (
        "import tensorflow as tf\n"
        "import tensorflow_datasets as tfds\n"
        "builder = tfds.builder('mnist')\n"
        "train, test = override or builder.as_dataset(split=['train', 'test'])\n"
        "train_ds = train.cache().repeat().shuffle(50000).batch(1024)\n"
        "test_ds = test.cache().repeat().batch(1024)\n"
        "model.fit(train_ds, validation_data=test_ds)\n"
    )
    # each pipeline is reported where it is built, not twice at the shared source
    assert _audit(tmp_path, source)[0] == [("EC512", 5), ("EC512", 6)]


def test_pipelines_stored_in_a_list_and_returned_in_one(tmp_path: Path) -> None:
    source = (
        "import tensorflow as tf\n"
        "def one(pattern):\n"
        "    return tf.data.Dataset.list_files(pattern).map(tf.io.read_file)\n"
        "def prepare(dataset, batch_size):\n"
        "    ds = dataset.map(tf.image.decode_image, num_parallel_calls=4).repeat()\n"
        "    ds = ds.shuffle(64)\n"
        "    ds = ds.prefetch(64)\n"
        "    ds = ds.batch(batch_size)\n"
        "    return ds\n"
        "def provide(patterns, batch_size):\n"
        "    images = []\n"
        "    for pattern in patterns:\n"
        "        images.append(one(pattern))\n"
        "    return [prepare(x, batch_size) for x in images]\n"
    )
    # the stored pipeline is no demonstration (EC511 at 3); prefetch before batch (EC512 at 7)
    assert _audit(tmp_path, source)[0] == [("EC511", 3), ("EC512", 7)]


def test_a_factory_continues_the_pipeline_handed_to_it(tmp_path: Path) -> None:
    source = (
        "import tensorflow as tf\n"
        "def augment(ds: tf.data.Dataset):\n"
        "    return ds.map(lambda x: tf.image.random_flip_left_right(x))\n"
        "ds = tf.data.Dataset.list_files('*.jpg').map(load, num_parallel_calls=4)\n"
        "ds = augment(ds)\n"
        "model.fit(ds.batch(8).prefetch(1))\n"
    )
    assert _audit(tmp_path, source)[0] == [("EC511", 3)]
    report = analyze_file(tmp_path / "loader.py", "loader.py")
    [fitted] = [p for p in report.tf_pipelines if p["used_by"] == "fit"]
    assert fitted["source"] == "list_files"
    assert [op["op"] for op in fitted["operations"]] == ["map", "map", "batch", "prefetch"]


def test_a_tf1_iterator_reads_the_pipeline_it_is_not_an_operation(tmp_path: Path) -> None:
    source = (
        "import tensorflow.compat.v1 as tf\n"
        "ds = tf.data.TFRecordDataset('train.tfrecord').map(parse, num_parallel_calls=8)\n"
        "ds = ds.batch(64).prefetch(1)\n"
        "batch = ds.make_one_shot_iterator().get_next()\n"
    )
    assert _audit(tmp_path, source)[0] == []
    unprefetched = source.replace(".prefetch(1)", "")
    assert _audit(tmp_path, unprefetched)[0] == [("EC512", 2)]


@pytest.mark.parametrize(
    ("calls", "expected"),
    [
        ("", [("EC511", 6)]),  # no caller in the file: the default (1)
        ("r = Reader()\nmodel.fit(r.read('a', workers=1))\n", [("EC511", 6)]),
        ("r = Reader()\nmodel.fit(r.read('a', 4))\n", []),  # positional, after self
        ("r = Reader()\nmodel.fit(r.read('a', **options))\n", []),  # **kwargs: unknown
    ],
)
def test_method_parameters_follow_the_files_calls(
    tmp_path: Path, calls: str, expected: list[tuple[str, int]]
) -> None:
    source = (
        "import tensorflow as tf\n"
        "\n"
        "class Reader:\n"
        "    def read(self, pattern, workers=1):\n"
        "        ds = tf.data.Dataset.list_files(pattern)\n"
        "        ds = ds.map(tf.io.read_file, num_parallel_calls=workers)\n"
        "        return ds.batch(8).prefetch(1)\n"
    )
    assert _audit(tmp_path, source + calls)[0] == expected


def test_in_memory_tensors_only_batched_need_no_prefetch(tmp_path: Path) -> None:
    source = (
        "import tensorflow as tf\n"
        "(x, y), (xt, yt) = tf.keras.datasets.mnist.load_data()\n"
        "train_ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(10000).batch(32)\n"
        "test_ds = tf.data.Dataset.from_tensor_slices((xt, yt)).batch(32)\n"
        "model.fit(train_ds, validation_data=test_ds)\n"
    )
    assert _audit(tmp_path, source)[0] == []
    # a map over the slices (file names decoded per element) is real work to overlap
    mapped = source.replace(".shuffle(10000)", ".map(decode, num_parallel_calls=4)")
    assert _audit(tmp_path, mapped)[0] == [("EC512", 3)]


# A TFRecord reader built in a factory of the file over a dataset of paths: the sequential
# read is the reader's own line, found once, not at each call of the factory (one of them
# in an off-by-default branch); a map that only ensure_shape's and regroups is structural.
READER_IN_FACTORY = """\
import tensorflow as tf


def shapes(audio, onsets, weight):
    return audio, {"onset": tf.ensure_shape(onsets, (172, 88))}, {"onset": weight}


def records(file_generator):
    ds = tf.data.Dataset.from_generator(file_generator, output_types=tf.string)
    ds = tf.data.TFRecordDataset(ds)
    ds = ds.map(tf.io.parse_tensor, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.map(shapes)
    ds = ds.apply(tf.data.experimental.ignore_errors())
    return ds


def training(file_generator, pairs=False):
    single = records(file_generator)
    if pairs:
        paired = records(file_generator).batch(2)
        return tf.data.Dataset.choose_from_datasets([single, paired], tf.data.Dataset.range(2))
    return single.batch(8).prefetch(tf.data.AUTOTUNE)
"""


def test_reader_built_in_a_factory_is_found_at_the_reader(tmp_path: Path) -> None:
    found, messages = _audit(tmp_path, READER_IN_FACTORY)
    assert ("EC515", 10) in found
    assert [f for f in found if f[0] == "EC515"] == [("EC515", 10)]
    why = next(m["message"] for m in messages if m["id"] == "EC515")
    assert "over ds, a dataset of file names" in why
    assert ("EC511", 12) not in found  # ensure_shape and regrouping: structural
