"""Keras and TensorFlow training-loop mistakes found on blind public code (issue 11).

Each test is a snippet of one class of mistake, run through the real analyser and rules
against an 8 x A100, 2-CPU Linux node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import run_results, script_results


def lines(result: Any) -> list[int]:
    return sorted(f.location.line for f in result.findings)


SKLEARN_FIRST = """
from sklearn.preprocessing import StandardScaler
from tensorflow import keras

scaler = StandardScaler()
scaler.fit(X_train)
datagen = keras.preprocessing.image.ImageDataGenerator(featurewise_center=True)
datagen.fit(X_train)
model = keras.Sequential([keras.layers.Dense(256, activation="relu"), keras.layers.Dense(1)])
model.compile(loss="mse", optimizer="adam")
model.fit(scaler.transform(X_train), y_train, epochs=10)
"""


def test_ec522_quotes_the_model_fit_not_a_scaler_or_image_generator(tmp_path: Path) -> None:
    result = script_results(tmp_path, SKLEARN_FIRST, "train.py")["EC522"]
    assert [f.location.code for f in result.findings] == [
        "model.fit(scaler.transform(X_train), y_train, epochs=10)"
    ]


EAGER_METHOD_STEP = """
import tensorflow as tf


class Seq2Seq:
    def train_step(self, x, y):
        with tf.GradientTape() as tape:
            loss = self.loss_function(y, self.model(x))
        gradients = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(gradients, self.model.trainable_variables))
        return loss

    def fit(self, dataset, epochs=5):
        for epoch in range(epochs):
            total_loss = []
            for x, y in dataset:
                batch_loss = self.train_step(x, y)
                total_loss.append(batch_loss.numpy())
                print(f"Batch Loss: {batch_loss:.4f}")
"""


def test_ec509_reads_what_an_eager_step_method_returns_in_the_loop(tmp_path: Path) -> None:
    result = script_results(tmp_path, EAGER_METHOD_STEP, "seq2seq.py")["EC509"]
    assert lines(result) == [18, 19]


ENSEMBLE = """
import warnings
from tensorflow.keras.utils import Sequence


class Ensemble:
    def fit(self, generator, epochs=1, workers=1, use_multiprocessing=False):
        if not isinstance(generator, Sequence):
            raise ValueError("generator must be a Sequence")
        for model in self.models:
            model.fit(generator, epochs=epochs, workers=workers,
                      use_multiprocessing=use_multiprocessing)

    def fit_generator(self, *args, **kwargs):
        warnings.warn("use fit", DeprecationWarning)
        return self.fit(*args, **kwargs)

    def predict(self, generator, data, workers=1, use_multiprocessing=False):
        flow = generator.flow(data)
        return [m.predict(flow, workers=workers, use_multiprocessing=use_multiprocessing)
                for m in self.models]


class Bagging(Ensemble):
    def fit(self, generator, data, workers=1, use_multiprocessing=False):
        for model in self.models:
            model.fit(generator.flow(data), workers=workers,
                      use_multiprocessing=use_multiprocessing)
"""


def test_ec517_reads_library_worker_parameters_at_their_default(tmp_path: Path) -> None:
    result = script_results(tmp_path, ENSEMBLE, "ensemble.py")["EC517"]
    assert lines(result) == [11, 20, 27]


def test_ec517_worker_parameter_raised_by_a_caller_is_not_flagged(tmp_path: Path) -> None:
    source = ENSEMBLE + "\nBagging().fit(gen, data, workers=8)\nEnsemble().fit(gen, workers=8)\n"
    source += "Ensemble().predict(gen, data, workers=8)\n"
    result = script_results(tmp_path, source, "ensemble.py")["EC517"]
    assert lines(result) == []


RAW_OPS = """
import tensorflow as tf

w1 = tf.Variable(tf.random.normal([5, 5, 1, 32]))
w2 = tf.Variable(tf.random.normal([14 * 14 * 32, 10]))
optimizer = tf.optimizers.Adam(0.001)
for x, y in train_data.take(2000):
    with tf.GradientTape() as tape:
        h = tf.nn.relu(tf.nn.conv2d(tf.reshape(x, [-1, 28, 28, 1]), w1, 1, "SAME"))
        h = tf.nn.max_pool2d(h, 2, 2, "SAME")
        logits = tf.matmul(tf.reshape(h, [-1, 14 * 14 * 32]), w2)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
    grads = tape.gradient(loss, [w1, w2])
    optimizer.apply_gradients(zip(grads, [w1, w2]))
"""


def test_ec522_leaves_raw_tensorflow_ops_alone(tmp_path: Path) -> None:
    """tf.nn.conv2d on the script's own tf.Variables: a Keras policy casts nothing here."""
    result = script_results(tmp_path, RAW_OPS, "raw.py")["EC522"]
    assert not result.findings


def test_ec522_still_flags_a_custom_loop_over_keras_layers(tmp_path: Path) -> None:
    source = RAW_OPS.replace(
        "w1 = tf.Variable", "model = tf.keras.layers.Conv2D(64, 3)\nw1 = tf.Variable"
    )
    result = script_results(tmp_path, source, "raw.py")["EC522"]
    assert len(result.findings) == 1


COUNTER = """
import tensorflow as tf

ckpt = tf.train.Checkpoint(step=tf.Variable(0), model=model, optimizer=optimizer)
steps = tf.Variable(0, dtype=tf.int64)


@tf.function
def train_step(lr, hr):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.abs(hr - model(lr, training=True)))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for lr, hr in train_dataset.take(300000):
    ckpt.step.assign_add(1)
    step = ckpt.step.numpy()
    steps.assign_add(1)
    total = steps.numpy()
    loss = train_step(lr, hr)
    if step % 1000 == 0:
        print(step, loss.numpy())
"""


def test_ec509_leaves_an_int32_step_counter_alone(tmp_path: Path) -> None:
    """An int32 tf.Variable lives in host memory: reading it waits for no GPU work; an
    int64 one lives on the GPU and is still reported."""
    result = script_results(tmp_path, COUNTER, "train.py")["EC509"]
    assert lines(result) == [21]


NETS = """
from tensorflow import keras

class Generator(keras.Model):
    def __init__(self):
        super().__init__()
        self.fc = keras.layers.Dense(7 * 7 * 128)
        self.up = keras.layers.Conv2DTranspose(64, 5, strides=2, padding="same")

    def call(self, x, training=False):
        return self.up(keras.layers.Reshape((7, 7, 128))(self.fc(x)))
"""
MAIN = """
import tensorflow as tf
from nets import Generator

generator = Generator()
optimizer = tf.keras.optimizers.Adam(2e-4)
for step in range(100000):
    z = tf.random.normal([128, 100])
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(generator(z, training=True))
    grads = tape.gradient(loss, generator.trainable_variables)
    optimizer.apply_gradients(zip(grads, generator.trainable_variables))
"""
TRAIN = """
import tensorflow as tf
from absl import flags
import train_lib
flags.DEFINE_string("precision", "mixed_float16", "float32, mixed_float16 or mixed_bfloat16")
FLAGS = flags.FLAGS

def main(_):
    tf.keras.mixed_precision.set_global_policy(FLAGS.precision)
    train_lib.run()
"""
TRAIN_LIB = """
import tensorflow as tf

def run():
    model = tf.keras.Sequential([tf.keras.layers.Conv2D(64, 3), tf.keras.layers.Dense(10)])
    optimizer = tf.keras.optimizers.SGD(0.1)
    for images, labels in tf.data.Dataset.range(10):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(images))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""


def test_ec522_model_built_in_an_imported_file_of_the_run(tmp_path: Path) -> None:
    result = run_results(tmp_path, {"nets.py": NETS, "main.py": MAIN})["EC522"]
    assert [f.location.path.rsplit("/", 1)[-1] for f in result.findings] == ["main.py"]


def test_ec522_policy_set_by_the_file_that_imports_the_trainer(tmp_path: Path) -> None:
    result = run_results(tmp_path, {"train.py": TRAIN, "train_lib.py": TRAIN_LIB})["EC522"]
    assert not result.findings


def test_ec522_unrelated_files_of_a_run_do_not_share_a_policy(tmp_path: Path) -> None:
    other = TRAIN.replace("import train_lib\n", "").replace("    train_lib.run()\n", "")
    result = run_results(tmp_path, {"other.py": other, "train_lib.py": TRAIN_LIB})["EC522"]
    assert len(result.findings) == 1


def test_ec509_still_reports_a_counter_the_step_advances(tmp_path: Path) -> None:
    source = COUNTER.replace(
        "    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n",
        "    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n"
        "    ckpt.step.assign_add(1)\n",
    ).replace("    ckpt.step.assign_add(1)\n    step =", "    step =")
    result = script_results(tmp_path, source, "train.py")["EC509"]
    assert lines(result) == [19, 21]
