"""TensorFlow backend: a tf.data pipeline built the way the TensorFlow tutorials build one.

Each sample: `tf.io.read_file`, `decode_jpeg`/`decode_png`, an Inception-style random crop
(`sample_distorted_bounding_box`), resize, horizontal flip, scale and normalise — inside
the tf.data runtime, on the CPU. Its knobs map onto the probe's loader settings: workers
is the map's `num_parallel_calls` (0: the serial map you get by leaving it out),
prefetch the final `.prefetch()` (-1: AUTOTUNE; None: none added, tf.data's default, and
then tf.data injects an autotuned prefetch of its own, so even a serial map runs ahead of
the training loop in a background thread). The model trains in a `tf.function`, traced
once on the first step, before anything is timed (tracing a large model takes seconds).
"""

from __future__ import annotations

import contextlib
import os
import platform
from typing import Any, Dict, Iterator, Optional, Sequence

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf

from envcheck.probe.child import images
from envcheck.probe.child.errors import ProbeFailure

MEAN = (0.485, 0.456, 0.406)  # ImageNet, as torchvision's Normalize uses them
STD = (0.229, 0.224, 0.225)
BUILT_IN = ("small-cnn", "deep-cnn")


def _conv(x: Any, width: int, stride: int) -> Any:
    layers = tf.keras.layers
    x = layers.Conv2D(width, 3, strides=stride, padding="same", use_bias=False)(x)
    x = layers.BatchNormalization()(x)
    return layers.ReLU()(x)


def build_model(name: str, size: int, classes: int) -> Any:
    """small-cnn and deep-cnn (the torch backend's layers, channels last), or a
    tf.keras.applications architecture by name with random weights."""
    if name in BUILT_IN:
        inputs = tf.keras.Input(shape=(size, size, 3))
        if name == "small-cnn":
            x = inputs
            for width in (32, 64, 128, 256):
                x = _conv(x, width, 2)
        else:
            x = _conv(inputs, 64, 2)
            for width in (64, 128, 256, 512):
                x = _conv(_conv(_conv(x, width, 2), width, 1), width, 1)
        x = tf.keras.layers.GlobalAveragePooling2D()(x)
        return tf.keras.Model(inputs, tf.keras.layers.Dense(classes)(x), name=name)
    factory = getattr(tf.keras.applications, name, None)
    if factory is None or not callable(factory):
        built_in = ", ".join(BUILT_IN)
        raise ProbeFailure(
            "model", f"tf.keras.applications has no model {name!r}; built in: {built_in}"
        )
    kwargs = {"weights": None, "input_shape": (size, size, 3), "classes": classes}
    try:  # logits, as the loss expects (and torchvision's models give)
        return factory(classifier_activation=None, **kwargs)
    except TypeError:  # older Keras: no classifier_activation (the head is a softmax)
        return factory(**kwargs)


def _select_device(want: str) -> bool:
    """Apply the device request before TensorFlow creates its devices; True for a GPU."""
    gpus = tf.config.list_physical_devices("GPU")
    if want == "cuda" and not gpus:
        cuda_build = tf.test.is_built_with_cuda()
        raise ProbeFailure(
            "device", f"tensorflow {tf.__version__} sees no GPU (built with CUDA: {cuda_build})"
        )
    if want == "cpu" and gpus:
        tf.config.set_visible_devices([], "GPU")
        return False
    for gpu in gpus:
        tf.config.experimental.set_memory_growth(gpu, True)  # take memory as needed
    return bool(gpus)


def _read(path: Any, throttle_bps: Optional[float]) -> Any:
    """The file's bytes: tf.io.read_file, or a throttled Python read (slow-disk stand-in)."""
    if not throttle_bps:
        return tf.io.read_file(path)

    def read(p: Any) -> bytes:
        return images.read_file(p.numpy().decode("utf-8"), throttle_bps)

    data = tf.py_function(read, [path], tf.string)
    data.set_shape([])
    return data


def _decode(path: Any, data: Any) -> Any:
    is_jpeg = tf.strings.regex_full_match(tf.strings.lower(path), r".*\.jpe?g")
    return tf.cond(
        is_jpeg,
        lambda: tf.io.decode_jpeg(data, channels=3),
        lambda: tf.io.decode_png(data, channels=3),
    )


def _random_crop(img: Any) -> Any:
    """Inception-style crop: 8-100% of the area, aspect ratio 3/4 to 4/3."""
    begin, size, _ = tf.image.sample_distorted_bounding_box(
        tf.shape(img),
        bounding_boxes=tf.zeros([1, 0, 4]),
        min_object_covered=0.1,
        aspect_ratio_range=(3 / 4, 4 / 3),
        area_range=(0.08, 1.0),
        max_attempts=10,
        use_image_if_no_bounding_boxes=True,
    )
    return tf.slice(img, begin, size)


def make_loader_fn(size: int, throttle_bps: Optional[float]) -> Any:
    """The per-sample map function: (path, label) -> (normalised image, label)."""
    mean = tf.constant(MEAN, dtype=tf.float32)
    std = tf.constant(STD, dtype=tf.float32)

    def load(path: Any, label: Any) -> Any:
        img = _random_crop(_decode(path, _read(path, throttle_bps)))
        img = tf.image.resize(img, (size, size))
        img = tf.image.random_flip_left_right(img)
        img = tf.cast(img, tf.float32) / 255.0
        return (img - mean) / std, label

    return load


def _ignore_errors(dataset: Any) -> Any:
    """Dataset.ignore_errors, or on older TF the tf.data.experimental spelling (deprecated)."""
    if hasattr(dataset, "ignore_errors"):
        return dataset.ignore_errors()
    return dataset.apply(tf.data.experimental.ignore_errors())


class _Batches:
    """The dataset's iterator, droppable on exit while the caller still holds this."""

    def __init__(self, iterator: Any) -> None:
        self.iterator = iterator

    def __iter__(self) -> _Batches:
        return self

    def __next__(self) -> Any:
        return next(self.iterator)

    def close(self) -> None:
        self.iterator = None  # frees the tf.data runtime's threads and buffers


class TensorFlowBackend:
    framework = "tensorflow"

    def __init__(self, settings: Dict[str, Any]) -> None:
        self.settings = settings
        self.gpu = _select_device(settings.get("device", "auto"))
        self.model: Any = None
        self.optimizer: Any = None
        self.synthetic: Any = None
        self.step_fn: Any = None
        self.last: Any = None  # the latest loss; sync() waits for it
        self.sync_devices = getattr(tf.test.experimental, "sync_devices", None)  # TF 2.12+

    def describe(self) -> Dict[str, Any]:
        name = platform.processor() or "cpu"
        if self.gpu:
            details = tf.config.experimental.get_device_details(
                tf.config.list_physical_devices("GPU")[0]
            )
            name = details.get("device_name", "GPU")
        threads = tf.config.threading.get_intra_op_parallelism_threads()
        return {
            "framework": "tensorflow",
            "version": tf.__version__,
            "device": "cuda" if self.gpu else "cpu",
            "device_name": name,
            "cuda_build": bool(tf.test.is_built_with_cuda()),
            "threads": threads or None,  # 0: TensorFlow picks (one per core)
            "cuda_error": None,
        }

    def default_batch_size(self) -> int:
        return 64 if self.gpu else 32

    def warmup_steps(self) -> int:
        return 5 if self.gpu else 2

    def loader_defaults(self) -> Dict[str, Any]:
        # tf.data's own defaults: a serial map, no prefetch added (tf.data injects one)
        return {"workers": 0, "pin_memory": False, "prefetch": None}

    def encode_jpeg(self, array: Any) -> bytes:
        return bytes(tf.io.encode_jpeg(array, quality=images.GENERATED_QUALITY).numpy())

    def decode(self, data: bytes) -> Any:
        return tf.io.decode_image(data, channels=3, expand_animations=False)

    def build(self, name: str, batch: int, size: int, classes: int) -> None:
        self.release()
        tf.keras.utils.set_random_seed(0)
        self.model = build_model(name, size, classes)
        self.optimizer = tf.keras.optimizers.SGD(learning_rate=0.01, momentum=0.9)
        self.optimizer.build(self.model.trainable_variables)
        self.step_fn = self._compile_step(batch, size)
        with tf.device("/GPU:0" if self.gpu else "/CPU:0"):
            self.synthetic = (
                tf.random.normal((batch, size, size, 3)),
                tf.random.uniform((batch,), 0, classes, dtype=tf.int32),
            )

    def _compile_step(self, batch: int, size: int) -> Any:
        """One SGD step as a tf.function; the fixed signature means it traces once."""
        model, optimizer = self.model, self.optimizer
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        signature = (
            tf.TensorSpec((batch, size, size, 3), tf.float32),
            tf.TensorSpec((batch,), tf.int32),
        )

        @tf.function(input_signature=signature)
        def step(x: Any, y: Any) -> Any:
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            pairs = zip(grads, model.trainable_variables)
            optimizer.apply_gradients(pairs)
            return loss

        return step

    def release(self) -> None:
        self.model = self.optimizer = self.synthetic = self.step_fn = self.last = None
        tf.keras.backend.clear_session()

    def is_oom(self, exc: BaseException) -> bool:
        return isinstance(exc, tf.errors.ResourceExhaustedError) or "out of memory" in str(exc)

    def train_step(self, batch: Any) -> Any:
        x, y = batch
        self.last = self.step_fn(x, y)
        return self.last

    def compute_step(self) -> None:
        self.train_step(self.synthetic)

    def sync(self) -> None:
        """Wait for the device, as torch.cuda.synchronize does."""
        if self.gpu and self.sync_devices is not None:
            self.sync_devices()
        elif self.last is not None:
            self.last.numpy()  # returns once the device has computed it

    def to_device(self, host: Any) -> Any:
        if not self.gpu:
            return host
        x, y = host
        with tf.device("/GPU:0"):
            return tf.identity(x), tf.identity(y)

    @staticmethod
    def batch_len(host: Any) -> int:
        return int(host[0].shape[0])

    @contextlib.contextmanager
    def open_loader(
        self,
        files: Sequence[str],
        labels: Sequence[int],
        batch: int,
        workers: int,
        pin_memory: bool,
        prefetch: Optional[int],
        throttle_bps: Optional[float],
    ) -> Iterator[Iterator[Any]]:
        """pin_memory has no tf.data counterpart and is ignored."""
        load = make_loader_fn(self.settings["image_size"], throttle_bps)
        dataset = tf.data.Dataset.from_tensor_slices(
            (list(files), tf.constant(list(labels), dtype=tf.int32))
        )
        dataset = dataset.shuffle(len(files), seed=0).repeat()
        # workers=1 is a real background thread (num_parallel_calls=1), not the serial map
        dataset = dataset.map(load, num_parallel_calls=workers if workers > 0 else None)
        dataset = _ignore_errors(dataset)  # skip files that cannot be read or decoded
        dataset = dataset.batch(batch, drop_remainder=True)
        if prefetch:
            dataset = dataset.prefetch(tf.data.AUTOTUNE if prefetch < 0 else prefetch)
        batches = _Batches(iter(dataset))
        try:
            yield batches
        finally:
            batches.close()

    # the node view's alternatives (alternatives.py) --------------------------------------

    def downscale(self, data: bytes, short_side: int) -> Any:
        """(JPEG bytes with the shorter side at most `short_side`, whether it shrank)."""
        img = tf.io.decode_image(data, channels=3, expand_animations=False)
        height, width = int(img.shape[0]), int(img.shape[1])
        scale = short_side / min(width, height)
        if scale < 1:
            size = (round(height * scale), round(width * scale))
            img = tf.cast(tf.image.resize(img, size, antialias=False), tf.uint8)
        encoded = tf.io.encode_jpeg(img, quality=images.GENERATED_QUALITY).numpy()
        return bytes(encoded), scale < 1
