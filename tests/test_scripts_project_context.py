"""The project modules a named script imports, read as context (project_context.py).

`envcheck scripts tools/train.py` inside a repository judges train.py with what Python
would import beside it: a yacs tree, a config class, a dict or a constant in configs/
gives `num_workers` its value, where before it stayed unknown. The context files are
never reported on, and nothing outside the project (no marker folder above it, an
installed package) is read. Each case goes through the real command line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from envcheck.cli import app
from envcheck.scripts.project_context import (
    Import,
    context_files,
    module_imports,
    resolve_import,
    search_folders,
)

TARGET = Path(__file__).parent / "fixtures" / "gpu" / "datacenter-8x-a100-foreign-process.json"

TRAIN = """\
import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms
{imports}

def main():
    ds = datasets.ImageFolder("data", transform=transforms.ToTensor())
    loader = DataLoader(ds, batch_size=64, num_workers={workers}, pin_memory=True)
    model = torch.nn.Conv2d(3, 8, 3).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(10):
        for x, y in loader:
            loss = model(x.cuda()).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

if __name__ == "__main__":
    main()
"""


def audit(*paths: Path, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """`envcheck scripts PATHS` run from the folder `cwd`, as a user in the repository."""
    args = ["scripts", "--format", "json", "--exit-zero", "--target", str(TARGET)]
    monkeypatch.chdir(cwd)
    result = CliRunner().invoke(app, [*args, *(str(p) for p in paths)])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def workers_finding(report: dict[str, Any]) -> dict[str, Any] | None:
    return next((f for f in report["findings"] if f["id"] in ("EC501", "EC504")), None)


def repo(tmp_path: Path, files: dict[str, str], imports: str, workers: str) -> Path:
    root = tmp_path / "repo"
    (root / "tools").mkdir(parents=True)
    (root / "setup.py").write_text("")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "tools" / "train.py").write_text(TRAIN.format(imports=imports, workers=workers))
    return root


CASES = {
    "yacs tree in a package": (
        {
            "configs/__init__.py": "from .defaults import _C as cfg\n",
            "configs/defaults.py": (
                "from yacs.config import CfgNode as CN\n_C = CN()\n_C.DATALOADER = CN()\n"
                "_C.DATALOADER.NUM_WORKERS = {n}\n"
            ),
        },
        "from configs import cfg",
        "cfg.DATALOADER.NUM_WORKERS",
    ),
    "config class instance": (
        {"config.py": "class Config:\n    num_workers = {n}\n    lr = 0.1\ncfg = Config()\n"},
        "from config import cfg",
        "cfg.num_workers",
    ),
    "dataclass": (
        {
            "config.py": (
                "from dataclasses import dataclass\n@dataclass\nclass TrainConfig:\n"
                "    num_workers: int = {n}\n"
            )
        },
        "from config import TrainConfig\nargs = TrainConfig()",
        "args.num_workers",
    ),
    "dict literal": (
        {"config.py": "MODEL_CONFIG = {{'num_workers': {n}, 'lr': 0.1}}\n"},
        "from config import MODEL_CONFIG",
        "MODEL_CONFIG['num_workers']",
    ),
    "constant through a module alias": (
        {"settings.py": "NUM_WORKERS = {n}\n"},
        "import settings as S",
        "S.NUM_WORKERS",
    ),
    "constant imported by name": (
        {"settings.py": "NUM_WORKERS = {n}\n"},
        "from settings import NUM_WORKERS",
        "NUM_WORKERS",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("n, rule", [(0, "EC501"), (8, "EC504"), (2, None)])
def test_a_worker_count_set_in_an_imported_project_module(
    tmp_path: Path, case: str, n: int, rule: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    files, imports, workers = CASES[case]
    root = repo(tmp_path, {k: v.format(n=n) for k, v in files.items()}, imports, workers)
    report = audit(Path("tools/train.py"), cwd=root, monkeypatch=monkeypatch)
    found = workers_finding(report)
    assert (found["id"] if found else None) == rule
    if found:
        assert found["location"]["path"] == "tools/train.py"  # never a context file's
    # the context files are named in the facts, and never audited
    assert report["facts"]["scripts"]["files"] == ["tools/train.py"]
    assert report["facts"]["scripts"]["context"]


def test_without_the_project_module_the_count_stays_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same script copied alone: nothing to read, so no verdict (never a guess)."""
    files, imports, workers = CASES["config class instance"]
    root = repo(tmp_path, {k: v.format(n=0) for k, v in files.items()}, imports, workers)
    (root / "config.py").unlink()
    report = audit(Path("tools/train.py"), cwd=root, monkeypatch=monkeypatch)
    assert workers_finding(report) is None
    assert "context" not in report["facts"]["scripts"]
    assert "EC501" in {c["id"] for c in report["checks"] if c["status"] == "unknown"}


def test_given_from_inside_the_folder_the_context_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files, imports, workers = CASES["yacs tree in a package"]
    root = repo(tmp_path, {k: v.format(n=0) for k, v in files.items()}, imports, workers)
    report = audit(Path("train.py"), cwd=root / "tools", monkeypatch=monkeypatch)
    assert workers_finding(report)["id"] == "EC501"


def test_nothing_above_the_project_root_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A config.py beside the project (above its marker) is another project's."""
    files, imports, workers = CASES["config class instance"]
    root = repo(tmp_path, {}, imports, workers)
    (tmp_path / "config.py").write_text(files["config.py"].format(n=0))
    (root / "tools" / "setup.cfg").write_text("")  # tools/ is the project's root now
    report = audit(Path("tools/train.py"), cwd=root, monkeypatch=monkeypatch)
    assert workers_finding(report) is None


def test_a_context_file_that_does_not_parse_is_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = repo(tmp_path, {"config.py": "def broken(:\n"}, "from config import cfg", "cfg.w")
    report = audit(Path("tools/train.py"), cwd=root, monkeypatch=monkeypatch)
    assert report["facts"]["scripts"]["errors"] == []  # not the user's named file
    assert workers_finding(report) is None


def test_relative_imports_resolve_from_the_importers_package(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "pyproject.toml").write_text("")  # the project's root
    (pkg / "sub" / "opts.py").write_text("")
    (pkg / "util.py").write_text("")
    script = pkg / "sub" / "train.py"
    script.write_text("")
    folders = search_folders(script)
    assert resolve_import(script, Import("opts", 1), folders) == pkg / "sub" / "opts.py"
    assert resolve_import(script, Import("util", 2), folders) == pkg / "util.py"
    assert resolve_import(script, Import("util"), folders) == pkg / "util.py"  # a level up
    assert resolve_import(script, Import("os"), folders) is None


def test_module_imports_names_packages_and_their_members() -> None:
    import ast

    module = ast.parse("import a.b\nfrom c import d as e\nfrom . import f\nfrom .g import *\n")
    assert module_imports(module) == [
        Import("a.b"),
        Import("c"),
        Import("c.d"),
        Import("f", 1),
        Import("g", 1),
    ]


def test_imports_are_followed_a_bounded_depth(tmp_path: Path) -> None:
    """A chain of imports m0 -> m1 -> ... is followed MAX_DEPTH files deep, no further,
    and an import cycle ends."""
    import ast

    from envcheck.scripts import project_context

    (tmp_path / "setup.py").write_text("")
    for i in range(6):
        (tmp_path / f"m{i}.py").write_text(f"import m{i + 1}\nimport m0\n")
    script = tmp_path / "train.py"
    script.write_text("import m0\n")
    found = context_files([(script, "train.py", ast.parse("import m0\n"))], [script])
    assert [shown for shown, _, _ in found.files] == [
        f"m{i}.py" for i in range(project_context.MAX_DEPTH)
    ]


MODEL_TRAIN = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from models import Segmenter
model = Segmenter().cuda()
opt = torch.optim.Adam(model.parameters())
loader = DataLoader(TensorDataset(torch.randn(100, 3, 32, 32)), batch_size=8)
for epoch in range(5):
    for (x,) in loader:
        loss = model(x.cuda()).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""
BLOCKS = {
    "conv": "self.c = nn.Conv2d(3, 3, 3)",
    "matmul": "self.c = nn.LSTM(256, 1024, num_layers=4)",
    "unseen": "self.c = Backbone()\n        self.h = nn.Linear(2048, 10)",
}


@pytest.mark.parametrize("layers", sorted(BLOCKS))
def test_a_model_class_of_the_project_is_judged_by_its_layers(
    tmp_path: Path, layers: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`from models import Segmenter`: models/__init__.py re-exports it from .seg, where a
    Block of its own module builds the layers. Convolutions make EC506 apply; an LSTM
    makes it a matmul model (EC508 decided); a Linear head on a backbone out of sight
    decides nothing."""
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("from .seg import Segmenter\n")
    (tmp_path / "models" / "seg.py").write_text(
        "import torch.nn as nn\nfrom .backbones import Backbone\n"
        "class Block(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        f"        {BLOCKS[layers]}\n"
        "class Segmenter(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.b = Block()\n"
    )
    (tmp_path / "train.py").write_text(MODEL_TRAIN)
    report = audit(Path("train.py"), cwd=tmp_path, monkeypatch=monkeypatch)
    status = {c["id"]: c["status"] for c in report["checks"]}
    found = {f["id"] for f in report["findings"]}
    assert ("EC506" in found) == (layers == "conv")
    assert (status["EC506"] == "unknown") == (layers == "unseen")
    assert (status["EC508"] == "unknown") == (layers == "unseen")


@pytest.mark.parametrize("hostile", ["fifo", "loop", "binary", "directory"])
def test_a_hostile_module_beside_the_script_is_skipped_never_read(
    tmp_path: Path, hostile: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """config.py as a FIFO (reading it would block), a symbolic link to itself, binary
    bytes, or a folder named like a module: no context from it, the script still audited,
    and no error for a file the user did not name."""
    import os

    root = repo(tmp_path, {}, "from config import cfg", "cfg.num_workers")
    target = root / "config.py"
    if hostile == "fifo":
        os.mkfifo(target)
    elif hostile == "loop":
        target.symlink_to(target)
    elif hostile == "binary":
        target.write_bytes(b"\x00\x01\x02" * 100)
    else:
        target.mkdir()
    report = audit(Path("tools/train.py"), cwd=root, monkeypatch=monkeypatch)
    assert report["facts"]["scripts"]["files"] == ["tools/train.py"]
    assert report["facts"]["scripts"]["errors"] == []
    assert "context" not in report["facts"]["scripts"]
    assert workers_finding(report) is None


def test_library_folders_only_for_a_script_that_extends_sys_path(tmp_path: Path) -> None:
    """CenterNet's src/main.py: `import _init_paths` puts src/lib on sys.path, then `from
    opts import opts` is src/lib/opts.py. Without a path setup, Python would not find it."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "src" / "lib").mkdir(parents=True)
    script = tmp_path / "src" / "main.py"
    import ast

    plain = search_folders(script, widened=False)
    assert tmp_path / "src" / "lib" not in plain
    assert plain == [tmp_path / "src", tmp_path]
    widened = search_folders(script, widened=True)
    assert tmp_path / "src" / "lib" in widened
    from envcheck.scripts.project_context import extends_sys_path

    assert extends_sys_path(ast.parse("import _init_paths\nfrom opts import opts\n"))
    assert extends_sys_path(ast.parse("import sys\nsys.path.insert(0, 'lib')\n"))
    assert not extends_sys_path(ast.parse("from opts import opts\n"))


def test_without_a_project_root_only_the_script_folder_is_searched(tmp_path: Path) -> None:
    """No .git, pyproject.toml, setup.py, setup.cfg or requirements.txt within 3 folders
    up: the folders above may hold anything (a home folder's stray config.py)."""
    script = tmp_path / "a" / "b" / "train.py"
    assert search_folders(script) == [tmp_path / "a" / "b"]
    (tmp_path / "a" / "requirements.txt").parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "a" / "requirements.txt").write_text("torch\n")
    assert search_folders(script) == [tmp_path / "a" / "b", tmp_path / "a"]


OPTS = """\
import argparse

class opts(object):
    def __init__(self):
        self.parser = argparse.ArgumentParser()
        self.parser.add_argument('--num_workers', type=int, default={n})

    def parse(self):
        return self.parser.parse_args()
"""
INIT_PATHS = {  # style -> (the library folder, the module that puts it on sys.path)
    "os.path helper": (
        "libs/core",
        "import os.path as osp\nimport sys\n\ndef add_path(path):\n"
        "    if path not in sys.path:\n        sys.path.insert(0, path)\n\n"
        "this_dir = osp.dirname(__file__)\nlib_path = osp.join(this_dir, '..', 'libs', 'core')\n"
        "add_path(lib_path)\n",
    ),
    "pathlib": (
        "libs",
        "import sys\nfrom pathlib import Path\n"
        "sys.path.append(str(Path(__file__).resolve().parent.parent / 'libs'))\n",
    ),
}


@pytest.mark.parametrize("style", sorted(INIT_PATHS))
@pytest.mark.parametrize("n, rule", [(0, "EC501"), (8, "EC504")])
def test_options_of_a_class_in_a_folder_a_path_module_adds(
    tmp_path: Path, style: str, n: int, rule: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CenterNet's layout: `import _init_paths` puts a library folder on sys.path, then
    `from opts import opts` loads the parser a class builds in `__init__`; `args =
    opts().parse()`. The folder is where the path module's source says (a helper
    `add_path(lib_path)`, or pathlib), not a guess: `libs/` is no library name."""
    lib, init_paths = INIT_PATHS[style]
    root = tmp_path / "repo"
    (root / lib).mkdir(parents=True)
    (root / "setup.py").write_text("")
    (root / lib / "opts.py").write_text(OPTS.format(n=n))
    (root / "tools").mkdir()
    (root / "tools" / "_init_paths.py").write_text(init_paths)
    imports = "import _init_paths\nfrom opts import opts\nargs = opts().parse()"
    train = TRAIN.format(imports=imports, workers="args.num_workers")
    (root / "tools" / "train.py").write_text(train)
    report = audit(Path("tools/train.py"), cwd=root, monkeypatch=monkeypatch)
    found = workers_finding(report)
    assert found is not None and found["id"] == rule
    assert f"{lib}/opts.py" in found["message"]


def test_a_library_folder_beside_the_script_is_searched(tmp_path: Path) -> None:
    """src/main.py with src/lib/, in a script that extends sys.path in a way its source does
    not settle: the folder an `_init_paths` of the project adds."""
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "src" / "lib").mkdir(parents=True)
    (tmp_path / "src" / "lib" / "opts.py").write_text("")
    script = tmp_path / "src" / "main.py"
    script.write_text("")
    found = resolve_import(script, Import("opts"), search_folders(script, widened=True))
    assert found == tmp_path / "src" / "lib" / "opts.py"
    assert resolve_import(script, Import("opts"), search_folders(script)) is None


def test_a_folder_computed_at_run_time_is_not_searched(tmp_path: Path) -> None:
    """`sys.path.insert(0, os.environ['LIB'])`, a path relative to the working folder:
    which folder is not in the source."""
    import ast

    from envcheck.scripts.project_context import added_folders

    (tmp_path / "lib2").mkdir()
    script = tmp_path / "train.py"
    text = "import os, sys\nsys.path.insert(0, os.environ['LIB'])\nsys.path.append('lib2')\n"
    assert added_folders(script, ast.parse(text)) == []
    text = "import os, sys\nsys.path.append(os.path.join(os.path.dirname(__file__), 'lib2'))\n"
    assert added_folders(script, ast.parse(text)) == [(False, tmp_path / "lib2")]


def test_sys_path_0_is_the_entry_script_s_own_folder(tmp_path: Path) -> None:
    """audioset_tagging_cnn's `sys.path.insert(1, os.path.join(sys.path[0], '../utils'))`:
    Python sets sys.path[0] to the folder of the script it runs, so the folder is settled
    for the script named; a module it imports sees the entry point's folder instead, and
    takes none."""
    import ast

    from envcheck.scripts.project_context import added_folders

    (tmp_path / "utils").mkdir()
    (tmp_path / "pytorch").mkdir()
    script = tmp_path / "pytorch" / "main.py"
    text = "import os, sys\nsys.path.insert(1, os.path.join(sys.path[0], '../utils'))\n"
    assert added_folders(script, ast.parse(text), entry=True) == [(True, tmp_path / "utils")]
    assert added_folders(script, ast.parse(text)) == []


ENTRY = """\
import argparse
from trainer import train

parser = argparse.ArgumentParser()
parser.add_argument('--workers', type=int, default={n})
args = parser.parse_args()
train(args)
"""
TRAINER = """\
import torch
from torch.utils.data import DataLoader
from torchvision import datasets

def train(args):
    ds = datasets.ImageFolder("data")
    loader = DataLoader(ds, batch_size=64, num_workers=args.workers, pin_memory=True)
    model = torch.nn.Conv2d(3, 8, 3).cuda()
    for epoch in range(10):
        for x, y in loader:
            model(x.cuda()).mean().backward()
"""


def test_the_entry_point_importing_a_named_module_gives_its_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """trainer.py named alone reads `args.workers`; train.py beside it imports trainer and
    parses --workers (default 8): the run's value, 8 workers on 2 CPUs (EC504). With a
    second script importing trainer with another default, which one runs is not in
    sight: unknown."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(ENTRY.format(n=8))
    (tmp_path / "trainer.py").write_text(TRAINER)
    (tmp_path / "notes.py").write_text("# from trainer import train, in a comment only\n")
    # a library module re-exporting it is no entry point: it sets no run's options
    (tmp_path / "api.py").write_text("from trainer import train\n__all__ = ['train']\n")
    report = audit(Path("trainer.py"), cwd=tmp_path, monkeypatch=monkeypatch)
    found = workers_finding(report)
    assert found is not None and found["id"] == "EC504"
    assert "train.py" in found["message"]
    assert report["facts"]["scripts"]["context"] == ["train.py"]
    (tmp_path / "demo.py").write_text(ENTRY.format(n=0))
    report = audit(Path("trainer.py"), cwd=tmp_path, monkeypatch=monkeypatch)
    assert workers_finding(report) is None  # read for their imports, not their options
    assert sorted(report["facts"]["scripts"]["context"]) == ["demo.py", "train.py"]


BUILD = """import torch
from torch.utils.data import DataLoader
from torchvision import datasets

def build_loader(config):
    ds = datasets.ImageFolder(config.DATA.PATH)
    return DataLoader(ds, batch_size=64, num_workers=config.DATA.NUM_WORKERS, pin_memory=True)
"""
SWIN_MAIN = """import argparse
from config import get_config
from data import build_loader

if __name__ == "__main__":
    config = get_config(argparse.ArgumentParser().parse_args())
    loader = build_loader(config)
"""


def test_entry_points_sharing_a_config_tree_give_it_to_the_module_they_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Swin-Transformer's layout: data/build.py (named) takes `config` as a parameter; the
    root's main.py and main_pretrain.py import it through data/__init__.py and build the
    config from config.py's yacs tree (`_C.DATA.NUM_WORKERS = 8`): 8 workers on 2 CPUs
    (EC504), whichever of them runs."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "__init__.py").write_text("from .build import build_loader\n")
    (tmp_path / "data" / "build.py").write_text(BUILD)
    (tmp_path / "config.py").write_text(
        "from yacs.config import CfgNode as CN\n_C = CN()\n_C.DATA = CN()\n"
        "_C.DATA.PATH = ''\n_C.DATA.NUM_WORKERS = 8\n"
        "def get_config(args):\n    return _C.clone()\n"
    )
    (tmp_path / "main.py").write_text(SWIN_MAIN)
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "main_pretrain.py").write_text(SWIN_MAIN)
    report = audit(Path("data/build.py"), cwd=tmp_path, monkeypatch=monkeypatch)
    found = workers_finding(report)
    assert found is not None and found["id"] == "EC504"
    assert "config.py" in found["message"]


KERAS_MODELS = """\
import tensorflow as tf

class Block(tf.keras.layers.Layer):
    def __init__(self, filters):
        super().__init__()
        self.layer = {layer}

    def call(self, x):
        return self.layer(x)

class Encoder(tf.keras.Model):
    def __init__(self, depth):
        super().__init__()
        self.blocks = [Block(64) for _ in range(depth)]

    def call(self, x):
        for block in self.blocks:
            x = block(x)
        return x

def small():
    return Encoder(2)

def large():
    return Encoder(4)
"""

KERAS_TAPE_TRAIN = """\
import argparse
import tensorflow as tf
from models import small, large

encoders = {"small": small, "large": large}

def main(args):
    net = encoders[args.encoder]()
    opt = tf.keras.optimizers.Adam()

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(net(x, training=True))
        grads = tape.gradient(loss, net.trainable_variables)
        opt.apply_gradients(zip(grads, net.trainable_variables))
        return loss

    for epoch in range(10):
        for _ in range(100):
            step(tf.random.normal([64, 32, 32, 3]))

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--encoder", required=True, choices=["small", "large"])
    main(parser.parse_args())
"""


@pytest.mark.parametrize(
    ("layer", "flagged"),
    [
        ('tf.keras.layers.Conv2D(filters, 3, padding="same")', True),
        ("tf.keras.layers.Dense(filters)", False),
    ],
)
def test_a_keras_model_picked_from_a_dict_of_project_builders_in_a_tape_loop(
    tmp_path: Path, layer: str, flagged: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """simclr-tensorflow2: `encoders = {"resnet18": ResNet18, ...}` of factories from
    models.py, `encoders[args.encoder]()` trained by a GradientTape loop. Every builder
    of the dict returns a Keras model whose blocks build `layers.Conv2D`: a convnet in
    float32 (EC522). Builders whose layers are Dense say nothing of a convnet."""
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "models.py").write_text(KERAS_MODELS.format(layer=layer))
    (tmp_path / "train.py").write_text(KERAS_TAPE_TRAIN)
    report = audit(Path("train.py"), cwd=tmp_path, monkeypatch=monkeypatch)
    assert ("EC522" in {f["id"] for f in report["findings"]}) == flagged


def test_a_run_naming_many_files_searches_no_importers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that names more than MAX_NAMED_FOR_IMPORTERS files names its entry points
    itself: no folder is searched for importers once per named file."""
    from envcheck.scripts import project_context

    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(ENTRY.format(n=8))
    (tmp_path / "trainer.py").write_text(TRAINER)
    others = []
    for i in range(project_context.MAX_NAMED_FOR_IMPORTERS):
        (tmp_path / f"m{i}.py").write_text("x = 1\n")
        others.append(Path(f"m{i}.py"))
    report = audit(Path("trainer.py"), *others, cwd=tmp_path, monkeypatch=monkeypatch)
    assert workers_finding(report) is None
    report = audit(Path("trainer.py"), *others[1:], cwd=tmp_path, monkeypatch=monkeypatch)
    assert workers_finding(report)["id"] == "EC504"


SOLVER = """\
import torch
import torch.nn as nn


class Solver:
    def __init__(self, loader):
        self.loader = loader
        self.G = nn.Sequential(nn.Conv2d(3, 64, 7), nn.ReLU(), nn.Conv2d(64, 3, 7)).cuda()
        self.opt = torch.optim.Adam(self.G.parameters())

    def train(self):
        for x, y in self.loader:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = (self.G(x.cuda()) - y.cuda()).abs().mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
"""
SOLVER_MAIN = """\
from torch.backends import cudnn
from solver import Solver


def main(loader):
    cudnn.benchmark = {value}
    Solver(loader).train()


if __name__ == "__main__":
    main(make_loader())
"""


@pytest.mark.parametrize(("value", "status"), [("True", "pass"), ("False", "fail")])
def test_cudnn_benchmark_set_by_the_entry_point_holds_for_the_module_it_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, status: str
) -> None:
    """stargan (sweep U): main.py sets `cudnn.benchmark = True`, then trains `Solver`
    from solver.py, the file named: the process-wide setting holds for the solver."""
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "solver.py").write_text(SOLVER)
    (tmp_path / "main.py").write_text(SOLVER_MAIN.format(value=value))
    report = audit(tmp_path / "solver.py", cwd=tmp_path, monkeypatch=monkeypatch)
    assert {c["id"]: c["status"] for c in report["checks"]}["EC506"] == status
    (tmp_path / "main.py").unlink()
    report = audit(tmp_path / "solver.py", cwd=tmp_path, monkeypatch=monkeypatch)
    assert {c["id"]: c["status"] for c in report["checks"]}["EC506"] == "fail"


DATA_BUILD = """from torch.utils.data import DataLoader
from torchvision import datasets

def make_loader():
    ds = datasets.ImageFolder("data")
    return DataLoader(ds, batch_size=64, num_workers=1)
"""
DATA_ENTRY = """import torch
from data.build import make_loader

if __name__ == "__main__":
    loader = make_loader()
    model = torch.nn.Conv2d(3, 8, 3){device}
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(10):
        for x, y in loader:
            loss = model(x{device}).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
"""


@pytest.mark.parametrize(("device", "status"), [(".cuda()", "fail"), (".cpu()", "unknown")])
def test_an_entry_point_in_sight_training_on_a_gpu_feeds_the_data_module_it_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, device: str, status: str
) -> None:
    """reid-strong-baseline (sweep W): data/build.py (named) never chooses a device;
    tools/train.py, read as context, imports it and trains on CUDA: its image batches go
    to the GPU unpinned (EC502), as with a trainer audited beside it. An importer
    training on the CPU, or none in sight, leaves the data module unknown."""
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "__init__.py").write_text("")
    (tmp_path / "data" / "build.py").write_text(DATA_BUILD)
    (tmp_path / "train.py").write_text(DATA_ENTRY.format(device=device))
    report = audit(tmp_path / "data" / "build.py", cwd=tmp_path, monkeypatch=monkeypatch)
    assert {c["id"]: c["status"] for c in report["checks"]}["EC502"] == status
    (tmp_path / "train.py").unlink()
    report = audit(tmp_path / "data" / "build.py", cwd=tmp_path, monkeypatch=monkeypatch)
    assert {c["id"]: c["status"] for c in report["checks"]}["EC502"] == "unknown"


EXAMPLE_ENTRY = """import argparse
import torch
import lib.loaders as loaders

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="{name}")
    args = parser.parse_args()
    loader = loaders.make_loader()
    model = torch.nn.Conv2d(3, 8, 3){device}
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(10):
        for x, y in loader:
            loss = model(x{device}).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize(
    ("devices", "status"),
    [
        ((".cuda()",) * 8, "fail"),
        ((".cuda()",) * 7 + (".cpu()",), "unknown"),
    ],
)
def test_several_example_scripts_training_on_a_gpu_feed_the_data_module_they_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, devices: tuple[str, ...], status: str
) -> None:
    """MedicalZooPytorch (sweep AF): lib/medloaders (named) is imported by eight
    examples/train_*.py, one per data set, none at the root: the examples/ folder holds
    entry points, and when every one of them that trains does so on CUDA, the loaders'
    batches go to the GPU unpinned (EC502) whichever runs. One training on the CPU among
    them: which runs is not in sight, unknown."""
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "lib" / "loaders").mkdir(parents=True)
    (tmp_path / "lib" / "__init__.py").write_text("")
    (tmp_path / "lib" / "loaders" / "__init__.py").write_text(DATA_BUILD)
    (tmp_path / "examples").mkdir()
    for index, device in enumerate(devices):
        text = EXAMPLE_ENTRY.format(name=f"set{index}", device=device)
        (tmp_path / "examples" / f"train_set{index}.py").write_text(text)
    named = tmp_path / "lib" / "loaders" / "__init__.py"
    report = audit(named, cwd=tmp_path, monkeypatch=monkeypatch)
    assert {c["id"]: c["status"] for c in report["checks"]}["EC502"] == status


FACTORY = """\
from torch.utils.data import DataLoader
from torchvision import datasets


def data_provider(args, flag):
    ds = datasets.ImageFolder(args.root)
    return DataLoader(ds, batch_size=32, shuffle=flag == "train", num_workers=args.num_workers)
"""
EXPERIMENT = """\
from data_provider.data_factory import data_provider


class Exp:
    def __init__(self, args):
        self.args = args

    def train(self):
        return data_provider(self.args, "train")
"""
RUN = """\
import argparse

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default="data")
    parser.add_argument("--num_workers", type=int, default={n})
    args = parser.parse_args()
    from exp.exp_main import Exp
    Exp(args).train()
"""


def test_the_entry_point_importing_a_module_that_imports_the_named_one_gives_its_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Time-Series-Library (sweep W): data_provider/data_factory.py (named) reads
    `args.num_workers`; run.py parses --num_workers (default 10) and imports
    exp/exp_main.py, which imports the factory: the run's value, one module away (EC504).
    A second entry point reaching it the same way with another default: which one runs is
    not in sight, unknown."""
    (tmp_path / ".git").mkdir()
    for folder in ("exp", "data_provider"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "data_provider" / "data_factory.py").write_text(FACTORY)
    (tmp_path / "exp" / "exp_main.py").write_text(EXPERIMENT)
    named = Path("data_provider/data_factory.py")
    assert workers_finding(audit(named, cwd=tmp_path, monkeypatch=monkeypatch)) is None
    (tmp_path / "run.py").write_text(RUN.format(n=10))
    report = audit(named, cwd=tmp_path, monkeypatch=monkeypatch)
    found = workers_finding(report)
    assert found is not None and found["id"] == "EC504" and "run.py" in found["message"]
    # a named file that is an entry point itself runs as it is: no search one module away
    (tmp_path / "data_provider" / "data_factory.py").write_text(
        FACTORY + "\nif __name__ == '__main__':\n    pass\n"
    )
    assert workers_finding(audit(named, cwd=tmp_path, monkeypatch=monkeypatch)) is None
    (tmp_path / "data_provider" / "data_factory.py").write_text(FACTORY)
    (tmp_path / "run_other.py").write_text(RUN.format(n=0))
    report = audit(named, cwd=tmp_path, monkeypatch=monkeypatch)
    assert workers_finding(report) is None


def test_a_package_init_at_the_depth_limit_brings_what_it_re_exports(tmp_path: Path) -> None:
    """A package's `__init__.py` reached at the last level read (`from config import
    cfg`, config/__init__.py: `from .defaults import _C as cfg`) has the modules it
    imports read with it, one level more; a plain module there does not."""
    import ast

    from envcheck.scripts import project_context

    (tmp_path / "setup.py").write_text("")
    depth = project_context.MAX_DEPTH
    for i in range(depth - 1):
        (tmp_path / f"m{i}.py").write_text(
            f"import m{i + 1}\n" if i < depth - 2 else "import pkg\n"
        )
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .defaults import cfg\n")
    (tmp_path / "pkg" / "defaults.py").write_text("from .deeper import x\ncfg = 1\n")
    (tmp_path / "pkg" / "deeper.py").write_text("x = 1\n")
    script = tmp_path / "train.py"
    script.write_text("import m0\n")
    found = context_files([(script, "train.py", ast.parse("import m0\n"))], [script])
    shown = [name for name, _, _ in found.files]
    assert shown[-2:] == ["pkg/__init__.py", "pkg/defaults.py"]
    assert "pkg/deeper.py" not in shown


REID_BUILD = """\
from torch.utils.data import DataLoader
from torchvision import datasets


def make_data_loader(cfg):
    num_workers = cfg.DATALOADER.NUM_WORKERS
    train_set = datasets.ImageFolder(cfg.DATASETS.ROOT_DIR)
    return DataLoader(train_set, batch_size=64, shuffle=True, num_workers=num_workers)
"""
REID_TRAIN = """\
import argparse
from config import cfg
from data import make_data_loader

if __name__ == "__main__":
    argparse.ArgumentParser().parse_args()
    make_data_loader(cfg)
"""


def test_a_yacs_tree_an_entry_point_imports_through_a_package_init(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """reid-strong-baseline (sweep W): data/build.py (named) reads
    `cfg.DATALOADER.NUM_WORKERS`; tools/train.py imports `cfg` from config/__init__.py,
    which re-exports config/defaults.py's yacs tree (`_C.DATALOADER.NUM_WORKERS = 8`):
    8 workers on 2 CPUs (EC504)."""
    (tmp_path / ".git").mkdir()
    for folder in ("config", "data", "tools"):
        (tmp_path / folder).mkdir()
    (tmp_path / "config" / "__init__.py").write_text("from .defaults import _C as cfg\n")
    (tmp_path / "config" / "defaults.py").write_text(
        "from yacs.config import CfgNode as CN\n_C = CN()\n_C.DATALOADER = CN()\n"
        "_C.DATALOADER.NUM_WORKERS = 8\n_C.DATASETS = CN()\n_C.DATASETS.ROOT_DIR = './data'\n"
    )
    (tmp_path / "data" / "__init__.py").write_text("from .build import make_data_loader\n")
    (tmp_path / "data" / "build.py").write_text(REID_BUILD)
    (tmp_path / "tools" / "train.py").write_text(REID_TRAIN)
    report = audit(Path("data/build.py"), cwd=tmp_path, monkeypatch=monkeypatch)
    found = workers_finding(report)
    assert found is not None and found["id"] == "EC504"
    assert "defaults.py" in found["message"]


def test_entry_points_that_all_agree_on_a_default_give_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """deep-text-recognition-benchmark (sweep W): train.py, test.py and demo.py each import
    dataset.py and each parse `--workers` with default 4: whichever runs, trainer.py's
    `args.workers` is 4 (EC504 on 2 CPUs). One of them without the option, or with
    another default, leaves it unknown."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "trainer.py").write_text(TRAINER)
    (tmp_path / "train.py").write_text(ENTRY.format(n=8))
    (tmp_path / "demo.py").write_text(ENTRY.format(n=8))
    found = workers_finding(audit(Path("trainer.py"), cwd=tmp_path, monkeypatch=monkeypatch))
    assert found is not None and found["id"] == "EC504"
    assert "demo.py" in found["message"] and "train.py" in found["message"]
    (tmp_path / "demo.py").write_text(ENTRY.format(n=8).replace("'--workers'", "'--jobs'"))
    assert workers_finding(audit(Path("trainer.py"), cwd=tmp_path, monkeypatch=monkeypatch)) is None
    (tmp_path / "demo.py").write_text(ENTRY.format(n=3))
    assert workers_finding(audit(Path("trainer.py"), cwd=tmp_path, monkeypatch=monkeypatch)) is None


def test_of_entry_points_that_disagree_only_those_calling_the_function_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BIT_CD (sweep AA): utils.py's `get_loaders(args)` reads `args.num_workers`;
    main_cd.py (default 4) calls it, demo.py (default 0) imports utils too but calls
    another of its functions. Only main_cd.py runs that code: 4 workers on 2 CPUs
    (EC504). When demo.py calls it too, which one runs is out of sight: unknown."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "trainer.py").write_text(TRAINER + "\n\ndef show(args):\n    print(args)\n")
    (tmp_path / "train.py").write_text(ENTRY.format(n=8))
    demo = ENTRY.format(n=0).replace("from trainer import train", "from trainer import show")
    (tmp_path / "demo.py").write_text(demo.replace("train(args)", "show(args)"))
    found = workers_finding(audit(Path("trainer.py"), cwd=tmp_path, monkeypatch=monkeypatch))
    assert found is not None and found["id"] == "EC504"
    assert "train.py" in found["message"] and "demo.py" not in found["message"]
    (tmp_path / "demo.py").write_text(ENTRY.format(n=0))
    assert workers_finding(audit(Path("trainer.py"), cwd=tmp_path, monkeypatch=monkeypatch)) is None


KEEPER_MAIN = """\
import argparse
from torch.utils.data import DataLoader
from torchvision import datasets
from solver import Solver

def main():
    train_loader = DataLoader(datasets.ImageFolder("train"), batch_size=8, num_workers=4)
    test_loader = DataLoader(datasets.ImageFolder("test"), batch_size=8, num_workers=4)
    solver = Solver(train_loader, test_loader)
    solver.train()

if __name__ == "__main__":
    argparse.ArgumentParser().parse_args()
    main()
"""
KEEPER = """\
import torch

class Solver:
    def __init__(self, train_loader, test_loader):
        self.train_loader = train_loader
        self.test_loader = test_loader
        self.model = torch.nn.Conv2d(3, 8, 3).cuda()

    def train(self):
        opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        for epoch in range(10):
            for x, y in self.train_loader:
                self.model(x.cuda()).mean().backward()
                opt.step()
"""


def test_a_loader_a_class_of_the_run_keeps_but_never_reads_is_not_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Image_Segmentation (sweep AA): main.py hands test_loader to solver.py's Solver,
    whose __init__ stores it in self.test_loader, which nothing reads (it tests on the
    validation loader): no worker starts for it, so only the train loader is judged
    (EC504). Once Solver reads self.test_loader, both are."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "main.py").write_text(KEEPER_MAIN)
    (tmp_path / "solver.py").write_text(KEEPER)
    report = audit(Path("main.py"), cwd=tmp_path, monkeypatch=monkeypatch)
    lines = sorted(f["location"]["line"] for f in report["findings"] if f["id"] == "EC504")
    assert lines == [7]
    (tmp_path / "solver.py").write_text(
        KEEPER + "\n    def test(self):\n        for x, y in self.test_loader:\n            pass\n"
    )
    report = audit(Path("main.py"), cwd=tmp_path, monkeypatch=monkeypatch)
    lines = sorted(f["location"]["line"] for f in report["findings"] if f["id"] == "EC504")
    assert lines == [7, 8]


INFERENCE_MAIN = """\
import argparse
import torch
from torch.utils.data import DataLoader
from torchvision import datasets
import inference

def get_inference_utils(opt):
    data = datasets.ImageFolder("test")
    inference_loader = DataLoader(data, batch_size=8, num_workers=2)
    return inference_loader, data.classes

def main(opt):
    model = torch.nn.Conv2d(3, 8, 3).cuda()
    train_loader = DataLoader(datasets.ImageFolder("train"), batch_size=8, num_workers=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(10):
        for x, y in train_loader:
            model(x.cuda()).mean().backward()
            optimizer.step()
    loader, names = get_inference_utils(opt)
    inference.inference(loader, model, names)

if __name__ == "__main__":
    main(argparse.ArgumentParser().parse_args())
"""
INFERENCE = """\
import torch

def inference(data_loader, model, class_names):
    model.eval()
    with torch.no_grad():
        for i, (x, y) in enumerate(data_loader):
            print(i, len(data_loader), model(x.cuda()).argmax(1))
"""


def test_a_loader_returned_in_a_tuple_and_read_once_by_another_module_is_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3D-ResNets (sweep AA): main.py's get_inference_utils() returns `inference_loader,
    class_names`, called once after training; the loader is handed to inference.py's
    inference(), which iterates it in one loop (and reads its len()): one pass, so its
    workers need not persist (EC503 on the train loader only). Once inference() loops
    over it a second time, it is judged."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "main.py").write_text(INFERENCE_MAIN)
    (tmp_path / "inference.py").write_text(INFERENCE)
    report = audit(Path("main.py"), cwd=tmp_path, monkeypatch=monkeypatch)
    lines = sorted(f["location"]["line"] for f in report["findings"] if f["id"] == "EC503")
    assert lines == [14]
    (tmp_path / "inference.py").write_text(
        INFERENCE + "    for x, y in data_loader:\n        pass\n"
    )
    report = audit(Path("main.py"), cwd=tmp_path, monkeypatch=monkeypatch)
    lines = sorted(f["location"]["line"] for f in report["findings"] if f["id"] == "EC503")
    assert lines == [9, 14]


def test_a_maker_another_file_of_the_run_calls_is_not_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PyTorch-YOLOv3 (sweep W): test.py's maker serves its own one-pass evaluation, but
    train.py imports it and validates with it every epoch: how often its loader is read
    is decided there, so the maker's one use in this file does not make it read once."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "main.py").write_text(INFERENCE_MAIN)
    (tmp_path / "inference.py").write_text(INFERENCE)
    (tmp_path / "evaluate.py").write_text(
        "import argparse\nfrom main import get_inference_utils\n\n"
        "if __name__ == '__main__':\n    opt = argparse.ArgumentParser().parse_args()\n"
        "    for epoch in range(10):\n        loader, names = get_inference_utils(opt)\n"
    )
    report = audit(Path("main.py"), cwd=tmp_path, monkeypatch=monkeypatch)
    lines = sorted(f["location"]["line"] for f in report["findings"] if f["id"] == "EC503")
    assert lines == [9, 14]


VISDOM_SOLVER = """\
import torch


class Solver(object):
    def __init__(self, data, model, optimizer, args):
        self.tr_loader = data["tr_loader"]
        self.model = model
        self.optimizer = optimizer
        self.visdom_epoch = args.visdom_epoch

    def train(self):
        for epoch in range(10):
            self._run_one_epoch(epoch)

    def _run_one_epoch(self, epoch, cross_valid=False):
        vis = torch.zeros(100)
        for i, (x, y) in enumerate(self.tr_loader):
            x, y = x.cuda(), y.cuda()
            loss = ((self.model(x) - y) ** 2).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            if self.visdom_epoch and not cross_valid:
                vis[i] = loss.item()
"""

VISDOM_ENTRY = """\
import argparse
import torch
from torch.utils.data import DataLoader, TensorDataset
from solver import Solver

parser = argparse.ArgumentParser()
parser.add_argument("--visdom_epoch", dest="visdom_epoch", type=int, default=0)


def main(args):
    ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 4))
    data = {"tr_loader": DataLoader(ds, batch_size=8)}
    model = torch.nn.Linear(4, 4).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    Solver(data, model, optimizer, args).train()


if __name__ == "__main__":
    main(parser.parse_args())
"""


def test_a_trainer_s_branch_on_an_entry_point_s_int_option_defaulting_to_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Conv-TasNet: `self.visdom_epoch = args.visdom_epoch`, `--visdom_epoch` an int
    defaulting to 0 in train.py, which imports the solver: its branch is opt-in, the
    `.item()` under it is not read as run every step."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "setup.py").write_text("")
    (root / "solver.py").write_text(VISDOM_SOLVER)
    (root / "train.py").write_text(VISDOM_ENTRY)
    report = audit(root / "solver.py", cwd=root, monkeypatch=monkeypatch)
    assert [f for f in report["findings"] if f["id"] == "EC509"] == []


SLOWFAST_LOADER = """\
import torch


def construct_loader(cfg, split):
    dataset = torch.utils.data.TensorDataset(torch.randn(8, 3))
    return torch.utils.data.DataLoader(
        dataset, batch_size=4, num_workers=cfg.DATA_LOADER.NUM_WORKERS, pin_memory=True
    )
"""
SLOWFAST_ENTRY = """\
import argparse
from proj.datasets import loader
from proj.utils.parser import load_config


def train(cfg):
    train_loader = loader.construct_loader(cfg, "train")


if __name__ == "__main__":
    train(load_config(argparse.ArgumentParser().parse_args()))
"""


def test_a_yacs_tree_behind_the_entry_point_s_config_loader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TimeSformer (sweep AH): datasets/loader.py (named) reads
    `cfg.DATA_LOADER.NUM_WORKERS` from a `cfg` parameter; the entry points importing it
    (tools/train_net.py, tools/test_net.py) load `cfg` with utils/parser.py, which imports
    config/defaults.py's yacs tree (`_C.DATA_LOADER.NUM_WORKERS = 8`): one import past the
    depth limit, read because it builds a config tree (8 workers on 2 CPUs, EC504). A
    plain module at the same place is not read."""
    (tmp_path / ".git").mkdir()
    for folder in ("proj/config", "proj/datasets", "proj/utils", "tools"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "proj" / "config" / "defaults.py").write_text(
        "from fvcore.common.config import CfgNode\n_C = CfgNode()\n_C.DATA_LOADER = CfgNode()\n"
        "_C.DATA_LOADER.NUM_WORKERS = 8\n\n\ndef get_cfg():\n    return _C.clone()\n"
    )
    (tmp_path / "proj" / "utils" / "checkpoint.py").write_text("import os\n")
    (tmp_path / "proj" / "utils" / "parser.py").write_text(
        "import proj.utils.checkpoint as cu\nfrom proj.config.defaults import get_cfg\n\n\n"
        "def load_config(args):\n    return get_cfg()\n"
    )
    (tmp_path / "proj" / "datasets" / "loader.py").write_text(SLOWFAST_LOADER)
    for entry in ("train_net.py", "test_net.py"):
        (tmp_path / "tools" / entry).write_text(SLOWFAST_ENTRY)
    report = audit(Path("proj/datasets/loader.py"), cwd=tmp_path, monkeypatch=monkeypatch)
    found = workers_finding(report)
    assert found is not None and found["id"] == "EC504"
    assert "defaults.py" in found["message"]
    context = report["facts"]["scripts"]["context"]
    assert any(c.endswith("defaults.py") for c in context)
    assert not any(c.endswith("checkpoint.py") for c in context)  # no tree: not read


TRAINER_MODULE = """\
import torch
from tqdm import tqdm


class ModelTrainer:
    def evaluate(self, test_list, nDataLoaderThread, **kwargs):
        dataset = torch.utils.data.TensorDataset(torch.randn(8, 3))
        test_loader = torch.utils.data.DataLoader(
            dataset, batch_size=1, num_workers=nDataLoaderThread, pin_memory=True
        )
        with tqdm(test_loader, unit="utt") as bar:
            for data in bar:
                out = data[0].cuda()
        with tqdm(test_list) as bar:
            for line in bar:
                print(line)
"""
TRAINER_ENTRY = """\
import argparse
from trainer import ModelTrainer

parser = argparse.ArgumentParser()
parser.add_argument("--nDataLoaderThread", type=int, default={n})
parser.add_argument("--test_list", type=str, default="")
args = parser.parse_args()
trainer = ModelTrainer()
for epoch in range(10):
    trainer.evaluate({how})
"""


@pytest.mark.parametrize(
    "n, how, rule",
    [(5, "**vars(args)", "EC504"), (2, "**vars(args)", None), (5, "args.test_list, 4", None)],
)
def test_a_parameter_an_entry_point_fills_with_vars_of_its_parsed_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int, how: str, rule: str | None
) -> None:
    """voxceleb_trainer (sweep AH): SpeakerNet.py (named) builds its evaluation loader with
    `num_workers=nDataLoaderThread`, a parameter of a method nothing there calls;
    trainSpeakerNet.py calls it with `**vars(args)`, so it gets `--nDataLoaderThread`'s
    default. A call passing the parameter any other way (positionally here, 4, which
    the file's own calls would settle) gives no option value. The loader is iterated once
    through a progress bar (`with tqdm(loader) as bar:`): read once, not EC503's."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "trainer.py").write_text(TRAINER_MODULE)
    (tmp_path / "train.py").write_text(TRAINER_ENTRY.format(n=n, how=how))
    report = audit(Path("trainer.py"), cwd=tmp_path, monkeypatch=monkeypatch)
    found = workers_finding(report)
    assert (found["id"] if found else None) == rule
    if found:
        assert "nDataLoaderThread" in found["message"] and "train.py" in found["message"]
    assert not any(f["id"] == "EC503" for f in report["findings"])
