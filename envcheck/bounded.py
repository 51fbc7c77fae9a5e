"""Call something that may never return (an NVML call on a wedged driver) with a limit.

A GPU that fell off the bus or a hung kernel module can block an NVML call forever, in
any thread that makes it. The call runs in a daemon thread; when it does not finish in
time the caller gets `Hung` with a reason and goes on (the thread is abandoned; being a
daemon it cannot keep the process alive). Used for every NVML call made outside the
sampler's own thread: initialisation, device lookup, counting and shutdown.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, TypeVar

T = TypeVar("T")

NVML_TIMEOUT_S = 10.0  # the GPU collector's limit for its whole reading


class Hung(Exception):
    """The call did not return within its limit."""


def call(function: Callable[[], T], timeout: float, what: str) -> T:
    """`function()`, or Hung after `timeout` s; its own exception is raised here."""
    outcome: list[tuple[bool, Any]] = []

    def body() -> None:
        try:
            outcome.append((True, function()))
        except BaseException as exc:  # raised in a thread it would be lost
            outcome.append((False, exc))

    thread = threading.Thread(target=body, name=f"envcheck-bounded-{what}", daemon=True)
    thread.start()
    thread.join(timeout)
    if not outcome:
        raise Hung(f"{what} did not answer within {timeout:g} s (driver hung?)")
    ok, value = outcome[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]
