"""Start a foreign Python interpreter so that nothing in the current folder runs.

`python -c CODE` puts the working directory first on `sys.path`, and the interpreter's
start-up (site.py: sitecustomize, usercustomize) already imports from it before CODE runs:
a `platform.py` or `sitecustomize.py` in an audited checkout would run during a "static"
audit (an untrusted pull request in CI). Every child of a foreign interpreter therefore
starts in a fresh, empty, private folder and drops the empty path entry before anything
else; the query of the interpreter also runs with `-E -s` (`-I` without `-P`, and known to
Python 2.7 as well), since it needs nothing but the standard library.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from typing import Iterator, Sequence

from envcheck import subprocess_runner

# Flags for a query that needs only the standard library: ignore PYTHON* variables and
# the user's site-packages (`-I` minus `-P`, which the neutral folder makes needless).
STDLIB_ONLY_FLAGS = ("-E", "-s")

# First statement of every inline script: the empty entry is the (neutral) working folder.
DROP_CWD = "import sys; sys.path[:] = [p for p in sys.path if p]\n"


@contextlib.contextmanager
def neutral_folder() -> Iterator[str]:
    """A fresh empty folder only this user can write, removed afterwards."""
    path = tempfile.mkdtemp(prefix="envcheck-isolated-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def python_argv(
    executable: str, script: str, flags: Sequence[str] = (), args: Sequence[str] = ()
) -> list[str]:
    """`executable [flags] -c script args`, the script preceded by DROP_CWD."""
    return [executable, *flags, "-c", DROP_CWD + script, *args]


def run_python(
    executable: str,
    script: str,
    timeout: float,
    flags: Sequence[str] = (),
    args: Sequence[str] = (),
) -> subprocess_runner.Completed:
    """Run an inline script in `executable` from a fresh neutral folder."""
    argv = python_argv(executable, script, flags, args)
    with neutral_folder() as folder:
        return subprocess_runner.run(argv, timeout, cwd=folder)
