"""The fixed twin of tf_serial_map_no_prefetch.py: parallel map, cache before the random
augmentation, parallel file reads, prefetch last, mixed precision."""

import tensorflow as tf

AUTOTUNE = tf.data.AUTOTUNE
tf.keras.mixed_precision.set_global_policy("mixed_float16")


def decode(path):
    image = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
    return tf.image.resize(image, (224, 224))


def augment(image):
    return tf.image.random_flip_left_right(image)


def make_dataset(paths):
    ds = tf.data.Dataset.from_tensor_slices(paths)
    ds = ds.map(decode, num_parallel_calls=AUTOTUNE)
    ds = ds.cache()
    ds = ds.shuffle(10_000)
    ds = ds.map(augment, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.batch(64)
    ds = ds.prefetch(tf.data.AUTOTUNE)
    return ds


def records(files):
    ds = tf.data.Dataset.from_tensor_slices(files)
    ds = ds.interleave(
        tf.data.TFRecordDataset, cycle_length=8, num_parallel_calls=tf.data.AUTOTUNE
    )
    return ds.batch(256).prefetch(tf.data.AUTOTUNE)


def shards(files):
    return tf.data.TFRecordDataset(files, num_parallel_reads=AUTOTUNE).prefetch(AUTOTUNE)


def main(paths):
    model = tf.keras.applications.ResNet50(weights=None)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(make_dataset(paths), epochs=10)
    for batch in records(["a.tfrecord", "b.tfrecord"]):
        model.train_on_batch(batch)


if __name__ == "__main__":
    main(["a.jpg", "b.jpg"])
