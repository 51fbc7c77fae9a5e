"""Keras and TensorFlow training-loop mistakes found on blind public code (issue 11).

Each test is a snippet of one class of mistake, run through the real analyser and rules
against an 8 x A100, 2-CPU Linux node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
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


TF1_SESSION = """
import tensorflow as tf

from model import yolov3

is_training = tf.placeholder(tf.bool, name="phase_train")
yolo_model = yolov3(80, anchors)
with tf.variable_scope("yolov3"):
    pred = yolo_model.forward(image, is_training=is_training)
loss = yolo_model.compute_loss(pred, y_true)
optimizer = tf.train.AdamOptimizer(1e-4)
gvs = optimizer.compute_gradients(loss[0])
train_op = optimizer.apply_gradients(gvs, global_step=global_step)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(1000):
        _, loss_ = sess.run([train_op, loss], feed_dict={is_training: True})
"""


def test_ec522_leaves_a_tf1_session_graph_alone(tmp_path: Path) -> None:
    """A TF1 graph (a slim YOLOv3 of the project) whose train op a session runs: no Keras
    policy casts it (wizyoung's YOLOv3_TensorFlow)."""
    result = script_results(tmp_path, TF1_SESSION, "train.py")["EC522"]
    assert not result.findings
    attribute = TF1_SESSION.replace("train_op", "self.train_op").replace(
        "[self.train_op, loss]", "model.train_op"
    )
    result = script_results(tmp_path, attribute, "train.py")["EC522"]
    assert not result.findings


def test_ec522_still_flags_an_eager_loop_of_a_project_model(tmp_path: Path) -> None:
    source = TF1_SESSION.split("is_training =")[0] + (
        "model = yolov3(80, anchors)\n"
        "optimizer = tf.keras.optimizers.Adam(1e-4)\n"
        "for x, y in dataset:\n"
        "    with tf.GradientTape() as tape:\n"
        "        loss = model.compute_loss(model(x), y)\n"
        "    grads = tape.gradient(loss, model.trainable_variables)\n"
        "    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n"
    )
    result = script_results(tmp_path, source, "train.py")["EC522"]
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


def test_ec509_leaves_an_int32_counter_read_through_a_local_alias_alone(tmp_path: Path) -> None:
    """esrgan-tf2-style `ckpt = self.checkpoint` then `ckpt.step.numpy()`: the alias holds
    the same host-memory counter."""
    source = COUNTER.replace("ckpt = tf.train.Checkpoint(", "checkpoint = tf.train.Checkpoint(")
    source = source.replace("for lr, hr in", "ckpt = checkpoint\nfor lr, hr in")
    assert lines(script_results(tmp_path, source, "train.py")["EC509"]) == [22]


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


def test_files_of_a_flattened_copy_are_linked_by_their_imports(tmp_path: Path) -> None:
    """`repo__train.py` and `repo__src_train_lib.py`, a project copied flat (as corpora
    and uploads name files): `import train_lib` still links them, within one project."""
    files = {"repo__train.py": TRAIN, "repo__src_train_lib.py": TRAIN_LIB}
    assert not run_results(tmp_path / "same", files)["EC522"].findings
    files = {"repo__train.py": TRAIN, "other__src_train_lib.py": TRAIN_LIB}
    assert len(run_results(tmp_path / "apart", files)["EC522"].findings) == 1


def test_a_dotted_import_links_the_module_it_ends_in(tmp_path: Path) -> None:
    """`from pkg.train_lib import run` links train.py to pkg/train_lib.py (the module a
    dotted path ends in), not only to a file named after `pkg`."""
    train = TRAIN.replace("import train_lib\n", "from pkg.train_lib import run\n")
    train = train.replace("    train_lib.run()", "    run()")
    result = run_results(tmp_path, {"train.py": train, "pkg/train_lib.py": TRAIN_LIB})["EC522"]
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


# A library trainer that runs Model.fit (TF-GNN's runner.KerasTrainer) trains the file's
# Keras model: float32 unless its options carry a mixed-precision policy.

GNN_TRAINER = """
import tensorflow as tf
from tensorflow_gnn import runner


def model_fn(graph_spec):
    inputs = tf.keras.layers.Input(type_spec=graph_spec)
    return tf.keras.Model(inputs, tf.keras.layers.Dense(256)(inputs))


trainer = runner.KerasTrainer(
    strategy=tf.distribute.MirroredStrategy(), model_dir="/tmp/model"{options})
runner.run(model_fn=model_fn, trainer=trainer, epochs=10)
"""


def test_a_library_trainer_that_runs_fit_trains_in_float32(tmp_path: Path) -> None:
    result = script_results(tmp_path, GNN_TRAINER.format(options=""), "train.py")["EC522"]
    assert lines(result) == [11]
    mixed = ',\n    options=runner.KerasTrainerOptions(policy="mixed_bfloat16")'
    result = script_results(tmp_path, GNN_TRAINER.format(options=mixed), "train.py")["EC522"]
    assert lines(result) == []


# A Keras model built by a function of the file's own package (`from .model import
# build`) and compiled here is trained by this file, its layers out of sight.

PACKAGE_MODEL = """
import tensorflow as tf
from .model import textgen_model


class TextGen:
    def __init__(self, num_classes):
        self.model = textgen_model(num_classes)

    def train(self, generator, steps):
        self.model.compile(loss="categorical_crossentropy", optimizer="adam")
        self.model.fit(generator, steps_per_epoch=steps, epochs=50)
"""


def test_a_model_built_by_the_package_and_compiled_here_trains(tmp_path: Path) -> None:
    result = script_results(tmp_path, PACKAGE_MODEL, "textgen.py")["EC522"]
    assert lines(result) == [12]


def test_a_model_of_the_project_by_absolute_import_compiled_here_trains(tmp_path: Path) -> None:
    """arcface-tf2's `from modules.models import ArcFaceModel`, compiled and fitted: the
    project's package imported absolutely, as `from .models import` is."""
    source = PACKAGE_MODEL.replace("from .model import", "from modules.model import")
    assert lines(script_results(tmp_path, source, "textgen.py")["EC522"]) == [12]


def test_fit_alone_on_an_absolute_import_is_no_keras_model(tmp_path: Path) -> None:
    """AutoKeras's `pipeline.fit((x, y))`: a preprocessing pipeline of the package, fitted
    with none of Keras' fit keywords and never compiled, is no Keras model; nor is a model
    of the standard library's."""
    source = PACKAGE_MODEL.replace("from .model import", "from modules.model import")
    source = source.replace(
        '        self.model.compile(loss="categorical_crossentropy", optimizer="adam")\n', ""
    ).replace(
        "self.model.fit(generator, steps_per_epoch=steps, epochs=50)", "self.model.fit((x, y))"
    )
    assert lines(script_results(tmp_path / "fit", source, "textgen.py")["EC522"]) == []
    library = PACKAGE_MODEL.replace("from .model import", "from keras_hub.model import")
    assert lines(script_results(tmp_path / "lib", library, "textgen.py")["EC522"]) == []


# The script is the entry point that builds a model with a builder of the project's
# package (`from src.model import build_autoencoder`, compiled inside the builder) and
# fits it with Keras' keywords (`epochs=`, `callbacks=`): a Keras model of the project,
# trained here. So is one picked from a dict of the package's builders
# (`{"ResNet20": resnet.resnet20}[name](...)`). A model handed in as a parameter is not.

BUILT_AND_FITTED = """
import tensorflow as tf
from src.model import build_autoencoder

def main(args):
    model = build_autoencoder(input_shape=(256, 256, 3), base_filters=32)
    model.fit(train_gen, validation_data=val_gen, epochs=args.epochs)
"""

PICKED = """
import keras

def train(model_name, train_dataset):
    import resnet_conv4
    model_functions = {"ResNet20": resnet_conv4.resnet20, "ResNet56": resnet_conv4.resnet56}
    model = model_functions[model_name](input_shape=(32, 32, 3), num_classes=10)
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    model.fit(train_dataset, epochs=200)
"""

HANDED = """
import tensorflow as tf
from src.model import build_autoencoder

def train_model(model, train_gen, epochs):
    model.compile(optimizer="adam", loss="mse")
    model.fit(train_gen, epochs=epochs)
"""


def test_a_project_builder_fitted_by_the_entry_point_trains(tmp_path: Path) -> None:
    assert lines(script_results(tmp_path / "built", BUILT_AND_FITTED, "train.py")["EC522"]) == [7]
    assert lines(script_results(tmp_path / "picked", PICKED, "train.py")["EC522"]) == [9]
    assert lines(script_results(tmp_path / "handed", HANDED, "train.py")["EC522"]) == []


# EC522 on toy Keras networks, TF-Hub bodies and models named out of sight (sweep-tf).

RL_AGENT = """
import gym
import tensorflow as tf
from tensorflow.keras.layers import Dense, Input

tf.keras.backend.set_floatx("float64")
env = gym.make("CartPole-v1")
action_dim = env.action_space.n
model = tf.keras.Sequential([
    Input((4,)),
    Dense(WIDTH, activation="relu"),
    Dense(16, activation="relu"),
    Dense(action_dim),
])
model.compile(loss="mse", optimizer="adam")
model.fit(states, targets, epochs=1)
"""


@pytest.mark.parametrize(("width", "found"), [("64", []), ("128", []), ("256", [16])])
def test_ec522_a_toy_agent_whose_last_width_comes_from_the_environment(
    tmp_path: Path, width: str, found: list[int]
) -> None:
    """Dense(64) -> Dense(16) -> Dense(action_dim): a 16 x action_dim last matrix, the
    widths in sight at most 128 as for PyTorch's toy MLPs (EC508); a 256-wide layer is
    no toy's."""
    result = script_results(tmp_path, RL_AGENT.replace("WIDTH", width), "dqn.py")["EC522"]
    assert lines(result) == found


def test_ec522_names_the_float64_a_file_sets(tmp_path: Path) -> None:
    source = RL_AGENT.replace("WIDTH", "64").replace(
        "    Input((4,)),\n", "    Input((84, 84, 4)),\n    tf.keras.layers.Conv2D(32, 8),\n"
    )
    (finding,) = script_results(tmp_path, source, "dqn.py")["EC522"].findings
    assert "trains them with Keras in float64" in finding.message
    half = source.replace('"float64"', '"float16"')
    assert not script_results(tmp_path, half, "dqn.py")["EC522"].findings


HUB_BODY = """
import tensorflow as tf
import tensorflow_hub as hub

encoder = hub.KerasLayer("https://tfhub.dev/google/bit/m-r50x1/1", trainable=True)
model = tf.keras.Sequential([encoder, tf.keras.layers.Dense(NUM_CLASSES)])
model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
model.fit(train, epochs=10)
"""


def test_ec522_a_tf_hub_savedmodel_body_is_not_helped_by_a_policy(tmp_path: Path) -> None:
    """The policy casts Keras layers only; the hub body stays float32 (tensorflow/hub#466)."""
    result = script_results(tmp_path, HUB_BODY, "colab.py")["EC522"]
    assert result.status.value == "unknown"
    assert "tensorflow/hub/issues/466" in result.reason
    own = HUB_BODY.replace("[encoder, ", "[encoder, tf.keras.layers.Conv2D(64, 3), ")
    assert lines(script_results(tmp_path, own, "colab.py")["EC522"]) == [8]


NAMED_MODELS = """
import tensorflow as tf
from tensorflow.keras import applications
from model import efficientdet

model = BUILT
model.compile(optimizer="adam", loss="mse")
model.fit(train_generator, epochs=50)
"""


@pytest.mark.parametrize(
    "built", ["efficientdet(0, num_classes=20)[0]", "getattr(applications, args.model)()"]
)
def test_ec522_a_model_named_out_of_sight(tmp_path: Path, built: str) -> None:
    """The project's `efficientdet(...)` and a keras.applications model picked by name."""
    source = NAMED_MODELS.replace("BUILT", built)
    assert lines(script_results(tmp_path, source, "train.py")["EC522"]) == [8]


EVALUATE_GENERATOR = """
import cv2
from tensorflow import keras


class Batches(keras.utils.Sequence):
    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        return cv2.imread(self.paths[i])[None], 0


model = keras.models.load_model("model.h5")
model.fit_generator(Batches(train_paths), epochs=40, workers=4, use_multiprocessing=True)
scores = model.evaluate_generator(Batches(test_paths))
predictions = model.predict_generator(Batches(test_paths), workers=4)
"""


def test_ec517_judges_the_legacy_evaluate_and_predict_generators(tmp_path: Path) -> None:
    """evaluate_generator/predict_generator take workers as fit_generator does: one
    loader thread by default (sweep-tf class L)."""
    result = script_results(tmp_path, EVALUATE_GENERATOR, "notebook.py")["EC517"]
    assert lines(result) == [16]


# EC522/EC518 on the sweep of TF/Keras code (sweep-tf2).
SMALL_RNN = """
from tensorflow import keras

inputs = keras.layers.Input(shape=(120, 7))
h = keras.layers.Conv1D(32, 3)(inputs)
h = keras.layers.LSTM(UNITS)(h)
h = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)(h, h)
outputs = keras.layers.Dense(1)(h)
model = keras.Model(inputs, outputs)
model.compile(optimizer="adam", loss="mse")
model.fit(ds, epochs=10)
"""


def test_ec522_a_small_rnn_on_a_short_series_is_a_toy(tmp_path: Path) -> None:
    result = script_results(tmp_path, SMALL_RNN.replace("UNITS", "32"), "series.py")["EC522"]
    assert not result.findings
    wide = SMALL_RNN.replace("UNITS", "512")
    assert lines(script_results(tmp_path, wide, "series.py")["EC522"]) == [11]


TRAIN_ON_BATCH = """
from tensorflow.keras.layers import Conv2D, Dense, Flatten
from tensorflow.keras.models import Sequential

disc = Sequential([Conv2D(64, 3, input_shape=(28, 28, 1)), Flatten(), Dense(1)])
disc.compile(loss="binary_crossentropy", optimizer="adam")
for step in range(5000):
    d_loss = disc.train_on_batch(X[idx], y)
"""


def test_ec522_train_on_batch_is_training(tmp_path: Path) -> None:
    assert lines(script_results(tmp_path, TRAIN_ON_BATCH, "gan.py")["EC522"]) == [8]


PARTIAL_IN_BUILDER = """
import functools
import tensorflow as tf


def make_classifier(n_filters=32):
    Conv2D = functools.partial(tf.keras.layers.Conv2D, padding="same")
    return tf.keras.Sequential([Conv2D(filters=n_filters, kernel_size=5)])


model = make_classifier()
model.compile(loss="mse", optimizer="adam")
model.fit(x, y)
"""


def test_ec522_sees_a_partial_layer_alias_bound_in_the_builder(tmp_path: Path) -> None:
    assert lines(script_results(tmp_path, PARTIAL_IN_BUILDER, "debias.py")["EC522"]) == [13]


STANDALONE_PREPROCESSING = """
import tensorflow as tf
from keras_preprocessing.image import ImageDataGenerator

datagen = ImageDataGenerator(rescale=1.0 / 255)
train = datagen.flow_from_directory("data/train", target_size=(256, 256))
"""


def test_ec518_standalone_keras_preprocessing_is_reported_where_built(tmp_path: Path) -> None:
    result = script_results(tmp_path, STANDALONE_PREPROCESSING, "cnn.py")["EC518"]
    assert lines(result) == [5]


POLICY_BY_KEYWORD = """
import tensorflow as tf
from tensorflow.keras import mixed_precision

mixed_precision.set_global_policy(policy="mixed_float16")
model = tf.keras.applications.EfficientNetB0()
model.compile(loss="sparse_categorical_crossentropy", optimizer="adam")
model.fit(x, y, epochs=3)
"""


def test_ec522_reads_a_policy_passed_by_keyword(tmp_path: Path) -> None:
    result = script_results(tmp_path, POLICY_BY_KEYWORD, "food.py")["EC522"]
    assert result.status.value == "pass"


RL_NAMED_POLICY = """
import gym
import tensorflow as tf
from agents import PolicyMLP

env = gym.make("CartPole-v1")
actor = PolicyMLP(env.action_space.n)
opt = tf.keras.optimizers.Adam(3e-4)
with tf.GradientTape() as tape:
    loss = tf.reduce_mean(actor(obs))
grads = tape.gradient(loss, actor.trainable_variables)
opt.apply_gradients(zip(grads, actor.trainable_variables))
"""


def test_ec522_an_rl_agent_known_by_name_only_is_unknown(tmp_path: Path) -> None:
    result = script_results(tmp_path, RL_NAMED_POLICY, "agent.py")["EC522"]
    assert not result.findings and "reinforcement-learning" in result.reason


TEXT_CNN = """
from tensorflow.keras import layers, Model, Input

inputs = Input(shape=(None,), dtype="int64")
x = layers.Embedding(20000, 128)(inputs)
x = layers.Conv1D(128, 7, strides=3)(x)
x = layers.Conv1D(128, 7, strides=3)(x)
x = layers.Dense(128)(layers.GlobalMaxPooling1D()(x))
model = Model(inputs, layers.Dense(1)(x))
model.compile(loss="binary_crossentropy", optimizer="adam")
model.fit(train_ds, epochs=3)
"""


def test_ec522_a_conv1d_reads_its_kernel_times_the_width_before(tmp_path: Path) -> None:
    assert lines(script_results(tmp_path, TEXT_CNN, "text.py")["EC522"]) == [11]


LINEAR_PROBE_TRAINER = """
from tensorflow import keras


class ContrastiveTrainer(keras.Model):
    def __init__(self, encoder, projector, probe=None):
        super().__init__()
        self.encoder = encoder
        self.projector = projector
        self.probe = probe

    def fit(self, x, **kwargs):
        return super().fit(x=x, **kwargs)

    @staticmethod
    def linear_probe(num_classes, **kwargs):
        return keras.Sequential(keras.layers.Dense(num_classes), **kwargs)
"""


def test_ec522_a_lone_dense_head_on_the_callers_model_is_not_the_model(tmp_path: Path) -> None:
    """A trainer whose only Keras layer is one `Dense` head of a width the source does not
    show (`Dense(num_classes)`, a DQN's dueling `Dense(nb_action + 1)`) on a model the
    caller hands in: the model's compute is out of sight, no float32 finding; a head of
    a width in sight, or beside a body of its own, is still judged."""
    found = script_results(tmp_path, LINEAR_PROBE_TRAINER, "trainer.py")["EC522"]
    assert found.status.value == "pass"
    source = LINEAR_PROBE_TRAINER.replace(
        "keras.layers.Dense(num_classes)",
        "keras.layers.Conv2D(64, 3), keras.layers.Dense(num_classes)",
    )
    assert script_results(tmp_path, source, "trainer.py")["EC522"].status.value == "fail"
    source = LINEAR_PROBE_TRAINER.replace(
        "keras.layers.Dense(num_classes)",
        "keras.layers.Dense(1024), keras.layers.Dense(num_classes)",
    )
    assert script_results(tmp_path, source, "trainer.py")["EC522"].status.value == "fail"


HEAD_TRAINER = """
from tensorflow import keras


class Train:
    def __init__(self, basic_model, classes, teacher_emb_size=0):
        self.basic_model = basic_model
        self.classes = classes
        inputs = basic_model.inputs[0]
        logits = keras.layers.Dense(classes, use_bias=False)(basic_model.outputs[0])
        output = keras.layers.Activation("softmax", dtype="float32")(logits)
        if teacher_emb_size:
            emb = keras.layers.Dense(teacher_emb_size, use_bias=False, dtype="float32")
            output = [emb(basic_model.outputs[0]), output]
        self.model = keras.models.Model(inputs, output)

    def train(self, dataset, epochs):
        self.model.compile(optimizer="adam", loss="categorical_crossentropy")
        self.model.fit(dataset, epochs=epochs)
"""


def test_ec522_float32_heads_added_to_a_backbone_handed_in(tmp_path: Path) -> None:
    """A library trainer adding two heads of unseen width (a classifier, an embedding map)
    to the backbone it is handed, its output kept in float32 (`dtype="float32"`, written
    for a mixed policy its caller sets): the model's compute is out of sight, no finding.
    The same two heads without a float32 output are still judged (a small model of its
    own)."""
    found = script_results(tmp_path, HEAD_TRAINER, "train.py")["EC522"]
    assert found.status.value == "pass"
    source = HEAD_TRAINER.replace(', dtype="float32"', "")
    assert script_results(tmp_path, source, "train.py")["EC522"].status.value == "fail"


POINTNET_LOOP = """
import tensorflow as tf
from tensorflow_graphics.nn.layer import pointnet

optimizer = tf.keras.optimizers.Adam(learning_rate=1e-3)
model = pointnet.PointNetVanillaClassifier(num_classes=40, momentum=0.5)


@tf.function
def train_step(points, label):
    with tf.GradientTape() as tape:
        logits = model(points, training=True)
        loss = model.loss(label, logits)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss
"""


def test_ec522_a_pointnet_of_the_project_is_a_model_of_convolutions(tmp_path: Path) -> None:
    """`pointnet.PointNetVanillaClassifier(...)` trained in a GradientTape loop: PointNet's
    shared per-point MLPs are 1x1 convolutions, a named architecture as `YoloV3(...)` is,
    trained in float32."""
    found = script_results(tmp_path, POINTNET_LOOP, "train.py")["EC522"]
    assert found.status.value == "fail"


KERAS_FROM_LOADER = """
from csbdeep.utils.tf import keras_import, IS_TF_1

keras = keras_import()
Input, Conv2D = keras_import("layers", "Input", "Conv2D")
Model = keras_import("models", "Model")


class StarDist2D:
    def _build(self):
        x = Input((None, None, 1))
        y = Conv2D(128, 3, padding="same")(x)
        return Model(x, Conv2D(32, 1)(y))

    def train(self, data, epochs=400):
        self.keras_model = self._build()
        self.keras_model.compile(optimizer="adam", loss="mse")
        fit = self.keras_model.fit_generator if IS_TF_1 else self.keras_model.fit
        return fit(iter(data), epochs=epochs)
"""


def test_ec522_keras_from_a_loader_and_fit_picked_by_version(tmp_path: Path) -> None:
    """StarDist takes Keras from csbdeep's `keras = keras_import()` (tensorflow.keras or
    standalone keras) and calls `fit = model.fit_generator if IS_TF_1 else model.fit`:
    a U-Net of Conv2D trained with Keras fit in float32."""
    found = script_results(tmp_path, KERAS_FROM_LOADER, "model2d.py")["EC522"]
    assert found.status.value == "fail"
    assert lines(found) == [19]


DATASET_WRAPPER = """
import tensorflow as tf


class DeepModel:
    def fit(self, X, y, epochs=1, workers=1, use_multiprocessing=False):
        train_data = self._train_data(X, y).repeat(count=epochs)
        if self.strategy is not None:
            train_data = train_data.with_options(tf.data.Options())
        return self.model.fit(train_data, epochs=epochs, workers=workers,
                              use_multiprocessing=use_multiprocessing)

    def _train_data(self, X, y):
        return to_dataset(X, y)
"""


def test_ec517_worker_settings_forwarded_beside_a_tf_data_input(tmp_path: Path) -> None:
    """A wrapper's `fit(..., workers=1)` forwards the worker settings to Keras fit given a
    tf.data pipeline (`..._train_data(X, y).repeat(count=epochs)`): Keras ignores them
    for a dataset, and they say nothing of the input; the same settings beside an input
    the source does not show still mean a generator or Sequence."""
    result = script_results(tmp_path, DATASET_WRAPPER, "deepmodel.py")["EC517"]
    assert lines(result) == []
    source = DATASET_WRAPPER.replace(".repeat(count=epochs)", "")
    source = source.replace("train_data.with_options(tf.data.Options())", "train_data")
    assert lines(script_results(tmp_path, source, "deepmodel.py")["EC517"]) == [10]


GNN_TASK_MODEL = """
import tensorflow as tf
from tf2_gnn import GNN, GNNInput


class GraphTaskModel(tf.keras.Model):
    def __init__(self, params):
        super().__init__()
        self._gnn = GNN(params)
        self._optimizer = tf.keras.optimizers.Adam()

    def call(self, inputs, training):
        gnn_input = GNNInput(
            node_features=inputs["node_features"],
            adjacency_lists=inputs["adjacency_lists"],
            node_to_graph_map=inputs["node_to_graph_map"],
            num_graphs=inputs["num_graphs_in_batch"],
        )
        return self._gnn(gnn_input, training=training)

    def _run_step(self, batch_features, batch_labels):
        with tf.GradientTape() as tape:
            task_output = self(batch_features, training=True)
            loss = tf.reduce_mean(task_output)
        gradients = tape.gradient(loss, self.trainable_variables)
        self._optimizer.apply_gradients(zip(gradients, self.trainable_variables))
        return loss
"""


def test_ec522_a_message_passing_gnn_is_not_known(tmp_path: Path) -> None:
    """A Keras model around a message-passing GNN (tf2-gnn's `GNN`, sweep V): gathers and
    scatters over the edges bound it, as EC507/EC508 say of PyTorch graph networks; the
    policy's gain is not known."""
    result = script_results(tmp_path, GNN_TASK_MODEL, "graph_task_model.py")["EC522"]
    assert result.status.value == "unknown"
    assert "graph network" in result.reason


# A project model handed the schema of its tabular features (RecLearn's
# `DeepFM(feature_columns=feature_columns)` on Criteo): a CTR/recommender model whose
# step is bound by its embedding gathers, its layers after them narrow: EC522 is
# unknown (EC507 exempts such models too), where a project model handed no schema trains.
CTR_MODEL = """
import tensorflow as tf
from reclearn.models.ranking import DeepFM

feature_columns, train = create_criteo_dataset("train.txt", embed_dim=8)
model = DeepFM(feature_columns=feature_columns, hidden_units=[256, 128, 64])
model.compile(loss="binary_crossentropy", optimizer="adam")
model.fit(x=train[0], y=train[1], epochs=1, batch_size=4096)
"""


def test_a_project_model_handed_a_feature_schema_is_unknown(tmp_path: Path) -> None:
    result = script_results(tmp_path / "ctr", CTR_MODEL, "train.py")["EC522"]
    assert result.status.value == "unknown"
    assert "CTR or recommender" in str(result.reason)
    plain = CTR_MODEL.replace("feature_columns=feature_columns, ", "")
    assert lines(script_results(tmp_path / "plain", plain, "train.py")["EC522"]) == [8]


CONFIG_LSTM = """
from keras.models import Sequential
from keras.layers import LSTM, Dense, Dropout


class Model:
    def __init__(self, config, channel):
        self.config = config
        self.model = Sequential()
        self.model.add(LSTM(self.config.layers[0], return_sequences=True))
        self.model.add(Dropout(self.config.dropout))
        self.model.add(LSTM(self.config.layers[1]))
        self.model.add(Dense(self.config.n_predictions))
        self.model.compile(loss="mse", optimizer="adam")
        self.model.fit(channel.X_train, channel.y_train, epochs=self.config.epochs)
"""


def test_ec522_an_rnn_of_hidden_widths_is_unknown(tmp_path: Path) -> None:
    """LSTM -> LSTM -> Dense, every width from a config object (telemanom's [80, 80] in
    its YAML): toy or not, the source does not say. Written widths are judged."""
    result = script_results(tmp_path, CONFIG_LSTM, "modeling.py")["EC522"]
    assert result.status.value == "unknown"
    assert "every width" in result.reason
    wide = CONFIG_LSTM.replace("self.config.layers[0]", "512")
    assert script_results(tmp_path, wide, "modeling.py")["EC522"].status.value == "fail"
