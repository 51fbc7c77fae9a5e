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
from test_scripts_torch import audit

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
