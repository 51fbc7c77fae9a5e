"""A tf.data pipeline with a serial map and no prefetch (EC511, EC512)."""

import tensorflow as tf


def decode(path):
    image = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
    return tf.image.resize(image, (224, 224))


def make_dataset(paths):
    ds = tf.data.Dataset.from_tensor_slices(paths)
    ds = ds.shuffle(10_000)
    ds = ds.map(decode)
    ds = ds.batch(64)
    return ds


def main(paths):
    model = tf.keras.applications.ResNet50(weights=None)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(make_dataset(paths), epochs=10)


if __name__ == "__main__":
    main(["a.jpg", "b.jpg"])
