"""The --data folder: what it holds (walk), what its files are (magic bytes), how fast it reads.

Fills two sections, `dataset` and `read_throughput`, in the shapes of docs/snapshot-data.md.
Both are null when no --data was given. The folder is only ever read: nothing is created,
renamed or written in it.

One module per job: `walk` (the bounded breadth-first walk and its counts), `reads` (the
magic-byte sample and the timed cold and warm reads), `formats` (magic bytes, the
TFRecord CRC), `estimate` (the totals after an incomplete walk), `sections` (from the
tally to the sections); `tally` is what they share.

Budget. `ctx.data_budget_s` covers everything: the walk gets the first `WALK_SHARE` of it
(all of it that it needs, if it finishes early), the rest goes to the magic-byte sample
(`MAGIC_SHARE` of what is left), the cold read pass (`COLD_SHARE` of what is then left)
and the warm pass (the remainder). Decisions against the budget use `clock`, which tests
inject to make budget exhaustion deterministic.

Hangs. A folder on a dead network mount blocks `stat`, `getdents` or `read` for minutes.
All file-system work runs in one daemon thread that merges its results into a shared
tally under a lock, folder by folder and file by file. The caller waits for it at most
the budget plus `GRACE_S` seconds of real time; if it has not finished by then, the
sections report what had been merged, say why in `reasons`, and the thread is abandoned
(what it merges later is dropped).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Optional

from envcheck.collectors.base import CollectContext
from envcheck.collectors.dataset.reads import magic_sample, read_sample
from envcheck.collectors.dataset.sections import DATASET_KEYS, dataset_section, throughput_section
from envcheck.collectors.dataset.tally import (
    GRACE_S,
    MAGIC_SAMPLE,
    MAGIC_SHARE,
    READ_SAMPLE,
    WALK_SHARE,
    Clock,
    Shared,
    share_deadline,
)
from envcheck.collectors.dataset.walk import breadth_first, spread

__all__ = ["DATASET_KEYS", "collect"]


def collect(
    ctx: CollectContext, clock: Clock = time.monotonic, hang_timeout: Optional[float] = None
) -> dict[str, Any]:
    """{"dataset": ..., "read_throughput": ...}; both None without --data. Never raises.

    `hang_timeout`: real seconds to wait for the file-system thread (default: the budget
    plus GRACE_S).
    """
    if ctx.data is None:
        return {"dataset": None, "read_throughput": None}
    budget = max(0.0, float(ctx.data_budget_s))
    shared = Shared()
    start = clock()
    worker = threading.Thread(
        target=_work,
        args=(os.fspath(ctx.data), budget, clock, shared),
        name="envcheck-dataset",
        daemon=True,
    )
    worker.start()
    worker.join(budget + GRACE_S if hang_timeout is None else hang_timeout)
    with shared.lock:
        shared.abandoned = True  # from here on the worker's results are dropped
        hung = not shared.finished
        if hung and shared.walk_seconds is None:
            shared.walk_seconds = clock() - start
        waited = budget + GRACE_S if hang_timeout is None else hang_timeout
        return {
            "dataset": dataset_section(os.fspath(ctx.data), shared, hung, waited, budget),
            "read_throughput": throughput_section(shared, hung, waited),
        }


def _work(root: str, budget: float, clock: Clock, shared: Shared) -> None:
    """The thread's body: walk, magic sample, cold and warm passes, each within its share."""
    try:
        start = clock()
        deadline = start + budget
        breadth_first(root, start + WALK_SHARE * budget, clock, shared)
        with shared.lock:
            if shared.dropped() or shared.error is not None:
                return
            shared.walk_seconds = clock() - start
            shared.phase = "magic"
            sample = spread(shared.candidates, READ_SAMPLE)
        failed: set[str] = set()
        magic_sample(
            sample[:MAGIC_SAMPLE],
            share_deadline(clock, deadline, MAGIC_SHARE),
            clock,
            shared,
            failed,
        )
        read_sample(sample, deadline, clock, shared, failed)
    except BaseException as exc:  # raised in a thread it would be lost, and nothing reported
        with shared.lock:
            shared.failure = f"{type(exc).__name__}: {exc}"
    finally:
        with shared.lock:
            shared.finished = True
