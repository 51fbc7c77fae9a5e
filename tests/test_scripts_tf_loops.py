"""TensorFlow custom training loops (envcheck/scripts/tf_loops.py): EC522 judges a Keras
model trained with GradientTape + apply_gradients as it judges fit; EC509 flags per-step
host syncs of an eager step (`.numpy()`, formatting a tensor, `float(t)`), never in a
`@tf.function` step, under a periodic branch, or in a loop a default run does not take.
Snippets go through the real analyser and rules on an A100 target."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import project_checks
from test_scripts_torch import audit

from envcheck.scripts.analyze import analyze_file

RULES = ("EC509", "EC512", "EC522")

EAGER = """
import tensorflow as tf
from tensorflow.keras import layers
model = tf.keras.Sequential([layers.Conv2D(32, 3), layers.Flatten(), layers.Dense(10)])
optimizer = tf.keras.optimizers.Adam()
DECORATOR
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    tf.print("loss", loss)
    print("loss: %.4f" % loss)
    lr = optimizer.lr.numpy()
    if optimizer.iterations % 100 == 0:
        print(f"{loss}")
    return loss
ds = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(1000).batch(32)
for epoch in range(5):
    for x, y in ds:
        train_step(x, y)
    print(f"epoch {epoch}")
"""


def findings(tmp_path: Path, source: str) -> dict[str, Any]:
    (tmp_path / "train.py").write_text(textwrap.dedent(source))
    return audit(tmp_path / "train.py", rules=RULES)


def lines(result: Any) -> list[int]:
    return sorted(f.location.line for f in result.findings)


def test_eager_step_syncs_and_float32_custom_loop(tmp_path: Path) -> None:
    results = findings(tmp_path, EAGER.replace("DECORATOR\n", ""))
    # `%` formatting (12) and .numpy() (13); not tf.print (11), not the periodic f-string
    assert lines(results["EC509"]) == [12, 13]
    assert "formats an eager tensor" in results["EC509"].findings[0].message
    assert "loop over ds (line 19)" in results["EC509"].findings[0].message
    [mixed] = results["EC522"].findings  # trained outside fit, in float32
    assert mixed.location.line == 10 and "apply_gradients" in (mixed.location.code or "")
    # in-memory slices with nothing mapped: nothing for prefetch to overlap
    assert results["EC512"].status.value == "pass"


@pytest.mark.parametrize("decorator", ["@tf.function", "@tf.function(jit_compile=True)"])
def test_a_compiled_step_runs_as_a_graph(tmp_path: Path, decorator: str) -> None:
    results = findings(tmp_path, EAGER.replace("DECORATOR", decorator))
    assert results["EC509"].status.value == "pass"
    assert results["EC522"].status.value == "fail"


def test_what_a_compiled_step_returns_is_read_on_the_host_in_the_eager_loop(
    tmp_path: Path,
) -> None:
    """The graph runs asynchronously; formatting the EagerTensor it returned (or
    `.numpy()`, `float()`) in the loop waits for it, every step. Periodic reads do not."""
    source = EAGER.replace("DECORATOR", "@tf.function").replace(
        "        train_step(x, y)\n",
        "        loss = train_step(x, y)\n"
        "        scaled = loss * 2\n"
        '        print(f"loss {scaled}")\n'
        "        if optimizer.iterations % 100 == 0:\n"
        "            print(float(loss))\n",
    )
    results = findings(tmp_path, source)
    assert lines(results["EC509"]) == [23]
    assert "f-string formats an eager tensor" in results["EC509"].findings[0].message


def test_a_mixed_precision_policy_satisfies_ec522(tmp_path: Path) -> None:
    source = EAGER.replace("DECORATOR\n", "").replace(
        "optimizer = tf",
        "tf.keras.mixed_precision.set_global_policy('mixed_float16')\noptimizer = tf",
    )
    assert findings(tmp_path, source)["EC522"].status.value == "pass"


def test_loop_body_step_and_an_epoch_loop_around_it(tmp_path: Path) -> None:
    """The step in the loop's own body; the epoch loop's once-per-epoch print and the
    validation loop are not steps."""
    results = findings(
        tmp_path,
        """
        import tensorflow as tf
        model = tf.keras.Sequential([tf.keras.layers.Dense(512), tf.keras.layers.Dense(10)])
        for epoch in range(3):
            for x, y in train_ds:
                with tf.GradientTape() as tape:
                    loss = loss_fn(y, model(x))
                grads = tape.gradient(loss, model.trainable_variables)
                opt.apply_gradients(zip(grads, model.trainable_variables))
                total = float(loss)
            for x, y in val_ds:
                val = model(x).numpy()
            print("epoch", epoch, loss.numpy())
        """,
    )
    assert lines(results["EC509"]) == [10]


def test_a_loop_behind_a_flag_off_by_default_is_not_a_default_run(tmp_path: Path) -> None:
    # yolov3-tf2: the eager loop only with --mode=eager_tf (absl flag, default 'fit')
    results = findings(
        tmp_path,
        """
        import tensorflow as tf
        from absl import flags
        from absl.flags import FLAGS
        flags.DEFINE_enum('mode', 'fit', ['fit', 'eager_tf'], 'mode')
        def main(_):
            model = tf.keras.Sequential([tf.keras.layers.Conv2D(8, 3)])
            if FLAGS.mode == 'eager_tf':
                for x, y in train_ds:
                    with tf.GradientTape() as tape:
                        loss = loss_fn(y, model(x))
                    opt.apply_gradients(zip(tape.gradient(loss, model.variables), model.variables))
                    print(loss.numpy())
        """,
    )
    assert results["EC509"].status.value == "pass"


HELPERS = """
import sys
import tensorflow as tf
this = sys.modules[__name__]
numpy = lambda x, *args: x.numpy(*args)


class Accumulator:
    def __init__(self, n):
        self.data = [0.0] * n

    def add(self, *args):
        self.data = [a + float(b) for a, b in zip(self.data, args)]


class Board:
    def draw(self, x, y, every_n=1):
        self.points.append((x, y))


class Module(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.board = Board()

    def plot(self, key, value, train):
        n = self.trainer.num_train_batches / 2
        self.board.draw(key, this.numpy(value), every_n=int(n))

    def training_step(self, batch):
        l = self.loss(self(*batch[:-1]), batch[-1])
        self.plot("loss", l, train=True)
        return l

    def validation_step(self, batch):
        l = self.loss(self(*batch[:-1]), batch[-1])
        self.plot("loss", l, train=False)


class Classifier(this.Module):
    def training_step(self, batch):
        return self.loss(self(*batch[:-1]), batch[-1])


class Trainer:
    def prepare_model(self, model):
        model.trainer = self
        self.model = model
        self.optim = tf.keras.optimizers.SGD(0.1)

    def fit_epoch(self):
        for batch in self.train_dataloader:
            with tf.GradientTape() as tape:
                loss = self.model.training_step(batch)
            grads = tape.gradient(loss, self.model.trainable_variables)
            self.optim.apply_gradients(zip(grads, self.model.trainable_variables))
        for batch in self.val_dataloader:
            self.model.validation_step(batch)


def clip(grads, theta):
    norm = tf.math.sqrt(sum(tf.reduce_sum(g ** 2).numpy() for g in grads))
    return [g * theta / norm for g in grads]


def evaluate(net, data):
    metric = Accumulator(2)
    for X, y in data:
        metric.add(tf.reduce_sum(net(X)), 1)
    return metric.data[0]


def train(net, data, optimizer):
    metric = Accumulator(2)
    for X, y in data:
        with tf.GradientTape() as tape:
            l = tf.reduce_mean(net(X) - y)
        grads = clip(tape.gradient(l, net.trainable_variables), 1)
        optimizer.apply_gradients(zip(grads, net.trainable_variables))
        metric.add(tf.reduce_sum(l), X.shape[0])
"""


def test_host_reads_in_helpers_called_every_step(tmp_path: Path) -> None:
    """A helper of the file called per step is read: its host read is reported inside it
    when only the step calls it (clip: 62), at the call that hands it the tensor when
    other code shares it (Accumulator.add: 80; Module.plot, reached through
    `self.model.training_step`, reads the loss with the module's `numpy` lambda and is
    also called by validation_step: 32), as for PyTorch loops. Not `int(n)` of a plain
    number, not the validation loop."""
    results = findings(tmp_path, HELPERS)
    assert lines(results["EC509"]) == [32, 62, 80]
    messages = {f.location.line: f.message for f in results["EC509"].findings}
    assert "float(b) in add()" in messages[80]
    assert "in plot()" in messages[32]
    assert "training loop over self.train_dataloader" in messages[32]


def test_a_helper_handed_no_tensor_reads_nothing(tmp_path: Path) -> None:
    """Accumulator.add of plain numbers is no host read; a lambda that does not read
    its argument on the host is none either."""
    source = HELPERS.replace("metric.add(tf.reduce_sum(l), X.shape[0])", "metric.add(1, 2)")
    source = source.replace("this.numpy(value)", "this.numpy(key)")
    results = findings(tmp_path, source)
    assert lines(results["EC509"]) == [62]


def test_a_helper_only_the_step_reaches_is_reported_inside(tmp_path: Path) -> None:
    """Without validation_step, Module.plot is the step's alone: its host read is reported
    where it happens (28), reached through `self.model.training_step` -> `self.plot`."""
    start = HELPERS.index("    def validation_step")
    end = HELPERS.index("class Classifier")
    results = findings(tmp_path, HELPERS[:start] + "\n\n" + HELPERS[end:])
    assert 28 in lines(results["EC509"])
    assert 32 not in lines(results["EC509"])


IRIS = """
import tensorflow as tf
model = tf.keras.Sequential([
    tf.keras.layers.Dense(10, activation=tf.nn.relu, input_shape=(4,)),
    tf.keras.layers.Dense(UNITS),
])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
model.fit(features, labels, epochs=200)
"""


@pytest.mark.parametrize(("units", "status"), [("3", "pass"), ("128", "pass"), ("256", "fail")])
def test_a_toy_dense_model_gives_tensor_cores_nothing_to_do(
    tmp_path: Path, units: str, status: str
) -> None:
    """The Iris classifier (Dense(10) -> Dense(3)) is not worth mixed precision, nor is
    a 128-wide layer (PyTorch's toy bound); a 256-wide one is."""
    results = findings(tmp_path, IRIS.replace("UNITS", units))
    assert results["EC522"].status.value == status


def test_a_keras_metric_result_formatted_every_step_is_a_sync(tmp_path: Path) -> None:
    """TensorFlow2.0_ResNet: a compiled step updates `train_loss`, and the eager loop
    prints `train_loss.result()` with str.format every step: an EagerTensor read on the
    host each time (a Python number printed is no sync)."""
    source = (
        "import tensorflow as tf\n"
        "train_loss = tf.keras.metrics.Mean(name='train_loss')\n"
        "@tf.function\n"
        "def train_step(images, labels):\n"
        "    with tf.GradientTape() as tape:\n"
        "        loss = loss_object(labels, model(images, training=True))\n"
        "    gradients = tape.gradient(loss, model.trainable_variables)\n"
        "    optimizer.apply_gradients(zip(gradients, model.trainable_variables))\n"
        "    train_loss(loss)\n"
        "for epoch in range(10):\n"
        "    for step, (images, labels) in enumerate(train_dataset):\n"
        "        train_step(images, labels)\n"
        "        print('step {}, loss: {:.5f}'.format(step, train_loss.result()))\n"
        "        print('step {}'.format(step))\n"
    )
    for metric in ("tf.keras.metrics.Mean", "tf.metrics.Mean"):  # TF2's alias too
        path = tmp_path / "train.py"
        path.write_text(source.replace("tf.keras.metrics.Mean", metric))
        report = analyze_file(path, "train.py")
        syncs = [c for c in report.torch_calls if c.get("kind") == "host_sync"]
        assert [c["line"] for c in syncs] == [13], metric


OUT_OF_SIGHT_STEP = """
import gin
import tensorflow as tf


@gin.configurable
def train(trainer, dataset, num_steps=1000, steps_per_summary=300, report=False):
    dataset_iter = iter(dataset)
    print(trainer.step.numpy())
    while trainer.step < num_steps:
        step = trainer.step
        losses = trainer.train_step(dataset_iter)
        log = "step: {}".format(int(step.numpy()))
        for k, v in losses.items():
            log += "{}: {:.2f}".format(k, v)
        if report:
            print(step.numpy())
        if step % steps_per_summary == 0:
            tf.summary.scalar("total", losses["total_loss"], step=step)
"""


def test_a_loop_stepping_a_train_step_out_of_sight_reads_its_tensors_each_step(
    tmp_path: Path,
) -> None:
    """ddsp's train(): `trainer.train_step(...)` of a class out of sight steps the
    training; the while condition compares the step variable the file reads with
    `.numpy()` (10), `step.numpy()` (13) and the '{:.2f}' of each returned loss (15) run
    every step; not the `.numpy()` before the loop, nor the opt-in branch (its gin
    parameter defaults to False) or the periodic summary."""
    results = findings(tmp_path, OUT_OF_SIGHT_STEP)
    assert lines(results["EC509"]) == [10, 13, 15]
    assert "its condition compares an eager tensor" in results["EC509"].findings[0].message


WHILE_NUMPY = """
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
optimizer = tf.keras.optimizers.RMSprop(1e-3)


@tf.function
def train_step(iterator):
    x, y = next(iterator)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(x) - y)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


step_in_epoch = tf.Variable(0, dtype=tf.int64)
while step_in_epoch.numpy() < 70:
    train_step(iterator)
    step_in_epoch.assign_add(1)
"""


def test_a_while_condition_reading_a_variable_with_numpy_waits_every_step(
    tmp_path: Path,
) -> None:
    """tfdocs' multi_worker_with_ctl: `while step_in_epoch.numpy() < n:` around a
    compiled step reads the int64 variable on the host before every step (19)."""
    results = findings(tmp_path, WHILE_NUMPY)
    assert lines(results["EC509"]) == [19]
    assert "its condition compares an eager tensor" in results["EC509"].findings[0].message


COMPILED_STEP = """
import numpy as np
import tensorflow as tf
from time import time

model = tf.keras.applications.ResNet50(weights=None)
optimizer = tf.keras.optimizers.Adam()
dataset = tf.data.Dataset.list_files("*.jpg").map(load, num_parallel_calls=8).batch(32)
variables = model.trainable_variables

@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(loss_fn(y, model(x)))
    optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
    return loss
"""


def test_a_tensor_read_in_the_test_of_a_periodic_branch_runs_every_step(tmp_path: Path) -> None:
    """CycleGAN/DCGAN-TF2: `if G_optimizer.iterations.numpy() % 100 == 0:` only logs every
    100 steps, but its test copies the counter the compiled step advances to the host
    every step (19); the body (20) is periodic. A branch testing a compiled step's loss
    (`if loss > 10.0:`, 21) reads it too."""
    source = COMPILED_STEP + (
        "for x, y in dataset:\n"
        "    loss = train_step(x, y)\n"
        "    if optimizer.iterations.numpy() % 100 == 0:\n"
        "        print(loss.numpy())\n"
        "    if loss > 10.0:\n"
        "        break\n"
    )
    results = findings(tmp_path, source)
    assert lines(results["EC509"]) == [19, 21]


def test_an_rl_action_for_env_step_in_a_tf_loop_is_no_sync_to_avoid(tmp_path: Path) -> None:
    """keras-io DQN: the greedy action goes to `env.step(action)`, which needs it on the
    host every step (the PyTorch loops' exemption, shared); the `.numpy()` of a value
    kept for logging (13) still counts."""
    source = (
        "import gym\n"
        "import numpy as np\n"
        "import tensorflow as tf\n"
        "env = gym.make('BreakoutNoFrameskip-v4')\n"
        "model = tf.keras.applications.ResNet50(weights=None, classes=4)\n"
        "optimizer = tf.keras.optimizers.Adam()\n"
        "state = np.array(env.reset())\n"
        "for frame in range(1000000):\n"
        "    q_values = model(tf.expand_dims(state, 0), training=False)\n"
        "    action = tf.argmax(q_values[0]).numpy()\n"
        "    state, reward, done, _ = env.step(action)\n"
        "    env.step(tf.argmax(q_values[0]).numpy())\n"
        "    best = tf.reduce_max(q_values).numpy()\n"
        "    with tf.GradientTape() as tape:\n"
        "        loss = tf.reduce_mean(model(tf.expand_dims(state, 0)))\n"
        "    grads = tape.gradient(loss, model.trainable_variables)\n"
        "    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n"
    )
    results = findings(tmp_path, source)
    assert lines(results["EC509"]) == [13]


def test_formatting_what_an_eager_step_returned_as_numpy_is_no_second_sync(
    tmp_path: Path,
) -> None:
    """pythonlessons YOLOv3: the eager step returns `loss.numpy()` (its one host read,
    13); the loop formats that NumPy value, and what it computes from it, on the host
    (18, 19): no second sync. A step returning the tensor itself is read in the loop."""
    source = (
        "import tensorflow as tf\n"
        "model = tf.keras.applications.ResNet50(weights=None)\n"
        "optimizer = tf.keras.optimizers.Adam()\n"
        "dataset = tf.data.Dataset.list_files('*.jpg').map(load, num_parallel_calls=8).batch(32)\n"
        "\n"
        "\n"
        "def train_step(x, y):\n"
        "    with tf.GradientTape() as tape:\n"
        "        loss = tf.reduce_mean(loss_fn(y, model(x)))\n"
        "    grads = tape.gradient(loss, model.trainable_variables)\n"
        "    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n"
        "    step = optimizer.iterations\n"
        "    return step.numpy(), loss.numpy()\n"
        "\n"
        "\n"
        "for x, y in dataset:\n"
        "    results = train_step(x, y)\n"
        "    print('loss: {:7.2f}'.format(results))\n"
        "    print(f'{results[0] % 100}')\n"
    )
    assert lines(findings(tmp_path, source)["EC509"]) == [13]
    returned = source.replace("return step.numpy(), loss.numpy()", "return step, loss")
    assert lines(findings(tmp_path, returned)["EC509"]) == [18]


BENCHMARK = """
def benchmark(warmup_steps=20, max_steps=200):
    timestamps = []
    for iteration, (x, y) in enumerate(dataset):
        loss = train_step(x, y).numpy()
        if iteration > warmup_steps:
            timestamps.append(time())
        if iteration >= max_steps:
            break
    print("img/s", 32 / np.mean(np.diff(timestamps)))
"""


def test_a_host_read_that_times_each_benchmark_step_is_deliberate(tmp_path: Path) -> None:
    """NVIDIA UNet_Medical's benchmark loop: `train_step(...).numpy()`, its value unused,
    then a timestamp: the read makes the clock time the step, not its dispatch, and
    removing it breaks the measurement. A read whose value the loop uses (printed) is
    a sync as ever."""
    results = findings(tmp_path, COMPILED_STEP + BENCHMARK)
    assert results["EC509"].status.value == "pass"
    used = BENCHMARK.replace("timestamps.append(time())", "timestamps.append((time(), loss))")
    used = used.replace(
        "        if iteration >= max_steps:",
        "        print(loss)\n        if iteration >= max_steps:",
    )
    assert lines(findings(tmp_path, COMPILED_STEP + used)["EC509"]) == [21]


def test_a_branch_on_a_device_tensor_in_an_eager_step_reads_it_every_step(
    tmp_path: Path,
) -> None:
    """pythonlessons YOLOv3: `if global_steps < warmup_steps:` on an int64 tf.Variable
    the step advances: bool() of a device tensor waits for the step, every step (16), as
    does `if loss > 5.0:` on the step's loss (18); not a branch on an int32 counter kept
    in host memory (20) or on a Python number (22)."""
    source = (
        "import tensorflow as tf\n"
        "model = tf.keras.applications.ResNet50(weights=None)\n"
        "optimizer = tf.keras.optimizers.Adam()\n"
        "global_steps = tf.Variable(1, trainable=False, dtype=tf.int64)\n"
        "epoch = tf.Variable(0)\n"
        "dataset = tf.data.Dataset.list_files('*.jpg').map(load, num_parallel_calls=8).batch(32)\n"
        "\n"
        "\n"
        "def train_step(x, y, warmup_steps=1000):\n"
        "    with tf.GradientTape() as tape:\n"
        "        loss = tf.reduce_mean(loss_fn(y, model(x)))\n"
        "    grads = tape.gradient(loss, model.trainable_variables)\n"
        "    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n"
        "    global_steps.assign_add(1)\n"
        "    scale = warmup_steps * 2\n"
        "    if global_steps < warmup_steps:\n"
        "        optimizer.learning_rate.assign(1e-4)\n"
        "    if loss > 5.0:\n"
        "        tf.print('high loss')\n"
        "    if epoch > 3:\n"
        "        tf.print('late')\n"
        "    if scale > 10:\n"
        "        tf.print('scaled')\n"
        "\n"
        "\n"
        "for x, y in dataset:\n"
        "    train_step(x, y)\n"
    )
    assert lines(findings(tmp_path, source)["EC509"]) == [16, 18]


def test_numpy_on_what_a_compiled_step_returned_is_a_host_read(tmp_path: Path) -> None:
    """`np.mean(loss)` and `np.isnan(loss)` on the EagerTensor a compiled step returned
    copy it to the host every step (NumPy converts it), in a statement (21) or a branch's
    test (22); NumPy on host values (`np.array([1, 2])`, 20) is not."""
    source = COMPILED_STEP + (
        "running = 0.0\n"
        "for x, y in dataset:\n"
        "    loss = train_step(x, y)\n"
        "    ids = np.array([1, 2])\n"
        "    running = 0.99 * running + 0.01 * np.mean(loss)\n"
        "    if np.isnan(loss):\n"
        "        break\n"
    )
    assert lines(findings(tmp_path, source)["EC509"]) == [21, 22]


PER_ITERATION = """
import numpy as np
import tensorflow as tf


class Trainer:
    def __init__(self):
        self.model = tf.keras.applications.ResNet50(weights=None)
        self.opt = tf.keras.optimizers.Adam()
        self.steps = 0
        self.vars = self.model.trainable_variables

    def train(self):
        a, d = self.train_step(np.random.random((16, 64, 64, 3)).astype("float32"))
        self.steps_mean = 0.99 * self.steps + 0.01 * np.mean(d)
        if np.isnan(a):
            exit()
        if self.steps % 100 == 0:
            print(a.numpy())
        self.steps += 1

    @tf.function
    def train_step(self, images):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(self.model(images))
        self.opt.apply_gradients(zip(tape.gradient(loss, self.vars), self.vars))
        return loss, loss * 2


t = Trainer()
while t.steps < 1000001:
    t.train()
"""


def test_a_method_running_one_step_called_per_pass_of_a_loop_is_the_iteration(
    tmp_path: Path,
) -> None:
    """StyleGAN2-TF2: `Trainer.train()` runs the compiled step once, outside any loop of
    its own, and the module's `while` calls it once per pass: what it does with the
    step's results runs every step (`np.mean(d)`, 15; `if np.isnan(a):`, 16), not its
    periodic print (19)."""
    assert lines(findings(tmp_path, PER_ITERATION)["EC509"]) == [15, 16]


def test_a_plain_function_running_compiled_steps_is_one_iteration_of_the_loop(
    tmp_path: Path,
) -> None:
    """CycleGAN-TF2: the loop calls `train_step(A, B)`, a plain function running the
    compiled step once and returning its losses: formatting them every pass (27) is a
    host read, as is the test of the periodic sample branch (28); the test an opt-in
    threshold settles first (`limit is not None and ...`, 30) reads nothing by default."""
    source = COMPILED_STEP + (
        "\n"
        "\n"
        "def iteration(x, y):\n"
        "    loss = train_step(x, y)\n"
        "    return {'loss': loss}\n"
        "\n"
        "\n"
        "def main(limit=None):\n"
        "    for x, y in dataset:\n"
        "        losses = iteration(x, y)\n"
        '        print(f"{losses}")\n'
        "        if optimizer.iterations.numpy() % 100 == 0:\n"
        "            tf.print(losses)\n"
        "        if limit is not None and losses['loss'] < limit:\n"
        "            break\n"
    )
    assert lines(findings(tmp_path, source)["EC509"]) == [27, 28]


REPLICATED_STEP = """
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()
with strategy.scope():
    model = tf.keras.applications.ResNet50(weights=None)
    optimizer = tf.keras.optimizers.Adam()


def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(loss_fn(y, model(x)))
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                  model.trainable_variables))
    return loss


@tf.function
def distributed_step(x, y):
    loss = strategy.run(train_step, args=(x, y))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, loss, axis=None)


def main():
    for step, (x, y) in enumerate(dataset):
        loss = distributed_step(x, y)
        print(f"{step} - {loss.numpy():.5f}")
"""


def test_a_step_run_by_a_distribution_strategy_returns_eager_tensors(tmp_path: Path) -> None:
    """YOLOv2-tf: the loop calls a compiled function handing the step to `strategy.run`
    (`experimental_run_v2` before TF 2.2): it runs one training step, and `.numpy()` of
    the loss it reduces and returns (27) is a host read every step."""
    assert lines(findings(tmp_path, REPLICATED_STEP)["EC509"]) == [27]


STEP_PROPERTY_MODEL = """
import tensorflow as tf


class Transformer(tf.keras.models.Model):
    def __init__(self):
        super().__init__()
        self.train_step = tf.function(self._train_step)

    @property
    def step(self):
        return int(self.optimizer.iterations)

    @property
    def width(self):
        return 256

    def _train_step(self, x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(self(x) - y)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}
"""

STEP_PROPERTY_TRAIN = """
import tensorflow as tf
from config_manager import ConfigManager

model = ConfigManager().get_model()
dataset = iter(tf.data.Dataset.range(10).repeat())
losses = []
for _ in range(1000):
    print(f"step {model.step} width {model.width}")
    output = model.train_step(next(dataset), 0.0)
    losses.append(float(output["loss"]))
    if model.step % 1000 == 0:
        model.save_weights(f"step_{model.step}")
    print(model.width)
"""


def test_a_step_property_of_a_project_class_reading_the_optimizer_counter(
    tmp_path: Path,
) -> None:
    """TransformerTTS: `model.step` is a property of a model class of another module of
    the project (`int(self.optimizer.iterations)`, the int64 device counter), read in an
    f-string (9) and a periodic test (12, not its body) every step; `float()` of an item
    of the dict the step returns (11) too. Not another property (`model.width`, 14), and
    nothing of `model.step` without the model's module (its class is out of sight)."""
    (tmp_path / "config_manager.py").write_text(
        "from models import Transformer\n\n"
        "class ConfigManager:\n    def get_model(self):\n        return Transformer()\n"
    )
    (tmp_path / "models.py").write_text(textwrap.dedent(STEP_PROPERTY_MODEL))
    results = findings(tmp_path, STEP_PROPERTY_TRAIN)
    assert lines(results["EC509"]) == [9, 11, 12]
    assert "device step counter" in results["EC509"].findings[0].message
    (tmp_path / "models.py").write_text(
        textwrap.dedent(STEP_PROPERTY_MODEL).replace(
            "return int(self.optimizer.iterations)", "return self._step"
        )
    )
    assert lines(findings(tmp_path, STEP_PROPERTY_TRAIN)["EC509"]) == [11]


DISTRIBUTED_METHOD = """
import tensorflow as tf


class Trainer:
    def __init__(self):
        self.g_optimizer = tf.keras.optimizers.Adam()
        self.model = tf.keras.Sequential([tf.keras.layers.Conv2D(64, 3)])

    def d_train_step(self, inputs):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(self.model(inputs[0]))
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.g_optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        return loss

    def train(self, dist_datasets, strategy):
        def dist_d_train_step(inputs):
            per_replica = strategy.run(fn=self.d_train_step, args=(inputs,))
            REPEATED
            return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

        dist_d_train_step = tf.function(dist_d_train_step)
        for real_images in dist_datasets:
            step = self.g_optimizer.iterations.numpy()
            d_loss = dist_d_train_step((real_images,))
            if step % 100 == 0:
                print(step)
"""


def test_a_method_handed_to_strategy_run_by_keyword_steps_the_loop(tmp_path: Path) -> None:
    """stylegan2-tf-2.x: the loop calls a compiled wrapper that hands the step method to
    `strategy.run(fn=self.d_train_step, ...)`; the optimizer's counter read with
    `.numpy()` in the eager loop waits for the step, every step."""
    results = findings(tmp_path, DISTRIBUTED_METHOD.replace("            REPEATED\n", ""))
    assert lines(results["EC509"]) == [24]


def test_a_wrapper_running_several_steps_per_call_reads_once_per_execution(
    tmp_path: Path,
) -> None:
    """retinanet-tensorflow2.x: the wrapper runs the step again in `tf.range(n - 1)`
    (steps_per_execution): the loop's host read is once per n steps."""
    source = DISTRIBUTED_METHOD.replace(
        "REPEATED",
        "for _ in tf.range(7):\n"
        "                per_replica = strategy.run(fn=self.d_train_step, args=(inputs,))",
    )
    assert findings(tmp_path, source)["EC509"].status.value == "pass"


def test_a_do_train_flag_around_the_only_loop_is_the_scripts_mode(tmp_path: Path) -> None:
    """BERT-NER-TF: `if args.do_train:` (store_true) holds the training loop, with no
    `else`: the mode the script exists for, read as the PyTorch loops are."""
    results = findings(
        tmp_path,
        """
        import argparse
        import tensorflow as tf
        parser = argparse.ArgumentParser()
        parser.add_argument("--do_train", action="store_true")
        args = parser.parse_args()
        model = tf.keras.Sequential([tf.keras.layers.Conv2D(8, 3)])
        if args.do_train:
            for x, y in train_ds:
                with tf.GradientTape() as tape:
                    loss = loss_fn(y, model(x))
                opt.apply_gradients(zip(tape.gradient(loss, model.variables), model.variables))
                print(loss.numpy())
        """,
    )
    assert lines(results["EC509"]) == [13]


OVERRIDDEN_MODEL = """
import tensorflow as tf


class Decoder(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.conv = tf.keras.layers.Conv1D(256, 3)

    def call(self, x):
        return self.conv(x)

    DECORATOR
    def train_on_batch(self, x, y=None):
        if self.dist:
            predictions = self._dist_step(x, y)
        else:
            predictions = self.__train_step(x, y)
        loss = tf.reduce_mean(self.loss_value)
        return [loss.numpy()]

    def _dist_step(self, x, y):
        return self._distribution_strategy.run(self.__train_step, args=(x, y))

    def __train_step(self, x, y):
        with tf.GradientTape() as tape:
            predictions = self.call(x)
            self.loss_value = self.loss(y, predictions)
        gradients = tape.gradient(self.loss_value, self.trainable_variables)
        self.optimizer.apply_gradients(zip(gradients, self.trainable_variables))
        return predictions
"""

OVERRIDDEN_SCRIPT = """
import tensorflow as tf
from model import Decoder

mt = Decoder()
mt.compile(optimizer="adam", loss="mse")
for e in range(10):
    for b in range(100):
        x, y = next_batch()
        result = mt.train_on_batch(x, y)
        if b % 100 == 0:
            tf.summary.scalar("loss", result[0], step=b)
"""


@pytest.mark.parametrize(
    ("decorator", "status"), [("", "fail"), ("@tf.function", "pass")], ids=["eager", "compiled"]
)
def test_a_project_models_eager_train_on_batch_override_reads_the_loss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decorator: str, status: str
) -> None:
    """MusicTransformer-tensorflow2.0: the loop calls `mt.train_on_batch(x, y)`, whose
    override in model.py runs an eager GradientTape step and returns `loss.numpy()`: a
    host read every step, at the loop's call; compiled, it is a graph (no `.numpy()`)."""
    model = OVERRIDDEN_MODEL.replace("    DECORATOR\n", f"    {decorator}\n" if decorator else "")
    checks = project_checks(
        tmp_path, {"model.py": model, "train.py": OVERRIDDEN_SCRIPT}, monkeypatch
    )
    assert checks["EC509"][0] == status


def test_an_eager_step_method_another_file_calls_reads_the_loss_every_call(
    tmp_path: Path,
) -> None:
    """ravens' Attention.train(): GradientTape + apply_gradients, no tf.function, never
    called in its file (the agent calls it every iteration) and returning
    `np.float32(loss)`; Keras' own train_step (compiled by fit) is not one."""
    source = """
        import numpy as np
        import tensorflow as tf

        class Attention:
            def __init__(self):
                self.model = tf.keras.Sequential([tf.keras.layers.Conv2D(64, 3)])
                self.optim = tf.keras.optimizers.Adam()

            def train(self, in_img, label, backprop=True):
                with tf.GradientTape() as tape:
                    output = self.model(in_img)
                    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(label, output))
                if backprop:
                    grad = tape.gradient(loss, self.model.trainable_variables)
                    self.optim.apply_gradients(zip(grad, self.model.trainable_variables))
                return np.float32(loss)
        """
    assert lines(findings(tmp_path, source)["EC509"]) == [17]
    keras_step = source.replace("def train(", "def train_step(")
    assert findings(tmp_path, keras_step)["EC509"].status.value == "pass"
