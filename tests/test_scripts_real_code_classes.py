"""Classes of misreadings found by auditing real training code nobody here wrote (issue 11,
the sweep of 36 files from 22 public repos on 2026-11-24): each case is a small snippet
of the shape seen there, run through the real analyser and the real rules against an
8-GPU, 2-CPU Linux node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import script_results


def results(tmp_path: Path, source: str) -> dict[str, Any]:
    """Every EC5xx result for `source` as train.py, by rule id."""
    return script_results(tmp_path, source, "train.py")


def lines(result: Any) -> list[int]:
    return sorted(f.location.line for f in result.findings)


# timm's NativeScaler as DeiT, MAE, Swin and ConvNeXt call it: backward and step inside
SCALER_WRAPPER = """
import torch


class NativeScaler:
    def __init__(self):
        self._scaler = torch.cuda.amp.GradScaler()

    def __call__(self, loss, optimizer, clip_grad=None, parameters=None):
        self._scaler.scale(loss).backward()
        self._scaler.step(optimizer)
        self._scaler.update()


def train_one_epoch(model, criterion, data_loader, optimizer, loss_scaler):
    model.train()
    for samples, targets in metric_logger.log_every(data_loader, 10, "Epoch"):
        samples = samples.cuda(non_blocking=True)
        targets = targets.cuda(non_blocking=True)
        with torch.cuda.amp.autocast():
            loss = criterion(model(samples), targets)
        loss_value = loss.item()
        optimizer.zero_grad()
        loss_scaler(loss, optimizer, clip_grad=None, parameters=model.parameters())
        torch.cuda.synchronize()


def main(args, model, criterion, data_loader_train, optimizer, loss_scaler):
    for epoch in range(args.start_epoch, args.epochs):
        train_one_epoch(model, criterion, data_loader_train, optimizer, loss_scaler)
"""


def test_a_loss_handed_with_the_optimizer_to_a_scaler_is_the_backward(tmp_path: Path) -> None:
    """`loss_scaler(loss, optimizer, ...)` runs the backward pass and the step: the loop
    around it is a training loop, and its per-step syncs are found there (not in the
    epoch loop, whose `train_one_epoch(..., loss_scaler)` call is no backward)."""
    found = results(tmp_path, SCALER_WRAPPER)
    assert lines(found["EC509"]) == [22, 25]
    assert all("log_every" in f.message for f in found["EC509"].findings)


# The first cell of the Lightning tutorials
HALF_THE_CPUS = """
import os
import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms, models

NUM_WORKERS = int(os.cpu_count() / 2)
ds = datasets.CIFAR10("data", train=True, transform=transforms.ToTensor())
loader = DataLoader(ds, batch_size=256, shuffle=True, num_workers=NUM_WORKERS, pin_memory=True)
model = models.resnet18(num_classes=10).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(30):
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def test_half_the_cpu_count_by_true_division_is_evaluated_on_the_target(tmp_path: Path) -> None:
    """`int(os.cpu_count() / 2)` is 1 worker on 2 CPUs: not persistent over 30 epochs
    (EC503), within the CPUs (EC504 passes, not unknown)."""
    found = results(tmp_path, HALF_THE_CPUS)
    assert lines(found["EC503"]) == [9]
    assert found["EC504"].status.value == "pass"
    bare = HALF_THE_CPUS.replace("int(os.cpu_count() / 2)", "os.cpu_count() / 2")
    # a float reaches DataLoader, which rejects it: nothing to judge it by
    assert results(tmp_path, bare)["EC503"].status.value == "unknown"


# UvA deep-learning course: the global loader is fitted for many epochs inside a function
# and also read once by another
GLOBAL_LOADER_FITTED = """
import torch
import lightning.pytorch as pl
from torch.utils import data
from torchvision import datasets, transforms

train_set = datasets.CIFAR10("data", train=True, transform=transforms.ToTensor())
train_loader = data.DataLoader(train_set, batch_size=256, pin_memory=True, num_workers=2)


def train_cifar(model):
    pl.Trainer(accelerator="auto", devices=1, max_epochs=100).fit(model, train_loader)
    return model


def embed_imgs(model, data_loader):
    embed_list = []
    for imgs, _ in data_loader:
        with torch.no_grad():
            embed_list.append(model.net(imgs.to(model.device)))
    return torch.cat(embed_list, dim=0)


model = train_cifar(AE())
embeds = embed_imgs(model, train_loader)
"""


def test_a_global_loader_a_function_also_reads_is_not_read_once(tmp_path: Path) -> None:
    found = results(tmp_path, GLOBAL_LOADER_FITTED)
    assert lines(found["EC503"]) == [8]
    alone = GLOBAL_LOADER_FITTED.replace(".fit(model, train_loader)", ".fit(model, other)")
    assert results(tmp_path, alone)["EC503"].status.value == "pass"


LOGGED_TENSORS = """
import torch
import wandb
from torch.utils.tensorboard import SummaryWriter
from torchvision import models

writer = SummaryWriter()
model = models.resnet18(num_classes=100).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = torch.utils.data.DataLoader(dataset, batch_size=64, num_workers=2)
n_iter = 0
for epoch in range(10):
    for images, labels in loader:
        loss = torch.nn.functional.cross_entropy(model(images.cuda()), labels.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()
        n_iter += 1
        writer.add_scalar("grad_norm", model.fc.weight.grad.norm(), n_iter)
        writer.add_scalar("Train/loss", loss, n_iter)
        wandb.log({"train/loss": loss})
        writer.add_scalar("Train/lr", opt.param_groups[0]["lr"], n_iter)
        wandb.log({"epoch": epoch})
"""


def test_loggers_that_turn_a_tensor_into_a_number_sync(tmp_path: Path) -> None:
    """TensorBoard's add_scalar and wandb.log call `.item()` on a tensor they are given:
    one host sync per call, every step (a Python number logged is no sync)."""
    found = results(tmp_path, LOGGED_TENSORS)
    assert lines(found["EC509"]) == [19, 20, 21]
    assert "writer.add_scalar() converts a tensor" in found["EC509"].findings[0].message


OPT_IN_LOGGER = """
import argparse
import torch

try:
    import wandb
except ImportError:
    wandb = None

parser = argparse.ArgumentParser()
parser.add_argument("--wandb", action="store_true")
args = parser.parse_args()
loader = torch.utils.data.DataLoader(dataset, batch_size=64, num_workers=2)
model = Net().cuda()
for epoch in range(10):
    for x in loader:
        loss = model(x.cuda()).mean()
        loss.backward()
        if wandb and args.wandb:
            wandb.log({"loss": loss})
"""


def test_a_logger_behind_an_opt_in_flag_is_off_at_the_defaults(tmp_path: Path) -> None:
    """`if wandb and args.wandb:` is false unless --wandb is passed, whatever `wandb` is
    (the module where installed: the `wandb = None` fallback does not decide it)."""
    assert results(tmp_path, OPT_IN_LOGGER)["EC509"].status.value == "pass"
    on = OPT_IN_LOGGER.replace('action="store_true"', 'action="store_true", default=True')
    assert lines(results(tmp_path, on)["EC509"]) == [20]


HELPER_GIVEN_WORKERS = """
import argparse
import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms, models


def _create_data_loader(img_path, batch_size, n_cpu):
    dataset = datasets.ImageFolder(img_path, transforms.ToTensor())
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=n_cpu,
                      pin_memory=True)


parser = argparse.ArgumentParser()
parser.add_argument("--n_cpu", type=int, default=8)
args = parser.parse_args()
dataloader = _create_data_loader("data/train", 64, args.n_cpu)
model = models.resnet50().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(90):
    for imgs, targets in dataloader:
        loss = torch.nn.functional.cross_entropy(model(imgs.cuda()), targets.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def test_a_helper_of_the_file_is_judged_with_what_its_one_call_passes(tmp_path: Path) -> None:
    """`_create_data_loader(..., args.n_cpu)`: --n_cpu defaults to 8, above 2 CPUs."""
    found = results(tmp_path, HELPER_GIVEN_WORKERS)
    assert lines(found["EC504"]) == [10]
    assert "argparse --n_cpu default" in found["EC504"].findings[0].message
    constant = HELPER_GIVEN_WORKERS.replace("64, args.n_cpu)", "64, 1)")
    found = results(tmp_path, constant)
    assert found["EC504"].status.value == "pass"
    assert "n_cpu=1 passed by the file's call" in found["EC503"].findings[0].message
    twice = HELPER_GIVEN_WORKERS.replace(
        "model = models", 'other = _create_data_loader("data/val", 64, 0)\nmodel = models'
    )
    # two calls passing different counts: the helper's loader is not judged from either
    assert results(tmp_path, twice)["EC504"].status.value == "unknown"


LOGGER_GIVEN_WORKERS = """
import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms, models
from utils.utils import show_config

if __name__ == "__main__":
    num_workers = 4
    show_config(batch_size=16, num_workers=num_workers, lr=1e-3)
    ds = datasets.ImageFolder("data/train", transforms.ToTensor())
    gen = DataLoader(ds, batch_size=16, shuffle=True, num_workers=num_workers, pin_memory=True)
    model = models.resnet50().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    for epoch in range(100):
        for x, y in gen:
            loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
"""


def test_a_call_whose_result_is_dropped_builds_no_loader(tmp_path: Path) -> None:
    """bubbliiiing's `show_config(num_workers=...)` prints the settings: only the real
    DataLoader is judged, and its pinning is seen."""
    found = results(tmp_path, LOGGER_GIVEN_WORKERS)
    assert lines(found["EC504"]) == [11]
    assert "num_workers=num_workers (= 4)" in found["EC504"].findings[0].message
    assert found["EC502"].status.value == "pass"


EMPTY_KWARGS_DEFAULT = """
import torch
from torch.utils.data import DataLoader


def training_loop(dataset, batch_size=32, data_loader_kwargs={}, total_steps=10000):
    it = iter(DataLoader(dataset, batch_size=batch_size, shuffle=True, **data_loader_kwargs))
    model = Net().cuda()
    opt = torch.optim.Adam(model.parameters())
    for step in range(total_steps):
        x, y = next(it)
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        loss.backward()
        opt.step()
"""


def test_an_empty_kwargs_default_is_the_callers_slot(tmp_path: Path) -> None:
    """StyleGAN2-ADA's `training_loop(data_loader_kwargs={})`: train.py passes the
    workers and pinning; the empty default says nothing about them."""
    found = results(tmp_path, EMPTY_KWARGS_DEFAULT)
    for rule in ("EC501", "EC502"):
        assert found[rule].status.value == "unknown", rule
        assert "may be set through **data_loader_kwargs" in found[rule].reason


TOKENISED_IN_SETUP = """
import datasets
import lightning.pytorch as pl
from torch.utils.data import DataLoader
from transformers import AutoModelForSequenceClassification, AutoTokenizer


class GLUEDataModule(pl.LightningDataModule):
    def __init__(self, model_name="distilbert-base-uncased", batch_size=32):
        super().__init__()
        self.tokenizer = AutoTokenizer.from_pretrained(model_name)
        self.batch_size = batch_size

    def convert_to_features(self, ex):
        return self.tokenizer(ex["sentence1"], ex["sentence2"], truncation=True)

    def setup(self, stage=None):
        self.dataset = datasets.load_dataset("glue", "mrpc")
        for split in self.dataset.keys():
            self.dataset[split] = self.dataset[split].map(self.convert_to_features, batched=True)
            self.dataset[split].set_format(type="torch")

    def train_dataloader(self):
        return DataLoader(self.dataset["train"], batch_size=self.batch_size, shuffle=True)


class Model(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        return self.model(**batch).loss


pl.Trainer(accelerator="auto", devices=1, max_epochs=3).fit(Model(), datamodule=GLUEDataModule())
"""


def test_text_tokenised_in_setup_by_a_method_of_any_name(tmp_path: Path) -> None:
    """Lightning's GLUE tutorial: `self.dataset[split].map(self.convert_to_features)`,
    whose body calls the tokenizer: batches of token ids from memory."""
    found = results(tmp_path, TOKENISED_IN_SETUP)
    for rule in ("EC501", "EC502"):
        assert found[rule].status.value == "pass", rule
        assert "text tokenised up front" in found[rule].reason


# simpleT5: setup() builds a tokenizer-taking Dataset into self.train_dataset; the hooks
# read the attribute
TOKENISED_PER_ITEM_IN_SETUP = """
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, Dataset
from transformers import T5ForConditionalGeneration, T5TokenizerFast


class TextDataset(Dataset):
    def __init__(self, data, tokenizer, max_len=512):
        self.data, self.tokenizer, self.max_len = data, tokenizer, max_len

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        row = self.data.iloc[index]
        enc = self.tokenizer(row["source_text"], max_length=self.max_len, return_tensors="pt")
        return dict(input_ids=enc["input_ids"].flatten())


class DataModule(pl.LightningDataModule):
    def __init__(self, train_df, tokenizer, batch_size=8, num_workers=2):
        super().__init__()
        self.train_df, self.tokenizer = train_df, tokenizer
        self.batch_size, self.num_workers = batch_size, num_workers

    def setup(self, stage=None):
        self.train_dataset = TextDataset(self.train_df, self.tokenizer)

    def train_dataloader(self):
        return DataLoader(
            self.train_dataset, batch_size=self.batch_size, num_workers=self.num_workers
        )


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.model = T5ForConditionalGeneration.from_pretrained("t5-base")

    def training_step(self, batch, batch_idx):
        return self.model(input_ids=batch["input_ids"], labels=batch["input_ids"]).loss


tok = T5TokenizerFast.from_pretrained("t5-base")
pl.Trainer(accelerator="gpu", devices=1, max_epochs=3).fit(
    Model(), datamodule=DataModule(train_df, tok)
)
"""


def test_text_tokenised_per_item_by_a_dataset_built_in_setup(tmp_path: Path) -> None:
    """A loader over `self.train_dataset`, which setup() builds from text and the
    tokenizer: batches of token ids, a few KB, not worth pinning. An attribute also
    assigned a dataset of another kind stays undecided."""
    found = results(tmp_path, TOKENISED_PER_ITEM_IN_SETUP)
    assert found["EC502"].status.value == "pass"
    assert "handed to a tokenizer" in found["EC502"].reason
    images = TOKENISED_PER_ITEM_IN_SETUP.replace(
        "        self.train_dataset = TextDataset(self.train_df, self.tokenizer)\n",
        "        self.train_dataset = TextDataset(self.train_df, self.tokenizer)\n"
        "        if stage == 'images':\n"
        "            self.train_dataset = ImageFolder('data')\n",
    )
    assert images != TOKENISED_PER_ITEM_IN_SETUP
    assert results(tmp_path, images)["EC502"].status.value != "pass"


def test_a_lambda_calling_a_module_tokenizer_tokenises(tmp_path: Path) -> None:
    source = (
        "import torch\n"
        "from datasets import load_dataset\n"
        "from transformers import AutoTokenizer\n"
        "tok = AutoTokenizer.from_pretrained('bert-base-uncased')\n"
        "raw = load_dataset('imdb')\n"
        "ds = raw.map(lambda ex: tok(ex['text'], truncation=True), batched=True)\n"
        "loader = torch.utils.data.DataLoader(ds['train'], batch_size=32)\n"
        "model = Net().cuda()\n"
        "for epoch in range(3):\n"
        "    for batch in loader:\n"
        "        model(**{k: v.cuda() for k, v in batch.items()}).loss.backward()\n"
    )
    found = results(tmp_path, source)
    assert found["EC501"].status.value == "pass"
    images = source.replace("tok(ex['text'], truncation=True)", "augment(ex['image'])")
    assert results(tmp_path, images)["EC501"].status.value == "fail"


STEP_OUT_OF_SIGHT = """
import torch
from torch.utils import data as data_
from trainer import FasterRCNNTrainer
from model import FasterRCNNVGG16

dataset = Dataset(opt)
dataloader = data_.DataLoader(dataset, batch_size=1, shuffle=True, num_workers=2)
trainer = FasterRCNNTrainer(FasterRCNNVGG16()).cuda()
for epoch in range(14):
    for ii, (img, bbox_, label_, scale) in enumerate(dataloader):
        img, bbox, label = img.cuda().float(), bbox_.cuda(), label_.cuda()
        trainer.train_step(img, bbox, label, scale)
"""


def test_a_training_step_run_by_an_object_of_another_file(tmp_path: Path) -> None:
    """simple-faster-rcnn: `trainer.train_step(...)` runs the step (and any autocast) in
    trainer.py: the file trains on the GPU, its precision is not known here."""
    found = results(tmp_path, STEP_OUT_OF_SIGHT)
    assert found["EC507"].status.value == "unknown"
    assert "trainer.train_step() (not in this file)" in found["EC507"].reason


TOKENISED_BY_CALLERS = """
import datasets
import torch
import torchtext

train_data, test_data = datasets.load_dataset("imdb", split=["train", "test"])
tokenizer = torchtext.data.utils.get_tokenizer("basic_english")


def tokenize_example(example, tokenizer, max_length):
    return {"tokens": tokenizer(example["text"])[:max_length]}


train_data = train_data.map(tokenize_example, fn_kwargs={"tokenizer": tokenizer, "max_length": 256})
test_data = test_data.map(tokenize_example, fn_kwargs={"tokenizer": tokenizer, "max_length": 256})
train_data = train_data.with_format(type="torch", columns=["ids", "label"])
test_data = test_data.with_format(type="torch", columns=["ids", "label"])


def get_data_loader(dataset, batch_size, shuffle=False):
    data_loader = torch.utils.data.DataLoader(dataset=dataset, batch_size=batch_size)
    return data_loader


train_data_loader = get_data_loader(train_data, 512, shuffle=True)
test_data_loader = get_data_loader(test_data, 512)
model = Net().cuda()
for epoch in range(10):
    for batch in train_data_loader:
        model(batch["ids"].cuda()).sum().backward()
"""


def test_a_loader_helper_every_call_gives_tokenised_text(tmp_path: Path) -> None:
    """bentrevett's sentiment notebooks: `get_data_loader(train_data, ...)` for every split
    of a dataset tokenised up front: no workers or pinning to ask for."""
    found = results(tmp_path, TOKENISED_BY_CALLERS)
    for rule in ("EC501", "EC502"):
        assert found[rule].status.value == "pass", rule
    images = TOKENISED_BY_CALLERS + "images = get_data_loader(ImageFolder('data'), 64)\n"
    assert results(tmp_path, images)["EC501"].status.value == "fail"


ESTIMATOR_OVER_ARRAYS = '''
import numpy as np
import torch
from sklearn.utils import check_array
from .base_dataset import TorchDataset


class Detector:
    def fit(self, X, y=None):
        """Fit the detector.

        Parameters
        ----------
        X : numpy array of shape (n_samples, n_features)
        """
        X = check_array(X)
        self.X_mean = np.mean(X, axis=0)
        train_set = TorchDataset(X=X, y=None, mean=self.X_mean)
        loader = torch.utils.data.DataLoader(dataset=train_set, batch_size=32, shuffle=True)
        self.model = self.build_model().to("cuda")
        for epoch in range(10):
            for batch in loader:
                self.model(batch.to("cuda")).sum().backward()

    def decision_function(self, X):
        X = check_array(X)
        dataset = TorchDataset(X=X, y=None, std=self.X_std)
        loader = torch.utils.data.DataLoader(dataset=dataset, batch_size=32)
        return [self.model(b.to("cuda")) for b in loader]
'''


def test_a_dataset_given_arrays_by_keyword_is_in_memory(tmp_path: Path) -> None:
    """pyod: `TorchDataset(X=X, y=None, mean=self.X_mean)` over `X = check_array(X)`:
    rows of an in-memory matrix, nothing to decode in workers."""
    found = results(tmp_path, ESTIMATOR_OVER_ARRAYS)
    assert found["EC501"].status.value == "pass"
    paths = ESTIMATOR_OVER_ARRAYS.replace("X = check_array(X)\n        self.X_mean", "self.X_mean")
    paths = paths.replace("X : numpy array of shape (n_samples, n_features)", "X : list")
    assert lines(results(tmp_path, paths)["EC501"]) == [18]


VQGAN_TRAINER = """
import torch
from torch import nn
from torch.utils.data import DataLoader
from dalle2_pytorch.vqgan_vae import VQGanVAE


def cycle(dl):
    while True:
        for data in dl:
            yield data


class VQGanVAETrainer(nn.Module):
    def __init__(self, vae, ds, valid_ds, batch_size=16):
        super().__init__()
        assert isinstance(vae, VQGanVAE), "vae must be instance of VQGanVAE"
        self.vae = vae
        self.dl = cycle(DataLoader(ds, batch_size=batch_size, shuffle=True))
        self.valid_dl = cycle(DataLoader(valid_ds, batch_size=batch_size, shuffle=True))

    def train_step(self):
        device = next(self.vae.parameters()).device
        img = next(self.dl).to(device)
        loss = self.vae(img)
        loss.backward()
"""


def test_a_loader_stored_and_never_read_is_not_judged(tmp_path: Path) -> None:
    """dalle2's VQGAN trainer builds `self.valid_dl` and validates on `self.dl`: no
    worker ever starts for the unread loader; the trainer's model class, asserted with
    isinstance, is a convolutional VQGAN (EC506)."""
    found = results(tmp_path, VQGAN_TRAINER)
    assert lines(found["EC501"]) == [19]
    assert lines(found["EC506"]) != []
    read = VQGAN_TRAINER + "\n    def validate(self):\n        return next(self.valid_dl)\n"
    assert lines(results(tmp_path, read)["EC501"]) == [19, 20]


PIPELINE_FOR_ANOTHER_FILE = """
import tensorflow as tf


def get_dataset(paths, labels):
    images = tf.data.Dataset.from_tensor_slices(paths).map(load_and_preprocess_image)
    return tf.data.Dataset.zip((images, tf.data.Dataset.from_tensor_slices(labels)))


def generate_datasets(paths, labels, batch_size):
    train_dataset = get_dataset(paths, labels)
    train_dataset = train_dataset.shuffle(buffer_size=1000).batch(batch_size=batch_size)
    return train_dataset, len(paths)
"""


def test_a_pipeline_consumed_out_of_this_file_is_unknown_not_prefetched(tmp_path: Path) -> None:
    """TensorFlow2.0_ResNet's prepare_data.py: train.py iterates what
    generate_datasets() returns; here nothing consumes it, so EC512 cannot say that
    "each ends with prefetch" (it does not): it is unknown, naming the pipeline."""
    found = results(tmp_path, PIPELINE_FOR_ANOTHER_FILE)
    assert found["EC512"].status.value == "unknown"
    assert "train.py:11: ends with .batch(), and nothing in this file consumes it" in (
        found["EC512"].reason
    )


HANDED_MODEL = """
import torch


class Fusion:
    def __init__(self, estimator, device="cuda"):
        self.estimator = estimator
        self.device = device

    def fit(self, train_loader, epochs=100):
        model = self.estimator.to(self.device)
        optimizer = torch.optim.Adam(model.parameters())
        for epoch in range(epochs):
            for data, target in train_loader:
                loss = torch.nn.functional.cross_entropy(model(data.to(self.device)), target)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
"""


def test_float32_training_of_a_model_out_of_sight_words_the_gain_conditionally(
    tmp_path: Path,
) -> None:
    """torchensemble's fusion trainer trains whatever estimator it is given: float32 is a
    fact, the size of the gain is not, and the message says so."""
    [finding] = results(tmp_path, HANDED_MODEL)["EC507"].findings
    assert "the model is built out of this file" in finding.message
    built = HANDED_MODEL.replace("self.estimator.to(", "torchvision.models.resnet50().to(")
    [finding] = results(tmp_path, "import torchvision\n" + built)["EC507"].findings
    assert "built out of this file" not in finding.message
