"""Keras 2 style: ImageDataGenerator, fit_generator, a Python generator with default workers."""

import numpy as np
from keras.preprocessing.image import ImageDataGenerator
from keras.models import Sequential
from keras.utils import Sequence
import pandas as pd


class Batches(Sequence):
    def __len__(self):
        return 100

    def __getitem__(self, index):
        return np.zeros((32, 224, 224, 3)), np.zeros((32,))


def batches():
    while True:
        yield np.zeros((32, 224, 224, 3)), np.zeros((32,))


model = Sequential()
datagen = ImageDataGenerator(rescale=1.0 / 255, horizontal_flip=True)
train = datagen.flow_from_directory("data/train", target_size=(224, 224), batch_size=32)
frame = datagen.flow_from_dataframe(pd.read_csv("labels.csv"), directory="data/images")
model.fit_generator(train, steps_per_epoch=100, epochs=10)
model.fit(batches(), steps_per_epoch=100, epochs=10)
model.fit(Batches(), epochs=10, workers=8, use_multiprocessing=True)
