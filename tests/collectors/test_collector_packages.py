"""packages collector: distributions read from metadata on a fake sys.path, never imported."""

from __future__ import annotations

import dataclasses
import zipfile
from pathlib import Path
from typing import Optional, Sequence

import pytest

from envcheck.collectors import packages
from envcheck.collectors.base import CollectContext, run_collector
from envcheck.interpreter import current

LONG_BODY = (
    "A long description that must never be read as a header.\n\n"
    "Name: not-a-header\nVersion: 99.0\n" + "Lorem ipsum dolor sit amet.\n" * 2000
)


def _write(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _metadata(name: str, version: str, metadata_version: str = "2.1") -> str:
    return (
        f"Metadata-Version: {metadata_version}\nName: {name}\nVersion: {version}\n"
        f"Summary: the {name} package\nRequires-Dist: numpy\n\n{LONG_BODY}"
    )


def dist_info(
    site: Path,
    name: str,
    version: str,
    *,
    top_level: Optional[Sequence[str]] = None,
    record: Optional[Sequence[str]] = None,
    with_metadata: bool = True,
) -> Path:
    """A NAME-VERSION.dist-info folder, with optional top_level.txt and RECORD."""
    folder = site / f"{name}-{version}.dist-info"
    folder.mkdir(parents=True)
    if with_metadata:
        _write(folder / "METADATA", _metadata(name, version))
    if top_level is not None:
        _write(folder / "top_level.txt", "".join(f"{m}\n" for m in top_level))
    if record is not None:
        _write(folder / "RECORD", "".join(f"{line},,\n" for line in record))
    return folder


def egg_info_file(site: Path, name: str, version: str) -> Path:
    """A single-file NAME-VERSION-py3.9.egg-info, as old distutils installs left it."""
    return _write(site / f"{name}-{version}-py3.9.egg-info", _metadata(name, version, "1.0"))


def egg_info_dir(site: Path, name: str, version: str, top_level: Sequence[str] = ()) -> Path:
    """A NAME.egg-info folder (setup.py develop style) with PKG-INFO."""
    folder = site / f"{name}.egg-info"
    _write(folder / "PKG-INFO", _metadata(name, version, "1.1"))
    _write(folder / "top_level.txt", "".join(f"{m}\n" for m in top_level))
    return folder


def _run(machine, sys_path: Sequence[object]) -> dict:
    interpreter = dataclasses.replace(current(), sys_path=tuple(str(p) for p in sys_path))
    return packages.collect(machine.ctx(interpreter=interpreter))


@pytest.fixture
def sites(tmp_path: Path) -> tuple[Path, Path]:
    first, second = tmp_path / "site1", tmp_path / "site2"
    first.mkdir()
    second.mkdir()
    return first, second


def test_distributions_from_two_site_folders(machine, sites) -> None:
    first, second = sites
    dist_info(first, "Keras_Preprocessing", "1.1.2")
    dist_info(first, "numpy", "1.26.4")
    egg_info_file(first, "legacy.pkg", "0.3")
    egg_info_dir(second, "My_Project", "0.1.dev0")
    dist_info(second, "six", "1.16.0")
    sections = _run(machine, [first, second])
    assert sections["packages"] == {
        "keras-preprocessing": "1.1.2",
        "legacy-pkg": "0.3",
        "my-project": "0.1.dev0",
        "numpy": "1.26.4",
        "six": "1.16.0",
    }
    assert list(sections["packages"]) == sorted(sections["packages"])
    modules = sections["modules"]
    assert modules["distribution_count"] == 5
    assert modules["shadowed"] == {}
    assert modules["unreadable_metadata"] == []
    assert set(modules["providers"]) == set(packages.WATCHED_MODULES)


@pytest.mark.parametrize(
    ("first_name", "second_name"),
    [("numpy", "numpy"), ("Keras_Preprocessing", "keras-preprocessing")],
    ids=["same-name", "different-spelling"],
)
def test_first_on_sys_path_wins_and_later_is_shadowed(
    machine, sites, first_name: str, second_name: str
) -> None:
    first, second = sites
    dist_info(first, first_name, "2.0.0")
    dist_info(second, second_name, "1.0.0")
    egg_info_file(second, second_name, "0.9")
    sections = _run(machine, [first, second])
    canonical = packages.canonicalize_name(first_name)
    assert sections["packages"] == {canonical: "2.0.0"}
    shadowed = sections["modules"]["shadowed"]
    assert list(shadowed) == [canonical]
    assert sorted(shadowed[canonical]) == ["0.9", "1.0.0"]
    assert sections["modules"]["distribution_count"] == 1


def test_reversed_sys_path_reverses_the_winner(machine, sites) -> None:
    first, second = sites
    dist_info(first, "numpy", "2.0.0")
    dist_info(second, "numpy", "1.0.0")
    sections = _run(machine, [second, first])
    assert sections["packages"] == {"numpy": "1.0.0"}
    assert sections["modules"]["shadowed"] == {"numpy": ["2.0.0"]}


def _tensorflow_wheel_record(dist: str) -> list[str]:
    return [
        "tensorflow/__init__.py",
        "tensorflow/python/keras/__init__.py",
        f"{dist}.dist-info/METADATA",
        f"{dist}.dist-info/RECORD",
        "../../../bin/tensorboard",
    ]


@pytest.mark.parametrize("gpu_first", [False, True], ids=["cpu-first", "gpu-first"])
def test_tensorflow_providers_in_sys_path_order(machine, sites, gpu_first: bool) -> None:
    first, second = sites
    cpu_site, gpu_site = (second, first) if gpu_first else (first, second)
    dist_info(cpu_site, "tensorflow", "2.4.0", record=_tensorflow_wheel_record("tensorflow-2.4.0"))
    dist_info(
        gpu_site,
        "tensorflow_gpu",
        "2.4.0",
        record=_tensorflow_wheel_record("tensorflow_gpu-2.4.0"),
    )
    providers = _run(machine, [first, second])["modules"]["providers"]
    expected = ["tensorflow-gpu", "tensorflow"] if gpu_first else ["tensorflow", "tensorflow-gpu"]
    assert providers["tensorflow"] == expected


def test_providers_from_top_level_and_record(machine, sites) -> None:
    first, second = sites
    dist_info(first, "torch", "2.2.0", top_level=["functorch", "torch", "torchgen"])
    dist_info(first, "keras", "2.15.0", record=["keras/__init__.py", "keras/src/layers.py"])
    dist_info(first, "nvidia_ml_py", "12.535.133", top_level=["example", "pynvml"])
    # a metapackage: its RECORD lists only its own dist-info files
    dist_info(
        first,
        "tensorflow_gpu",
        "2.12.0",
        record=[
            "tensorflow_gpu-2.12.0.dist-info/METADATA",
            "tensorflow_gpu-2.12.0.dist-info/RECORD",
        ],
    )
    dist_info(first, "empty_record", "1.0", record=[])
    dist_info(second, "tensorflow", "2.12.0", record=["tensorflow/__init__.py"])
    # top_level.txt wins over RECORD
    dist_info(second, "tf_keras", "2.15.0", top_level=["tf_keras"], record=["keras/__init__.py"])
    providers = _run(machine, [first, second])["modules"]["providers"]
    assert providers == {
        "tensorflow": ["tensorflow"],
        "torch": ["torch"],
        "keras": ["keras"],
        "pynvml": ["nvidia-ml-py"],
        "theano": [],
    }


def test_shadowed_distribution_is_not_a_provider(machine, sites) -> None:
    first, second = sites
    dist_info(first, "tensorflow", "2.12.0", record=["tensorflow/__init__.py"])
    dist_info(second, "tensorflow", "2.4.0", record=["tensorflow/__init__.py"])
    sections = _run(machine, [first, second])
    assert sections["modules"]["providers"]["tensorflow"] == ["tensorflow"]
    assert sections["modules"]["shadowed"] == {"tensorflow": ["2.4.0"]}


def test_dist_info_without_metadata_is_unreadable(machine, sites) -> None:
    first, _ = sites
    broken = dist_info(first, "broken", "1.0", with_metadata=False, top_level=["torch"])
    no_version = dist_info(first, "noversion", "1.0", with_metadata=False)
    _write(no_version / "METADATA", "Metadata-Version: 2.1\nName: noversion\n\nVersion: 1.0\n")
    dist_info(first, "fine", "1.0")
    sections = _run(machine, [first])
    assert sections["packages"] == {"fine": "1.0"}
    assert sections["modules"]["unreadable_metadata"] == [str(broken), str(no_version)]
    assert sections["modules"]["providers"]["torch"] == []


def test_missing_entries_zip_files_and_plain_files_are_ignored(machine, sites, tmp_path) -> None:
    first, _ = sites
    dist_info(first, "numpy", "1.26.4")
    archive = tmp_path / "python311.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("zipped-1.0.dist-info/METADATA", _metadata("zipped", "1.0"))
    plain = _write(tmp_path / "not-a-folder.egg-info", "")  # an empty egg-info file
    sys_path = [tmp_path / "does-not-exist", archive, plain, first]
    sections = _run(machine, sys_path)
    assert sections["packages"] == {"numpy": "1.26.4"}
    assert sections["modules"]["unreadable_metadata"] == []


def test_same_folder_twice_is_listed_once(machine, sites, tmp_path) -> None:
    first, _ = sites
    dist_info(first, "numpy", "1.26.4")
    link = tmp_path / "link-to-site1"
    link.symlink_to(first, target_is_directory=True)
    sections = _run(machine, [first, link, str(first) + "/"])
    assert sections["packages"] == {"numpy": "1.26.4"}
    assert sections["modules"]["shadowed"] == {}


def test_other_folders_in_site_packages_are_not_metadata(machine, sites) -> None:
    first, _ = sites
    _write(first / "numpy" / "__init__.py")
    _write(first / "README.txt", "Name: x\nVersion: 1\n")
    _write(first / "distutils-precedence.pth", "import os\n")
    assert _run(machine, [first])["packages"] == {}


def test_empty_sys_path_is_unavailable(machine) -> None:
    interpreter = dataclasses.replace(current(), sys_path=())
    outcome = run_collector("packages", packages.collect, machine.ctx(interpreter=interpreter))
    assert outcome.status == "unavailable"
    assert outcome.reason is not None
    assert "sys.path" in outcome.reason
    assert outcome.sections == {}


def test_real_interpreter_lists_this_project() -> None:
    sections = packages.collect(CollectContext(interpreter=current()))
    assert "envcheck-gpu" in sections["packages"]  # the distribution; the import name is envcheck
    assert "pytest" in sections["packages"]
