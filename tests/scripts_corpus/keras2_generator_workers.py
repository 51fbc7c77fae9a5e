"""Keras 2 era training: a plain Python generator read by four threads (EC521), a
prediction with use_multiprocessing=True (EC520 on Windows), float32 on tensor-core GPUs
(EC522). A Sequence, or a generator whose next() takes a lock, is thread-safe."""

import threading

import numpy as np
from tensorflow import keras
from tensorflow.keras import layers


def batches(paths, batch_size=32):
    while True:
        for start in range(0, len(paths), batch_size):
            chunk = paths[start:start + batch_size]
            yield np.stack([np.load(p) for p in chunk]), np.zeros(len(chunk))


class Batches(keras.utils.Sequence):
    def __init__(self, paths, batch_size=32):
        self.paths, self.batch_size = paths, batch_size

    def __len__(self):
        return len(self.paths) // self.batch_size

    def __getitem__(self, index):
        chunk = self.paths[index * self.batch_size:(index + 1) * self.batch_size]
        return np.stack([np.load(p) for p in chunk]), np.zeros(len(chunk))


class ThreadSafeIterator:
    """Serialises next() on a generator (keras-team/keras#1638)."""

    def __init__(self, iterator):
        self.iterator, self.lock = iterator, threading.Lock()

    def __iter__(self):
        return self

    def __next__(self):
        with self.lock:
            return next(self.iterator)


def threadsafe_generator(function):
    def wrapped(*args, **kwargs):
        return ThreadSafeIterator(function(*args, **kwargs))
    return wrapped


@threadsafe_generator
def guarded(paths):
    while True:
        for path in paths:
            yield np.load(path)[None], np.zeros(1)


def build():
    model = keras.Sequential([
        layers.Conv2D(32, 3, activation="relu", input_shape=(224, 224, 3)),
        layers.GlobalAveragePooling2D(),
        layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return model


if __name__ == "__main__":
    paths = [f"data/{i}.npy" for i in range(1000)]
    model = build()
    model.fit(batches(paths), steps_per_epoch=30, epochs=10, workers=4)
    model.fit(Batches(paths), epochs=10, workers=4)
    model.fit(guarded(paths), steps_per_epoch=1000, epochs=1, workers=4)
    model.fit(ThreadSafeIterator(batches(paths)), steps_per_epoch=30, workers=4)
    predictions = model.predict(Batches(paths), workers=4, use_multiprocessing=True)
