"""Settings kept in the config file a script names (config_files.py).

semseg's tool/train.py takes `--config` (default a shipped YAML file), loads it through
util/config.py, which flattens the file's sections into a CfgNode, and builds its loaders
with `num_workers=args.workers`: the worker count is in the YAML file only. A path the
source settles is read (safely: size cap, safe loaders, no traceback); one given only on
the command line, a malformed file or a bomb stays unknown. Each case goes through the
real command line, from the repository's root.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import audit_report, rule_status

from envcheck.scripts import config_files
from envcheck.scripts.project_context import project_root

TARGET = Path(__file__).parent / "fixtures" / "gpu" / "datacenter-8x-a100-foreign-process.json"

TRAIN = """\
import argparse
import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms
from util import config


def get_parser():
    parser = argparse.ArgumentParser()
    parser.add_argument('--config', type=str, {default}help='config file')
    args = parser.parse_args()
    cfg = config.load_cfg_from_cfg_file(args.config)
    return cfg


def main():
    args = get_parser()
    ds = datasets.ImageFolder("data", transform=transforms.ToTensor())
    loader = DataLoader(ds, batch_size=64, num_workers=args.workers, pin_memory=True,
                        persistent_workers=True)
    model = torch.nn.Conv2d(3, 8, 3).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        for x, y in loader:
            loss = model(x.cuda()).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    main()
"""

LOADER = """\
import yaml


class CfgNode(dict):
    def __getattr__(self, name):
        return self[name]


def load_cfg_from_cfg_file(file):
    cfg = {}
    with open(file, 'r') as f:
        cfg_from_file = yaml.safe_load(f)
    for key in cfg_from_file:
        for k, v in cfg_from_file[key].items():
            cfg[k] = v
    cfg = CfgNode(cfg)
    return cfg
"""

YAML = """\
DATA:
  data_root: dataset/ade20k
TRAIN:
  workers: {workers}  # data loader workers
  epochs: 100
"""


def repo(tmp_path: Path, yaml_text: str, default: str = "default='config/ade.yaml', ") -> Path:
    root = tmp_path / "repo"
    (root / "tool").mkdir(parents=True)
    (root / "util").mkdir()
    (root / "config").mkdir()
    (root / ".git").mkdir()
    (root / "util" / "__init__.py").write_text("")
    (root / "util" / "config.py").write_text(LOADER)
    (root / "config" / "ade.yaml").write_text(yaml_text)
    (root / "tool" / "train.py").write_text(TRAIN.format(default=default))
    return root


def audit(root: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    return audit_report(root, "tool/train.py", monkeypatch)


status = rule_status


def test_workers_from_the_yaml_default_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = audit(repo(tmp_path, YAML.format(workers=16)), monkeypatch)
    found = next(f for f in report["findings"] if f["id"] == "EC504")
    assert "TRAIN.workers in config/ade.yaml" in found["message"]
    assert "flattened" in found["message"]


def test_workers_2_from_the_yaml_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = audit(repo(tmp_path, YAML.format(workers=2)), monkeypatch)
    assert status(report, "EC504")[0] == "pass"
    assert status(report, "EC501")[0] == "pass"


def test_a_config_path_without_default_stays_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = audit(repo(tmp_path, YAML.format(workers=16), default=""), monkeypatch)
    assert status(report, "EC504")[0] == "unknown"
    assert status(report, "EC501")[0] == "unknown"


@pytest.mark.parametrize(
    "text",
    [
        "TRAIN:\n  workers: [16\n",  # malformed
        "TRAIN: !!python/object/apply:os.system ['true']\n",  # unsafe tag
        "- just\n- a list\n",  # not a mapping
        "\x00\x01binary",
    ],
)
def test_a_malformed_or_odd_yaml_stays_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    report = audit(repo(tmp_path, text), monkeypatch)
    assert status(report, "EC504")[0] == "unknown"


BOMB = "\n".join(
    ["a: &a ['lol', 'lol', 'lol', 'lol', 'lol', 'lol', 'lol', 'lol', 'lol']"]
    + [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]" for i in range(8)]
    + ["TRAIN:\n  workers: 16\n"]
)


def test_a_yaml_bomb_or_a_huge_file_is_unknown_and_never_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = audit(repo(tmp_path, BOMB), monkeypatch)
    assert status(report, "EC504")[0] == "unknown"
    huge = YAML.format(workers=16) + "".join(f"k{i}: {i}\n" for i in range(40_000))
    assert len(huge) > config_files.MAX_BYTES
    report = audit(repo(tmp_path / "huge", huge), monkeypatch)
    assert status(report, "EC504")[0] == "unknown"
    # both are refused before PyYAML sees them: a parser never expands the bomb
    import yaml

    parsed: list[object] = []
    monkeypatch.setattr(yaml, "load", lambda *args, **kwargs: parsed.append(args))
    for name, text in (("bomb.yaml", BOMB), ("huge.yaml", huge)):
        (tmp_path / name).write_text(text)
        assert config_files.read_config(str(tmp_path / name)) is None
    assert parsed == []
    (tmp_path / "small.yaml").write_text("workers: 2\n")
    config_files.read_config(str(tmp_path / "small.yaml"))
    assert len(parsed) == 1  # the stand-in does see a file that is read


def test_a_key_set_in_two_sections_of_a_flattened_file_is_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = YAML.format(workers=16) + "TEST:\n  workers: 2\n"
    report = audit(repo(tmp_path, text), monkeypatch)
    assert status(report, "EC504") == ("unknown", status(report, "EC504")[1])
    assert "set 2 times" in status(report, "EC504")[1]


def test_a_plain_dict_is_never_read_by_attribute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loader returning the loaded dict itself: `args.workers` cannot be a key of it."""
    root = repo(tmp_path, "workers: 16\n")
    plain = "import yaml\n\ndef load_cfg_from_cfg_file(file):\n"
    plain += "    with open(file) as f:\n        return yaml.safe_load(f)\n"
    (root / "util" / "config.py").write_text(plain)
    report = audit(root, monkeypatch)
    assert status(report, "EC504")[0] == "unknown"


def test_read_config_formats(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"train": {"workers": 4}}')
    (tmp_path / "a.ini").write_text("[DEFAULTS]\nnum_workers = 6\n")
    (tmp_path / "a.txt").write_text("workers: 4\n")
    assert config_files.read_config(str(tmp_path / "a.json")) == {"train": {"workers": 4}}
    assert config_files.read_config(str(tmp_path / "a.ini")) == {"DEFAULTS": {"num_workers": "6"}}
    assert config_files.read_config(str(tmp_path / "a.txt")) is None
    assert config_files.read_config(str(tmp_path / "missing.yaml")) is None


def test_a_path_outside_the_project_is_never_read(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "tool").mkdir(parents=True)
    (root / ".git").mkdir()
    (tmp_path / "secret.yaml").write_text("workers: 1\n")
    script = str(root / "tool" / "train.py")
    for named in ("../secret.yaml", "../../secret.yaml", str(tmp_path / "secret.yaml")):
        assert config_files.config_path(script, named, project_root) is None
    (root / "c.yaml").write_text("workers: 1\n")
    assert config_files.config_path(script, "c.yaml", project_root) == str(root / "c.yaml")


def test_without_pyyaml_yaml_files_are_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "b.yaml").write_text("workers: 4\n")
    config_files._read.cache_clear()
    monkeypatch.setitem(__import__("sys").modules, "yaml", None)  # `import yaml` fails
    try:
        assert config_files.read_config(str(tmp_path / "b.yaml")) is None
    finally:
        config_files._read.cache_clear()


@pytest.mark.parametrize(
    "name", ["a" * 5000 + ".yaml", "loop.yaml", "config/\x01odd.yaml", "config/\udcff.yaml"]
)
def test_a_config_path_the_system_refuses_is_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """A default naming a file whose name is too long, a link to itself, or odd bytes:
    no file is read and the file is still audited (`audit` asserts no analyser error)."""
    root = repo(tmp_path, YAML.format(workers=16), default=f"default={name!r}, ")
    (root / "loop.yaml").symlink_to("loop.yaml")
    report = audit(root, monkeypatch)
    assert status(report, "EC504")[0] == "unknown"
