"""tf.data pipelines misjudged on public code never seen before (issue 11, the TensorFlow
sweep and the fourth blind corpus). Each class is a snippet through the real analyser and
rules against an 8-GPU, 2-CPU Linux node, TensorFlow version unknown (so a serial map is
judged whatever its function does)."""

from __future__ import annotations

from pathlib import Path

from conftest import script_results

HEAD = """
import tensorflow as tf
from tensorflow import keras
"""


def lines(tmp_path: Path, source: str, rule: str) -> list[int]:
    result = script_results(tmp_path, HEAD + source, "train.py")[rule]
    return sorted(f.location.line for f in result.findings)


# Class 1: a map whose function visibly does only structural work is not worth EC511.

LABELS = """
neg = tf.data.TextLineDataset(["neg.txt"]).map(lambda review: (review, 0))
pos = tf.data.TextLineDataset(["pos.txt"]).map(lambda review: (review, 1))
train = pos.concatenate(neg).shuffle(25000).batch(32).prefetch(1)
model = keras.Sequential([keras.layers.Dense(1)])
model.fit(train, epochs=5)
"""


def test_label_attaching_lambda_is_not_a_serial_map(tmp_path: Path) -> None:
    assert lines(tmp_path, LABELS, "EC511") == []


NULL_INPUT = """
class ImageNetInput:
    def _get_null_input(self, data):
        del data
        return tf.zeros([224, 224, 3], tf.float32), tf.constant(0)

    def make_dataset(self):
        return tf.data.Dataset.range(1).repeat().map(self._get_null_input)

ds = ImageNetInput().make_dataset().batch(256).prefetch(tf.data.AUTOTUNE)
model = keras.applications.ResNet50(weights=None)
model.fit(ds, steps_per_epoch=100)
"""


def test_synthetic_null_input_method_is_not_a_serial_map(tmp_path: Path) -> None:
    assert lines(tmp_path, NULL_INPUT, "EC511") == []


STACKED = """
def check_integrity_and_batch(*frames):
    not_broken = tf.equal(frames[-1]["n"] - frames[0]["n"], 2)
    features = {}
    for key in frames[0].keys():
        features[key] = tf.stack([f[key] for f in frames])
    return features, not_broken

files = tf.data.TFRecordDataset(["a.tfrecord"])
ds = tf.data.Dataset.zip(tuple(files.skip(i) for i in range(3)))
ds = ds.map(check_integrity_and_batch)
ds = ds.map(lambda features, _: features).batch(8).prefetch(1)
model = keras.Sequential([keras.layers.Dense(1)])
model.fit(ds)
"""


def test_stacking_and_comparing_function_is_not_a_serial_map(tmp_path: Path) -> None:
    assert lines(tmp_path, STACKED, "EC511") == []


DECODING = """
def decode(record):
    return tf.image.resize(tf.io.decode_jpeg(record), [224, 224])

ds = tf.data.TFRecordDataset(["a.tfrecord"]).map(decode)
ds = ds.map(lambda x: helper(x)).batch(8).prefetch(1)
model = keras.Sequential([keras.layers.Dense(1)])
model.fit(ds)
"""


def test_decoding_or_out_of_sight_functions_stay_judged(tmp_path: Path) -> None:
    assert lines(tmp_path, DECODING, "EC511") == [8, 9]


SCALAR_ARITHMETIC = """
def increment(x):
    return x + 1

ds = tf.data.Dataset.range(1000).map(increment).batch(256).prefetch(1)
model = keras.Sequential([keras.layers.Dense(1)])
model.fit(ds)
"""


def test_arithmetic_on_the_element_stays_judged(tmp_path: Path) -> None:
    assert lines(tmp_path, SCALAR_ARITHMETIC, "EC511") == [8]


# Class 2: a pipeline built in a serving/export input function is not training input.

SERVING = """
class Problem:
    def decode_example(self, serialized):
        return tf.io.parse_single_example(serialized, {"x": tf.io.FixedLenFeature([], tf.string)})

    def serving_input_fn(self, hparams):
        serialized_example = tf.compat.v1.placeholder(dtype=tf.string, shape=[None])
        dataset = tf.data.Dataset.from_tensor_slices(serialized_example)
        dataset = dataset.map(self.decode_example)
        dataset = dataset.map(lambda ex: preprocess(ex, hparams))
        features = tf.compat.v1.data.make_one_shot_iterator(dataset.batch(8)).get_next()
        return tf.estimator.export.ServingInputReceiver(features, serialized_example)
"""


def test_serving_input_fn_pipelines_are_not_judged(tmp_path: Path) -> None:
    assert lines(tmp_path, SERVING, "EC511") == []
    assert lines(tmp_path, SERVING, "EC512") == []


# Class 6: a loop over `enumerate(ds)` (or `tqdm(ds)`, `zip(a, b)`) consumes `ds`.

ENUMERATED = """
def decode(path):
    return tf.image.resize(tf.io.decode_jpeg(tf.io.read_file(path)), (224, 224))

train = tf.data.Dataset.list_files("data/*.jpg").map(decode, num_parallel_calls=8).batch(64)
model = keras.applications.ResNet50(weights=None)
for epoch in range(90):
    for step, images in enumerate(train):
        loss = tf.reduce_mean(model(images, training=True))
"""


def test_loop_over_enumerate_consumes_the_pipeline(tmp_path: Path) -> None:
    assert lines(tmp_path, ENUMERATED, "EC512") == [8]


LOOKED_AT = """
dataset = tf.data.Dataset.list_files("data/*.jpg").map(tf.io.read_file)
for i, element in enumerate(dataset):
    print(element.shape)
    if i >= 2:
        break
"""


def test_loop_over_enumerate_that_only_prints_is_a_look(tmp_path: Path) -> None:
    assert lines(tmp_path, LOOKED_AT, "EC512") == []


# Class 7: `ds.prefetch(n)` as a statement of its own leaves `ds` without a prefetch.

DISCARDED = """
class Trainer:
    def __init__(self, training_dataset, batch_size=32, prefetch_size=None):
        training_dataset = training_dataset.shard(num_shards=8, index=0).batch(batch_size)
        training_dataset.prefetch(buffer_size=prefetch_size)
        iterator = training_dataset.make_one_shot_iterator()
        self.features = iterator.get_next()
"""


def test_discarded_prefetch_is_found_where_it_is_thrown_away(tmp_path: Path) -> None:
    assert lines(tmp_path, DISCARDED, "EC512") == [8]


# Class 3: a pipeline only printed by a loop (`for x in ds: print(x)`, `ds.take(5)`) is a
# demonstration, not training input.

DEMO = """
dataset = tf.data.TFRecordDataset(["my_contacts.tfrecord"]).batch(10)
for serialized_examples in dataset:
    print(serialized_examples)

ds2 = tf.data.Dataset.list_files("data/*.csv").interleave(
    lambda f: tf.data.TextLineDataset(f).skip(1), cycle_length=5)
for line in ds2.take(5):
    print(line.numpy())
"""


def test_pipelines_only_printed_by_a_loop_are_demonstrations(tmp_path: Path) -> None:
    assert lines(tmp_path, DEMO, "EC511") == []
    assert lines(tmp_path, DEMO, "EC512") == []


# Class 5: `tfds.load(...)` returns a tf.data pipeline: a lone `ds = ds.map(f)` on it counts.

TFDS = """
import tensorflow_datasets as tfds

def augment(image, label):
    image = tf.image.resize(image, (224, 224))
    return tf.image.random_flip_left_right(image), label

train_ds = tfds.load("tf_flowers", split="train", as_supervised=True)
train_ds = train_ds.map(augment)
train_ds = train_ds.batch(32).prefetch(tf.data.AUTOTUNE)
model = keras.applications.ResNet50(weights=None, classes=5)
model.fit(train_ds, epochs=10)
"""


def test_map_alone_on_tfds_load_is_judged(tmp_path: Path) -> None:
    assert lines(tmp_path, TFDS, "EC511") == [12]


def test_a_map_cached_after_shuffle_and_batch_runs_once(tmp_path: Path) -> None:
    """`ds.map(f).shuffle(n).batch(b).cache()`: the cache holds the mapped batches, so f
    runs in the first epoch only, as for `ds.map(f).cache()` (Sonnet's MNIST example)."""
    source = """
import tensorflow as tf
import tensorflow_datasets as tfds

def preprocess(images, labels):
    return tf.image.resize(images, (32, 32)) / 255.0, labels

dataset = tfds.load(name="mnist", split="train", as_supervised=True)
dataset = dataset.map(preprocess)
dataset = dataset.shuffle(buffer_size=4096)
dataset = dataset.batch(100)
dataset = dataset.cache()
dataset = dataset.prefetch(tf.data.AUTOTUNE)
model.fit(dataset, epochs=10)
"""
    assert script_results(tmp_path, source, "train.py")["EC511"].status.value == "pass"


def test_a_map_before_repeat_then_cache_is_still_judged(tmp_path: Path) -> None:
    """A cache after `repeat()` never completes: the map runs in every epoch."""
    source = """
import tensorflow as tf

dataset = tf.data.TFRecordDataset(files)
dataset = dataset.map(lambda r: tf.io.decode_jpeg(r))
dataset = dataset.repeat()
dataset = dataset.cache()
dataset = dataset.batch(100).prefetch(tf.data.AUTOTUNE)
model.fit(dataset, epochs=10, steps_per_epoch=100)
"""
    assert script_results(tmp_path, source, "train.py")["EC511"].status.value == "fail"
