"""A custom layer that calls NumPy on its inputs inside `call` (EC519)."""

import numpy as np
import tensorflow as tf


class Normalise(tf.keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.scale = np.sqrt(2.0)  # fine: once, at construction

    def call(self, inputs):
        shift = np.float32(0.5)  # fine: a constant, not the inputs
        values = np.clip(inputs, 0, 1)
        return tf.convert_to_tensor(values) * self.scale + shift


class Fine(tf.keras.layers.Layer):
    def call(self, inputs):
        return tf.clip_by_value(inputs, 0.0, 1.0)
