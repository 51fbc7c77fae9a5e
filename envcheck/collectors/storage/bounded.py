"""Calls that may hang or fail, bounded, their failures turned into reasons.

A stat or realpath on a dead NFS server blocks for minutes: it runs in a daemon thread
that is abandoned after `timeout` (`within`); `locate` finds the data path that way. A
command (PowerShell, mount, diskutil) runs with a timeout, the first of several names
that starts (`run_first`). Paths are looked up in the namespace that `ctx.root` stands
for (`in_namespace`): a path under an injected root (the tests' fake trees) is read as
"/" plus its part below the root; with the real root "/" this changes nothing.
"""

from __future__ import annotations

import os
import stat
import subprocess
import threading
from collections.abc import Callable, Sequence
from typing import Any, Optional, TypeVar

from envcheck import subprocess_runner
from envcheck.collectors.base import CollectContext
from envcheck.collectors.storage.facts import FILE_NOTE, mark_unknown

Runner = Callable[[Sequence[str], float], subprocess_runner.Completed]
T = TypeVar("T")


class TimedOut(Exception):
    """A bounded filesystem call did not answer in time."""


def within(func: Callable[[], T], timeout: float) -> T:
    """func() in a daemon thread; TimedOut if it has not answered within `timeout` s."""
    box: list[tuple[bool, Any]] = []

    def body() -> None:
        try:
            box.append((True, func()))
        except BaseException as exc:  # raised in a thread it would be lost
            box.append((False, exc))

    thread = threading.Thread(target=body, name="envcheck-storage-stat", daemon=True)
    thread.start()
    thread.join(timeout)
    if not box:
        raise TimedOut
    ok, value = box[0]
    if not ok:
        raise value
    result: T = value
    return result


def resolve(path: str) -> tuple[str, bool]:
    """The path with symlinks resolved, and whether it is a folder; OSError if unreadable."""
    mode = os.stat(path).st_mode
    return os.path.realpath(path), stat.S_ISDIR(mode)


def in_namespace(ctx: CollectContext, real: str) -> str:
    """A real path as seen in the namespace `ctx.root` stands for ("/" in production)."""
    root = os.path.realpath(ctx.root)
    if root == os.sep:
        return real
    rel = os.path.relpath(real, root)
    if rel == os.curdir:
        return "/"
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return real
    return "/" + rel.replace(os.sep, "/")


def locate(
    ctx: CollectContext, facts: dict[str, Any], timeout: float
) -> Optional[tuple[str, bool]]:
    """ctx.data as seen in the namespace, and whether that is certain; None when it cannot
    be read (facts are then unknown, with the reason).

    A path that does not answer within `timeout` (a dead NFS server) is taken as given,
    symlinks unresolved, and said so; facts["resolved"] stays null then.
    """
    assert ctx.data is not None
    given = str(ctx.data)
    try:
        real, is_dir = within(lambda: resolve(given), timeout)
    except TimedOut:
        why = (
            f"the path did not answer within {timeout:g} s (a hung network mount?); its "
            "mount is looked up by the path as given, symlinks unresolved"
        )
        facts["reasons"]["resolved"] = why
        facts["notes"].append(why)
        return in_namespace(ctx, os.path.abspath(given)), False
    except OSError as exc:
        missing = isinstance(exc, FileNotFoundError)
        mark_unknown(
            facts,
            f"{given} does not exist" if missing else f"cannot read {given}: {os_reason(exc)}",
        )
        return None
    path = in_namespace(ctx, real)
    facts["resolved"] = path
    if not is_dir:
        facts["notes"].append(FILE_NOTE)
    return path, True


def os_reason(exc: OSError) -> str:
    """The OS error's own words, else its type."""
    return exc.strerror or type(exc).__name__


def run_first(
    commands: Sequence[Sequence[str]], run: Runner, timeout: float, what: str
) -> tuple[Optional[subprocess_runner.Completed], str]:
    """The first command that starts; (None, why) when none could, or it hung."""
    missing = []
    for argv in commands:
        try:
            return run(argv, timeout), ""
        except subprocess.TimeoutExpired:
            return None, f"{what} ({argv[0]}) did not answer within {timeout:g} s"
        except OSError as exc:
            missing.append(f"{argv[0]}: {os_reason(exc)}")
    return None, f"{what} could not be started ({'; '.join(missing)})"


def first_line(text: str) -> str:
    """The first line of a command's output that is not blank."""
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""
