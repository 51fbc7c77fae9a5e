"""The probe child's entry point: read the settings, measure phase by phase, report.

Each phase's result is sent as soon as it is measured, so a child that is killed (hard
timeout, out of memory, a crashing driver) still leaves the parent what it measured.
Phases, after the framework import (not counted in the budget):

  data        generate (or sample) the image files; read and decode each once, serially
  compute     the model on a synthetic batch already on the device: the ceiling
  input_warm  the pipeline alone, files in the page cache: decode/augment cost (prep)
  input_cold  the pipeline alone after dropping the files' cached pages: fetch + prep
  end_to_end  the model fed by the pipeline, each step split into wait/copy/compute
  sweep       end to end again at other worker counts (when asked, or input-bound)
  node        the pipeline alone on every core of the node: what the node can decode
  alternatives  pre-resized images, packed shards, GPU decoding (when asked, or input-bound)
  concurrent  N pipelines at once, one per training process (--concurrent)

With several training processes per node the child pins itself to one process's share
of the cores for everything but the node and concurrent phases (node_cores.py).

Size: the phase sequence and the failure handling around each phase (out of memory, a
malformed result, the budget) read best in one place; the phases' work is in the
backends, images.py and the node modules.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import traceback
from typing import Any, Dict, List, Optional

from envcheck.probe.child import alternatives, concurrent, harness, images
from envcheck.probe.child.backends import load_backend
from envcheck.probe.child.budget import Budget
from envcheck.probe.child.errors import ProbeFailure
from envcheck.probe.child.events import Emitter
from envcheck.probe.child.node_cores import CoreShare

# Planned shares of the budget; the sweep's share goes to the others when it does not run.
PLAN = {
    "data": 0.12,
    "compute": 0.14,
    "input_warm": 0.12,
    "input_cold": 0.12,
    "end_to_end": 0.2,
    "sweep": 0.3,
    "node": 0.1,
    "alternatives": 0.15,
    "concurrent": 0.12,
}
INPUT_BOUND_SHARE = 0.05  # below this the TensorFlow Profiler says "not input-bound"


class Probe:
    def __init__(self, settings: Dict[str, Any], emitter: Emitter) -> None:
        self.settings = settings
        self.emit = emitter.emit
        self.result: Dict[str, Any] = {"phases": {}, "notes": []}

    def part(self, name: str, value: Any) -> None:
        self.result[name] = value
        self.emit("part", name=name, value=value)

    def phase_done(self, name: str, value: Dict[str, Any]) -> None:
        self.result["phases"][name] = value
        self.emit("phase_done", name=name, value=value)

    def note(self, text: str) -> None:
        self.result["notes"].append(text)
        self.emit("note", text=text)

    def run(self) -> Dict[str, Any]:
        s = self.settings
        cores = CoreShare(int(s.get("processes") or 1))
        cores.enter_share()  # before the import: framework thread pools size to it
        started = time.monotonic()
        self.emit("phase", name="import", seconds=None)
        backend = load_backend(s)
        self.part("import_s", round(time.monotonic() - started, 3))
        self.part("backend", backend.describe())
        plan = dict(PLAN, sweep=0.45) if s.get("sweep") == "full" else dict(PLAN)
        if not (s.get("concurrent") and cores.processes > 1):
            plan.pop("concurrent")
        self.part("cores", cores.describe())
        budget = Budget(s["budget_s"], plan)

        seconds = budget.slice("data")
        self.emit("phase", name="data", seconds=seconds)
        files, labels = self.prepare_files(backend, seconds)
        classes = max(labels) + 1 if labels else 10

        batch = s.get("batch_size") or backend.default_batch_size()
        built = time.monotonic()
        batch = self.build_model(backend, batch, classes)
        build_s = time.monotonic() - built
        budget.extend(build_s)  # building and tracing the model is set-up, like the import
        self.part("build_s", round(build_s, 3))
        loader = dict(backend.loader_defaults())
        for key in ("workers", "pin_memory", "prefetch"):
            if s.get(key) is not None:
                loader[key] = s[key]
        self.part("loader", loader)
        if len(files) < batch:
            raise ProbeFailure(
                "data", f"only {len(files)} readable images, fewer than one batch of {batch}"
            )

        seconds = budget.slice("compute")
        self.emit("phase", name="compute", seconds=seconds)
        self.phase_done(
            "compute",
            harness.compute_loop(
                backend.compute_step, backend.sync, batch, seconds, warmup=backend.warmup_steps()
            ),
        )

        delay = float(s.get("inject_delay_s") or 0.0)
        throttle = s.get("throttle_read_bps")

        def open_loader(workers: int, cold: bool) -> Any:
            return backend.open_loader(
                files,
                labels,
                batch,
                workers=workers,
                pin_memory=loader["pin_memory"],
                prefetch=loader["prefetch"],
                throttle_bps=throttle if cold else None,
            )

        seconds = budget.slice("input_warm")
        self.emit("phase", name="input_warm", seconds=seconds)
        with open_loader(loader["workers"], cold=False) as batches:
            self.phase_done(
                "input_warm", harness.input_loop(batches, backend.batch_len, seconds, delay_s=delay)
            )

        seconds = budget.slice("input_cold")
        self.emit("phase", name="input_cold", seconds=seconds)
        dropped = images.drop_cached_pages(files)
        with open_loader(loader["workers"], cold=True) as batches:
            cold = harness.input_loop(
                batches, backend.batch_len, seconds, max_samples=len(files), delay_s=delay
            )
        cold["pages_dropped"] = dropped
        self.phase_done("input_cold", cold)

        self.guarded("node", self.node_supply, backend, files, labels, batch, loader, cores, budget)

        cold_e2e = self.end_to_end_cold(s.get("cold_end_to_end"))
        seconds = budget.slice("end_to_end")
        self.emit("phase", name="end_to_end", seconds=seconds)
        e2e = self.end_to_end(
            backend, open_loader, loader["workers"], cold_e2e, files, seconds, delay
        )
        self.phase_done("end_to_end", e2e)

        sweep_mode = s.get("sweep", "auto")
        share = e2e.get("input_share") or 0.0
        compute_rate = self.result["phases"]["compute"].get("rate")
        device = (self.result.get("backend") or {}).get("device")
        if device == "cpu" and compute_rate and e2e.get("rate"):
            # on the CPU the pipeline also slows the step itself (shared cores)
            share = max(share, 1.0 - e2e["rate"] / compute_rate)
        if sweep_mode == "full" or (sweep_mode == "auto" and share >= INPUT_BOUND_SHARE):
            self.sweep(backend, open_loader, loader["workers"], e2e, cold_e2e, files, budget, delay)
            self.guarded(
                "alternatives",
                self.measure_alternatives,
                backend,
                files,
                labels,
                batch,
                loader,
                budget,
            )
        if "concurrent" in plan:
            self.guarded(
                "concurrent", self.concurrent_pipelines, files, labels, batch, loader, cores, budget
            )
        self.part("elapsed_s", round(budget.used(), 3))
        return self.result

    # the node view ----------------------------------------------------------------------

    def guarded(self, phase: str, measure: Any, *args: Any) -> None:
        """Run one of the node view's phases; an error there is a note, not a lost probe
        (out of memory still ends the probe: the parent reports it)."""
        try:
            measure(*args)
        except ProbeFailure:
            raise
        except Exception as exc:
            if "out of memory" in str(exc).lower():
                raise
            self.note(f"the {phase} phase failed: {_first_line(exc)}")

    def node_supply(
        self,
        backend: Any,
        files: List[str],
        labels: List[int],
        batch: int,
        loader: Dict[str, Any],
        cores: CoreShare,
        budget: Budget,
    ) -> None:
        """The pipeline alone, cached files, a worker per core of the whole node, unpinned:
        the most this node's CPUs decode, whatever the processes split it into."""
        seconds = budget.slice("node")
        self.emit("phase", name="node", seconds=seconds)
        unpinned = cores.leave_share()
        try:
            _warm(files)
            with backend.open_loader(
                files,
                labels,
                batch,
                workers=cores.count,
                pin_memory=loader["pin_memory"],
                prefetch=loader["prefetch"],
                throttle_bps=None,
            ) as batches:
                result = harness.input_loop(batches, backend.batch_len, seconds)
        finally:
            if unpinned:
                cores.enter_share()
        result["workers"] = cores.count
        result["cores"] = cores.count
        result["unpinned"] = unpinned
        self.phase_done("node", result)

    def measure_alternatives(
        self,
        backend: Any,
        files: List[str],
        labels: List[int],
        batch: int,
        loader: Dict[str, Any],
        budget: Budget,
    ) -> None:
        """Pre-resized images, packed shards, GPU decoding: each measured, or why not."""
        seconds = budget.slice("alternatives")
        self.emit("phase", name="alternatives", seconds=seconds)
        root = os.path.join(os.path.dirname(self.settings["workdir"]), "alternatives")
        baseline = (self.result["phases"].get("input_warm") or {}).get("rate")

        def measure(paths: Any, targets: Any, secs: float) -> Optional[float]:
            _warm(paths)
            with backend.open_loader(
                paths,
                targets,
                min(batch, len(paths)),
                workers=loader["workers"],
                pin_memory=loader["pin_memory"],
                prefetch=loader["prefetch"],
                throttle_bps=None,
            ) as batches:
                return harness.input_loop(batches, backend.batch_len, secs).get("rate")

        found = [
            alternatives.pre_resized(
                backend, files, labels, measure, os.path.join(root, "resized"), seconds * 0.6
            ),
            alternatives.packed_shards(files, labels, os.path.join(root, "shards"), seconds * 0.3),
            alternatives.gpu_decode(backend, files, baseline, seconds * 0.1),
            alternatives.dali(backend, files, labels, batch, baseline, seconds * 0.1),
        ]
        self.phase_done("alternatives", {"found": found})

    def concurrent_pipelines(
        self,
        files: List[str],
        labels: List[int],
        batch: int,
        loader: Dict[str, Any],
        cores: CoreShare,
        budget: Budget,
    ) -> None:
        """N pipelines at once, one per training process (--concurrent)."""
        seconds = budget.slice("concurrent")
        self.emit("phase", name="concurrent", seconds=seconds)
        points = (self.result["phases"].get("sweep") or {}).get("points") or []
        cap = cores.count // cores.processes
        workers = concurrent.concurrent_workers(points, loader["workers"], cap)
        folder = os.path.join(os.path.dirname(self.settings["workdir"]), "concurrent")
        os.makedirs(folder, exist_ok=True)
        _warm(files)
        unpinned = cores.leave_share()  # the pipelines inherit this thread's affinity
        try:
            result = concurrent.run_concurrent(
                self.settings.get("boot_argv") or concurrent.default_boot(),
                self.settings,
                files,
                labels,
                batch,
                workers,
                cores.processes,
                seconds,
                folder,
            )
        finally:
            if unpinned:
                cores.enter_share()
        self.phase_done("concurrent", result)

    def prepare_files(self, backend: Any, seconds: float) -> Any:
        s = self.settings
        deadline = time.monotonic() + seconds
        if s.get("data"):
            files, labels, total, complete = images.list_image_folder(s["data"], s["sample_files"])
            source = {"source": "user", "path": s["data"], "files_total": total}
            if not complete:
                source["files_total_complete"] = False  # the walk stopped; a lower bound
            if not files:
                raise ProbeFailure("data", "no JPEG or PNG files under {}".format(s["data"]))
        else:
            files, labels = images.generate_dataset(
                s["workdir"], s["sample_files"], backend.encode_jpeg
            )
            width, height = images.GENERATED_SIZE
            source = {
                "source": "generated",
                "path": None,
                "files_total": len(files),
                "generated_size": f"{width}x{height}",
            }
        check = images.validate(
            files, labels, backend.decode, max(0.5, deadline - time.monotonic())
        )
        source.update({k: v for k, v in check.items() if k not in ("files", "labels", "skipped")})
        source["files_sampled"] = len(files)
        self.part("dataset", source)
        if check["skipped"]:
            self.note(
                f"{check['skipped']} of {len(files)} sampled files were skipped: not regular "
                f"files, or larger than {images.MAX_FILE_BYTES // 2**20} MiB"
            )
        if check["corrupt"]:
            self.note(
                f"{check['corrupt']} of {len(files)} sampled files could not be decoded "
                "and were skipped"
            )
        return check["files"], check["labels"]

    def end_to_end_cold(self, asked: Optional[bool]) -> bool:
        """Feed the end-to-end run cold files when the whole data folder cannot stay in
        the page cache: then every epoch reads from the disk."""
        if asked is not None:
            return bool(asked)
        dataset = self.result.get("dataset") or {}
        available = images.available_memory_bytes()
        if dataset.get("source") != "user" or not dataset.get("mean_bytes") or not available:
            return False
        estimate = dataset["mean_bytes"] * dataset.get("files_total", 0)
        if estimate <= available:
            return False
        self.note(
            f"the data folder (about {estimate / 2**30:.1f} GiB) is larger than the memory "
            f"available for caching it ({available / 2**30:.1f} GiB): end to end reads cold"
        )
        return True

    def build_model(self, backend: Any, batch: int, classes: int) -> int:
        s = self.settings
        requested = batch
        while True:
            try:
                backend.build(s["model"], batch, s["image_size"], classes)
                backend.compute_step()
                backend.sync()
                break
            except Exception as exc:  # MemoryError too: running out of host memory
                if not (backend.is_oom(exc) or is_oom(exc)):
                    raise
                if batch <= 1:
                    raise ProbeFailure(
                        "oom", f"out of memory even at batch size 1: {_first_line(exc)}"
                    ) from exc
            # Released only here, after the except block: until then the exception's
            # traceback keeps the failed step's frames, and with them its device tensors.
            backend.release()
            batch //= 2
        self.part("batch", {"requested": requested, "used": batch})
        if batch != requested:
            self.note(f"out of memory at batch size {requested}; measured at {batch}")
        return batch

    def end_to_end(
        self,
        backend: Any,
        open_loader: Any,
        workers: int,
        cold: bool,
        files: List[str],
        seconds: float,
        delay: float,
    ) -> Dict[str, Any]:
        if cold:
            images.drop_cached_pages(files)
        else:
            _warm(files)
        with open_loader(workers, cold=cold) as batches:
            result = harness.end_to_end_loop(
                batches,
                backend.batch_len,
                backend.to_device,
                backend.train_step,
                backend.sync,
                seconds,
                max_samples=len(files) if cold else None,
                delay_s=delay,
            )
        result["workers"] = workers
        result["cache"] = "cold" if cold else "warm"
        return result

    def sweep(
        self,
        backend: Any,
        open_loader: Any,
        used: int,
        e2e: Dict[str, Any],
        cold: bool,
        files: List[str],
        budget: Budget,
        delay: float,
    ) -> None:
        budget.slice("sweep")
        candidates = [w for w in self.settings["worker_candidates"] if w != used]
        points = [{"workers": used, "rate": e2e["rate"], "input_share": e2e.get("input_share")}]
        for index, workers in enumerate(candidates):
            seconds = budget.left() / (len(candidates) - index)
            if seconds < 0.3:
                self.note(f"budget spent before workers={workers} could be measured")
                break
            self.emit("phase", name="sweep", seconds=seconds, workers=workers)
            point = self.end_to_end(backend, open_loader, workers, cold, files, seconds, delay)
            points.append(
                {"workers": workers, "rate": point["rate"], "input_share": point.get("input_share")}
            )
            self.emit("sweep_point", value=points[-1])
        points.sort(key=lambda p: p["workers"])
        self.phase_done("sweep", {"points": points})


def _warm(files: List[str]) -> None:
    for path in files:
        with contextlib.suppress(OSError):
            images.read_file(path)


# How frameworks word running out of memory: CUDA, the CPU allocator of PyTorch
# ("DefaultCPUAllocator: not enough memory"), TensorFlow ("OOM when allocating tensor").
OOM_WORDS = ("out of memory", "not enough memory", "oom when allocating", "resourceexhausted")


def is_oom(exc: BaseException) -> bool:
    """Out of memory, on any device, whatever the framework called it."""
    if isinstance(exc, MemoryError) or "OutOfMemory" in type(exc).__name__:
        return True
    if "ResourceExhausted" in type(exc).__name__:
        return True
    text = str(exc).lower()
    return any(word in text for word in OOM_WORDS)


def _first_line(exc: BaseException) -> str:
    """The exception's most telling line: for running out of memory, the line that says so
    (TensorFlow's first line is only "Graph execution error:"), otherwise the first."""
    text = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    telling = [line for line in text if any(word in line.lower() for word in OOM_WORDS)]
    line = telling[0] if telling else (text[0] if text else "")
    return f"{type(exc).__name__}: {line[:300]}"


def main(settings_path: str) -> None:
    with open(settings_path, encoding="utf-8") as handle:
        settings = json.load(handle)
    if settings.get("role") == "pipeline":  # one of the --concurrent pipelines
        concurrent.pipeline_main(settings)
        return
    emitter = Emitter()
    probe = Probe(settings, emitter)
    try:
        result = probe.run()
        emitter.emit("done", result=result)
    except ProbeFailure as failure:
        emitter.emit("failed", kind=failure.kind, message=failure.message, result=probe.result)
    except BaseException as exc:  # the parent turns this into a finding, not a traceback
        backend_oom = is_oom(exc)
        traceback.print_exc()
        emitter.emit(
            "failed",
            kind="oom" if backend_oom else "framework",
            message=_first_line(exc),
            result=probe.result,
        )
    sys.stderr.flush()
    os._exit(0)  # skip framework teardown (slow, sometimes hangs)


if __name__ == "__main__":
    main(sys.argv[1])
