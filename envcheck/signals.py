"""SIGTERM as an exception, so that cleanup code runs before envcheck ends.

Slurm, Kubernetes and `timeout` stop a job with SIGTERM, whose default action ends the
process at once: a probe child (in its own session, so it gets no signal of its own)
would keep running and its temporary folder (tens of MB of images) would stay. While a
child is alive envcheck turns SIGTERM into `Terminated`, raised in the main thread, so the
same `finally` blocks that handle Ctrl-C end the child and remove the folder; the command
then exits 143 (128 + SIGTERM), as if the signal had ended it.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from types import FrameType
from typing import Any, Iterator, Optional


class Terminated(BaseException):
    """SIGTERM arrived; BaseException so that `except Exception` does not swallow it."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum


def _raise(signum: int, _frame: Optional[FrameType]) -> None:
    raise Terminated(signum)


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """Within the block SIGTERM raises Terminated (main thread only; a no-op elsewhere)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: Any = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
