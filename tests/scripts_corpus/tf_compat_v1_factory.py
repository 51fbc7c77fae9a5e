"""TensorFlow 1.x-style input code through `import tensorflow.compat.v1 as tf`, and a
factory class whose pipeline is prefetched by its caller, not by itself."""

import tensorflow.compat.v1 as tf


def parse(record):
    features = tf.io.parse_single_example(record, {"x": tf.io.FixedLenFeature([], tf.string)})
    return tf.io.decode_raw(features["x"], tf.uint8)


class InputReader:
    def __init__(self, files, batch_size):
        self.files = files
        self.batch_size = batch_size

    def build(self):
        ds = tf.data.TFRecordDataset(self.files, num_parallel_reads=8)
        ds = ds.map(parse)
        return ds.batch(self.batch_size)


def legacy_input(files):
    ds = tf.data.TFRecordDataset(files, num_parallel_reads=4)
    ds = ds.prefetch(16)
    return ds.batch(32)


def main(files, model):
    train = InputReader(files, 64).build()
    train = train.prefetch(tf.data.AUTOTUNE)
    model.fit(train, epochs=3)
    for batch in legacy_input(files):
        model.train_on_batch(batch)
