"""The child's node pieces without a framework: pinning to one process's share of the
cores, the alternatives' files and reads, and the concurrent pipelines' protocol."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from envcheck.probe.child import alternatives, concurrent, images

REPO = Path(__file__).resolve().parents[2]
linux_affinity = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity"), reason="no sched_setaffinity here"
)


@linux_affinity
def test_pinning_covers_every_thread_and_lets_go() -> None:
    # in a child interpreter: pinning changes the whole process, not this test runner
    code = textwrap.dedent(
        """
        import json, os, threading
        from envcheck.probe.child.node_cores import CoreShare
        before = sorted(os.sched_getaffinity(0))
        seen = {}
        started = threading.Event()
        release = threading.Event()
        def worker():
            started.set()
            release.wait()
            seen["old_thread"] = sorted(os.sched_getaffinity(0))
        t = threading.Thread(target=worker)
        t.start()
        started.wait()
        share = CoreShare(len(before))  # as many processes as cores: one core each
        share.enter_share()
        release.set()
        t.join()
        seen["pinned"] = sorted(os.sched_getaffinity(0))
        seen["left"] = share.leave_share()
        seen["after"] = sorted(os.sched_getaffinity(0))
        print(json.dumps({"before": before, "describe": share.describe(), **seen}))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    result = json.loads(out.stdout)
    before = result["before"]
    if len(before) < 2:
        pytest.skip("one usable core: nothing to share")
    assert result["pinned"] == before[:1]
    assert result["old_thread"] == before[:1]  # a thread started before the pin too
    assert result["left"] is True and result["after"] == before
    assert result["describe"]["per_process"] == 1 and result["describe"]["pinned"] is True


def _jpegs(folder: Path, count: int, size: tuple[int, int] = (500, 375)) -> list[str]:
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        img = Image.new("RGB", size, (i * 20 % 256, 80, 160))
        path = folder / f"{i}.jpg"
        img.save(path, format="JPEG", quality=90)
        paths.append(str(path))
    return paths


def test_shards_hold_every_sample_in_webdataset_layout(tmp_path: Path) -> None:
    files = _jpegs(tmp_path / "data", 5)
    shards = alternatives.write_shards(files, [0, 1, 0, 1, 2], str(tmp_path / "shards"))
    assert len(shards) == 1
    with tarfile.open(shards[0]) as archive:
        names = archive.getnames()
        assert names[:2] == ["000000.jpg", "000000.cls"]
        assert archive.extractfile("000004.cls").read() == b"2"  # type: ignore[union-attr]
        assert archive.extractfile("000003.jpg").read() == Path(files[3]).read_bytes()  # type: ignore[union-attr]


def test_packed_shards_measures_cold_reads_of_both(tmp_path: Path) -> None:
    files = _jpegs(tmp_path / "data", 12)
    before = {p: Path(p).read_bytes() for p in files}
    result = alternatives.packed_shards(files, [0] * 12, str(tmp_path / "shards"), 2.0)
    assert result["status"] == "measured" and result["label"] == "CPU"
    assert result["files"] == 12 and result["rate"] > 0 and result["baseline_rate"] > 0
    assert result["speedup"] == pytest.approx(result["rate"] / result["baseline_rate"])
    assert result["same_filesystem"] is True
    assert {p: Path(p).read_bytes() for p in files} == before  # the originals untouched


class PillowBackend:
    """The backend's downscale, as the torch backend does it (Pillow)."""

    framework = "torch"
    cuda = False

    def __init__(self) -> None:
        self.settings = {"image_size": 64}

    def downscale(self, data: bytes, short_side: int) -> Any:
        from PIL import Image

        img = Image.open(io.BytesIO(data)).convert("RGB")
        scale = short_side / min(img.size)
        if scale < 1:
            img = img.resize((round(img.size[0] * scale), round(img.size[1] * scale)))
        out = io.BytesIO()
        img.save(out, format="JPEG")
        return out.getvalue(), scale < 1


def test_pre_resized_copies_go_to_the_temporary_folder_and_are_timed(tmp_path: Path) -> None:
    from PIL import Image

    files = _jpegs(tmp_path / "data", 6)
    seen: list[list[str]] = []

    def measure(paths: Any, labels: Any, seconds: float) -> float:
        seen.append(list(paths))
        return float(sum(os.path.getsize(p) for p in paths))  # stands in for a rate

    folder = tmp_path / "work" / "resized"
    result = alternatives.pre_resized(PillowBackend(), files, [0] * 6, measure, str(folder), 2.0)
    assert result["status"] == "measured" and result["short_side"] == 73  # 64 * 256 / 224
    assert seen[0] == files and all(p.startswith(str(folder)) for p in seen[1])
    assert all(min(Image.open(p).size) == 73 for p in seen[1])
    assert sorted(os.listdir(tmp_path / "data")) == sorted(os.path.basename(f) for f in files)


def test_pre_resized_is_not_applicable_to_small_images(tmp_path: Path) -> None:
    files = _jpegs(tmp_path / "data", 3, size=(48, 48))
    result = alternatives.pre_resized(
        PillowBackend(), files, [0] * 3, lambda *a: 1.0, str(tmp_path / "r"), 1.0
    )
    assert result["status"] == "unavailable" and "already no larger than 73 px" in result["reason"]


def test_gpu_decoding_without_a_gpu_says_why() -> None:
    backend = PillowBackend()
    result = alternatives.gpu_decode(backend, ["a.jpg"], 100.0, 1.0)
    assert result == {
        "name": "gpu-decode",
        "label": "GPU",
        "status": "unavailable",
        "reason": "no CUDA GPU visible to torch",
    }
    backend.framework = "tensorflow"
    assert "torch backend only" in alternatives.gpu_decode(backend, [], None, 1.0)["reason"]
    dali = alternatives.dali(backend, [], [], 8, None, 1.0)
    assert dali["status"] == "unavailable" and dali["label"] == "GPU"


FAKE_PIPELINE = """
import json, sys, time
settings = json.load(open(sys.argv[1]))
def say(event, **f):
    f["event"] = event
    sys.stdout.write(json.dumps(f) + "\\n"); sys.stdout.flush()
if settings["workers"] == 99:
    say("failed", message="RuntimeError: no loader")
    sys.exit(0)
say("ready")
start = sys.stdin.readline() and time.monotonic()
say("result", value={"rate": 100.0 + settings["batch"], "started": start})
"""


def test_concurrent_pipelines_start_together_and_add_up(tmp_path: Path) -> None:
    script = tmp_path / "pipeline.py"
    script.write_text(FAKE_PIPELINE)
    args = ({"framework": "torch"}, ["a.jpg"], [0], 8)
    result = concurrent.run_concurrent(
        [sys.executable, str(script)],
        *args,
        workers=1,
        processes=3,
        seconds=0.2,
        folder=str(tmp_path),
    )
    assert result["status"] == "ok" and result["rates"] == [108.0, 108.0, 108.0]
    assert result["total"] == 324.0 and result["workers_per_process"] == 1
    role = json.loads((tmp_path / "pipeline.json").read_text())
    assert role["role"] == "pipeline" and role["device"] == "cpu"
    failed = concurrent.run_concurrent(
        [sys.executable, str(script)],
        *args,
        workers=99,
        processes=2,
        seconds=0.2,
        folder=str(tmp_path),
    )
    assert failed["status"] == "failed"
    assert failed["reason"] == "0 of 2 pipelines sent 'ready' in time: RuntimeError: no loader"


def test_concurrent_workers_fit_the_share() -> None:
    points = [
        {"workers": 0, "rate": 100.0},
        {"workers": 2, "rate": 300.0},
        {"workers": 8, "rate": 400.0},
    ]
    assert concurrent.concurrent_workers(points, 0, cap=2) == 2
    assert concurrent.concurrent_workers([], 3, cap=2) == 3


def test_reads_leave_the_files_as_they_were(tmp_path: Path) -> None:
    files = _jpegs(tmp_path / "data", 2)
    stat = [os.stat(p).st_mtime_ns for p in files]
    images.drop_cached_pages(files)
    assert [os.stat(p).st_mtime_ns for p in files] == stat


class FakeCudaBackend(PillowBackend):
    """A torch backend that sees a GPU; its nvJPEG decode rate is given."""

    cuda = True

    def gpu_decode_rate(self, blobs: list[bytes], seconds: float) -> float:
        assert blobs and all(b[:2] == b"\xff\xd8" for b in blobs)  # the sampled JPEGs
        return 1200.0


def test_gpu_decoding_is_measured_against_the_pipeline_where_it_can_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _jpegs(tmp_path / "data", 3)
    real_find_spec = alternatives.importlib.util.find_spec
    if real_find_spec("torchvision") is None:
        result = alternatives.gpu_decode(FakeCudaBackend(), files, 300.0, 1.0)
        assert (
            result["status"] == "unavailable" and "torchvision is not installed" in result["reason"]
        )
    monkeypatch.setattr(
        alternatives.importlib.util,
        "find_spec",
        lambda name: object() if name in ("torchvision", "nvidia", "nvidia.dali") else None,
    )
    result = alternatives.gpu_decode(FakeCudaBackend(), files, 300.0, 1.0)
    assert result["status"] == "measured" and result["label"] == "GPU"
    assert (result["rate"], result["baseline_rate"], result["speedup"]) == (1200.0, 300.0, 4.0)
    # DALI installed and a GPU: measured through its own pipeline (faked here)
    monkeypatch.setattr(alternatives, "_dali_rate", lambda *a: 900.0)
    dali = alternatives.dali(FakeCudaBackend(), files, [0] * 3, 2, 300.0, 1.0)
    assert dali["status"] == "measured" and dali["speedup"] == 3.0

    # ... and an error there is a failed alternative with the framework's words
    def broken(*a: Any) -> float:
        raise RuntimeError("nvjpeg: unsupported\nmore")

    monkeypatch.setattr(alternatives, "_dali_rate", broken)
    failed = alternatives.dali(FakeCudaBackend(), files, [0] * 3, 2, 300.0, 1.0)
    assert failed == {
        "name": "dali",
        "label": "GPU",
        "status": "failed",
        "reason": "RuntimeError: nvjpeg: unsupported",
    }
