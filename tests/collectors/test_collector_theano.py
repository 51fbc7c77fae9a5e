"""theano collector: .theanorc and THEANO_FLAGS, read as text; bad files never raise."""

from __future__ import annotations

import os

import pytest

from envcheck.collectors import theano

THEANORC = """\
[global]
device = gpu
floatX = float32

[lib]
cnmem = 0.8

[dnn]
enabled = False
"""


def _theano(machine, environ=None) -> dict:
    return theano.collect(machine.ctx(environ))["theano"]


def test_home_theanorc(machine) -> None:
    rc = machine.home_file(".theanorc", THEANORC)
    facts = _theano(machine)
    assert facts["config_files"] == [str(rc)]
    assert facts["flags"] == {
        "device": "gpu",
        "dnn.enabled": "False",
        "floatX": "float32",
        "lib.cnmem": "0.8",
    }


def test_theano_flags_override_the_rc_file(machine) -> None:
    machine.home_file(".theanorc", THEANORC)
    facts = _theano(machine, {"THEANO_FLAGS": "device=cuda0, floatX=float16,optimizer=fast_run"})
    assert facts["flags"]["device"] == "cuda0"
    assert facts["flags"]["floatX"] == "float16"
    assert facts["flags"]["lib.cnmem"] == "0.8"
    assert "optimizer" not in facts["flags"]


def test_theano_flags_alone_and_junk_items(machine) -> None:
    facts = _theano(machine, {"THEANO_FLAGS": ",device,=cpu,,lib.cnmem=1,gpuarray.preallocate=0.9"})
    assert facts["config_files"] == []
    assert facts["flags"] == {"gpuarray.preallocate": "0.9", "lib.cnmem": "1"}


def test_theanorc_txt_is_read_after_theanorc(machine) -> None:
    first = machine.home_file(".theanorc", "[global]\ndevice = gpu\nfloatX = float64\n")
    second = machine.home_file(".theanorc.txt", "[global]\ndevice = cuda\n")
    facts = _theano(machine)
    assert facts["config_files"] == [str(first), str(second)]
    assert facts["flags"] == {"device": "cuda", "floatX": "float64"}


def test_theanorc_env_points_elsewhere(machine, tmp_path) -> None:
    machine.home_file(".theanorc", "[global]\ndevice = gpu\n")
    elsewhere = tmp_path / "conf" / "theano.cfg"
    elsewhere.parent.mkdir()
    elsewhere.write_text("[global]\ndevice = cpu\n[lib]\ncnmem = 1\n")
    later = tmp_path / "conf" / "override.cfg"
    later.write_text("[lib]\ncnmem = 0.5\n")
    missing = tmp_path / "conf" / "missing.cfg"
    environ = {"THEANORC": os.pathsep.join([str(elsewhere), str(missing), str(later)])}
    facts = _theano(machine, environ)
    assert facts["config_files"] == [str(elsewhere), str(later)]
    assert facts["flags"] == {"device": "cpu", "lib.cnmem": "0.5"}


@pytest.mark.parametrize(
    "content",
    [
        b"device = gpu\n",  # no section header
        b"[global]\ndevice = gpu\nthis line is not an option\n",
        b"[global]\ndevice = gpu\n[global]\ndevice = cpu\n",  # duplicate section
        b"[global]\n# caf\xe9 (Latin-1)\ndevice = gpu\n",  # not UTF-8
        b"\x00\x01\x02\xff\xfe",
    ],
    ids=["no-section", "bad-line", "duplicate-section", "latin-1", "binary"],
)
def test_malformed_rc_file_does_not_raise(machine, content: bytes) -> None:
    (machine.home / ".theanorc").write_bytes(content)
    facts = _theano(machine, {"THEANO_FLAGS": "floatX=float32"})
    assert facts["config_files"] == []
    assert facts["flags"] == {"floatX": "float32"}


def test_rc_path_that_is_a_folder_does_not_raise(machine) -> None:
    (machine.home / ".theanorc").mkdir()
    assert _theano(machine) == {"config_files": [], "flags": {}}


def test_nothing_configured(machine) -> None:
    assert _theano(machine) == {"config_files": [], "flags": {}}
