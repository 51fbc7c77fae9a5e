"""Toy models in sight that EC506-EC508 judged as if they were large (sweep AF): a LeNet
of 6- and 16-channel convolutions under a small nn.Linear head is launch-bound, with
nothing for cuDNN autotuning or tensor cores to speed up. Snippets go through the real
analyser and rules against an 8-GPU, 2-CPU Linux node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import script_results


def results(tmp_path: Path, source: str) -> dict[str, Any]:
    return script_results(tmp_path, source, "train.py")


LENET = """
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda")
batch_size = 4


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 5 * 5)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


model = ConvNet().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=True)
for epoch in range(5):
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_a_lenet_in_sight_is_a_toy(tmp_path: Path) -> None:
    """pytorchTutorial's 14_cnn.py: 6 and 16 channels, a 400x120 head: no EC506/EC507."""
    found = results(tmp_path, LENET)
    assert found["EC506"].status.value == "pass"
    assert "small CNN" in found["EC506"].reason
    assert found["EC507"].status.value == "pass"
    assert found["EC508"].status.value == "pass"


def test_a_cnn_of_64_channels_is_no_toy(tmp_path: Path) -> None:
    source = LENET.replace("nn.Conv2d(6, 16, 5)", "nn.Conv2d(6, 64, 5)")
    found = results(tmp_path, source.replace("16 * 5 * 5", "64 * 5 * 5"))
    assert found["EC506"].status.value == "fail"
    assert found["EC507"].status.value == "fail"


def test_a_narrow_cnn_under_a_wide_head_is_no_toy(tmp_path: Path) -> None:
    source = LENET.replace("(16 * 5 * 5, 120)", "(16 * 5 * 5, 4096)")
    found = results(tmp_path, source.replace("(120, 84)", "(4096, 84)"))
    assert found["EC506"].status.value == "fail"
    assert found["EC507"].status.value == "fail"


def test_a_narrow_cnn_with_another_convolution_is_no_toy(tmp_path: Path) -> None:
    """A convolution whose channels are not in sight (a project's block) may be wide."""
    source = LENET.replace("nn.Conv2d(6, 16, 5)", "nn.Conv2d(6, width, 5)")
    found = results(tmp_path, source.replace("batch_size = 4", "batch_size = 4\nwidth = load()"))
    assert found["EC506"].status.value == "fail"
