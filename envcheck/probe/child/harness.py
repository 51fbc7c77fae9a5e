"""Timed loops shared by both backends: compute alone, input alone, and end to end.

Warm-up steps (worker start-up, graph tracing, cuDNN autotuning) run before the clock
starts, inside the phase's time (at least two steps are measured whatever the time).
The end-to-end loop synchronises the device after the copy and after the step, so
"waiting for input" is time the device really had nothing to do, as the TensorFlow
Profiler counts it, not time hidden behind asynchronous kernel launches.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, Iterator, Optional


def _rate(samples: int, seconds: float) -> Optional[float]:
    return samples / seconds if seconds > 0 and samples > 0 else None


def compute_loop(
    step: Callable[[], None],
    sync: Callable[[], None],
    batch: int,
    seconds: float,
    warmup: int = 3,
) -> Dict[str, Any]:
    """The model on a synthetic batch already on the device: the compute ceiling."""
    t0 = time.perf_counter()
    deadline = t0 + seconds  # warm-up included: a slow warm-up shortens the measurement
    for _ in range(warmup):
        step()
    sync()
    warm = time.perf_counter() - t0
    steps = 0
    start = time.perf_counter()
    while steps < 2 or time.perf_counter() < deadline:
        step()
        steps += 1
        if steps % 4 == 0 or steps < 4:
            sync()
    sync()
    elapsed = time.perf_counter() - start
    return {
        "rate": _rate(steps * batch, elapsed),
        "steps": steps,
        "seconds": elapsed,
        "warmup_s": warm,
        "step_s": elapsed / steps,
    }


def input_loop(
    batches: Iterator[Any],
    batch_len: Callable[[Any], int],
    seconds: float,
    warmup: int = 2,
    max_samples: Optional[int] = None,
    delay_s: float = 0.0,
) -> Dict[str, Any]:
    """The input pipeline alone: host batches as fast as it can produce them."""
    t0 = time.perf_counter()
    deadline = t0 + seconds
    for _ in range(warmup):
        next(batches)
    warm = time.perf_counter() - t0
    samples = steps = 0
    start = time.perf_counter()
    while steps < 2 or time.perf_counter() < deadline:
        if delay_s:
            time.sleep(delay_s)
        samples += batch_len(next(batches))
        steps += 1
        if max_samples is not None and samples >= max_samples:
            break
    elapsed = time.perf_counter() - start
    return {
        "rate": _rate(samples, elapsed),
        "steps": steps,
        "samples": samples,
        "seconds": elapsed,
        "warmup_s": warm,
    }


def end_to_end_loop(
    batches: Iterator[Any],
    batch_len: Callable[[Any], int],
    to_device: Callable[[Any], Any],
    train_step: Callable[[Any], None],
    sync: Callable[[], None],
    seconds: float,
    warmup: int = 2,
    max_samples: Optional[int] = None,
    delay_s: float = 0.0,
) -> Dict[str, Any]:
    """The model fed by the pipeline; splits each step into wait, copy and compute."""
    t0 = time.perf_counter()
    deadline = t0 + seconds
    for _ in range(warmup):
        train_step(to_device(next(batches)))
    sync()
    warm = time.perf_counter() - t0
    wait = copy = compute = 0.0
    samples = steps = 0
    start = time.perf_counter()
    while steps < 2 or time.perf_counter() < deadline:
        a = time.perf_counter()
        if delay_s:
            time.sleep(delay_s)
        host = next(batches)
        b = time.perf_counter()
        device = to_device(host)
        sync()
        c = time.perf_counter()
        train_step(device)
        sync()
        d = time.perf_counter()
        wait += b - a
        copy += c - b
        compute += d - c
        samples += batch_len(host)
        steps += 1
        if max_samples is not None and samples >= max_samples:
            break
    elapsed = time.perf_counter() - start
    return {
        "rate": _rate(samples, elapsed),
        "steps": steps,
        "samples": samples,
        "seconds": elapsed,
        "warmup_s": warm,
        "wait_s": wait,
        "copy_s": copy,
        "compute_s": compute,
        "input_share": wait / elapsed if elapsed > 0 else None,
        "copy_share": copy / elapsed if elapsed > 0 else None,
    }
