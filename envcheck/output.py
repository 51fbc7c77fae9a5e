"""Write what a command produces, to a file (-o) or stdout, without surprises.

- `-o` is checked when the command line is parsed, before any work (a training command,
  a probe): a folder, a missing parent folder or an unwritable file is a usage error.
- Text that cannot be encoded (a file name that is not valid UTF-8 travels as lone
  surrogates) is written as `\\udcXX`: valid inside JSON strings, so `collect > s.json`
  then `doctor --facts s.json` gives back the same path, and visible in text. The content
  is encoded before the file is opened: a failure never leaves an empty file behind.
- `-o` naming one of the command's inputs (the --facts snapshot, diff's A or B, --target,
  a script, a config or rule file) or a path inside the --data folder is refused before
  the file is opened (envcheck.inputs): one line, exit 2, the input left as it was.
- A full disk (`> /dev/full`), a stdout closed by the shell (`>&-`) or any write error
  is one line and exit 2 (InputError); a reader that went away (`| head -1`) ends the
  output silently, the exit code unchanged.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import IO, Iterator, Optional

from envcheck import inputs
from envcheck.errors import InputError
from envcheck.report.escape import visible

ENCODE_ERRORS = "backslashreplace"


def target_problem(path: Path) -> Optional[str]:
    """Why `path` cannot be written, or None; nothing is created or changed."""
    if path.is_dir():
        return "is a folder"
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        return f"no such folder {visible(str(parent))}"
    if path.exists():
        if not os.access(path, os.W_OK):
            return "not writable (permission denied)"
        return None
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot create a file in {visible(str(parent))} (permission denied)"
    return None


def check_target(path: Optional[Path]) -> Optional[Path]:
    """Option callback for -o: a usage error before any work when it cannot be written."""
    if path is None:
        return None
    problem = target_problem(path)
    if problem:
        import typer  # only on the error path

        raise typer.BadParameter(f"{visible(str(path))}: cannot write ({problem})")
    return path


def harden_streams() -> None:
    """stdout and stderr write unencodable characters as escapes instead of raising."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(Exception):
                reconfigure(errors=ENCODE_ERRORS)


def silence_stdout() -> None:
    """The reader of stdout is gone: send whatever is still buffered to /dev/null."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


@contextlib.contextmanager
def guarded_stdout() -> Iterator[None]:
    """Around writing to stdout: a closed pipe ends quietly, a write error is InputError.

    A stdout closed before envcheck started (`>&-`) is None in Python: a usage error of
    the shell line, one line and exit 2 like a full disk, not an AttributeError."""
    if sys.stdout is None:
        raise InputError("stdout: cannot write (it is closed)")
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
    except OSError as exc:
        silence_stdout()  # the interpreter's own final flush would fail the same way
        raise InputError(f"stdout: cannot write ({exc.strerror or exc})") from None


def refuse_inputs(path: Path) -> None:
    """InputError when writing `path` would overwrite (or write into) an input read by
    this command: the user's snapshot or script is worth more than the report."""
    noted = inputs.clash(path)
    if noted is None:
        return
    where = "" if noted.tree else f" ({visible(str(noted.path))})"
    raise InputError(
        f"-o {visible(str(path))}: refused: it is {noted.label}{where}; nothing written"
    )


def write(content: str, path: Optional[Path]) -> None:
    """`content` to the file `path`, or to stdout when path is None."""
    data = content.encode("utf-8", ENCODE_ERRORS)
    if path is None:
        with guarded_stdout():
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
        return
    refuse_inputs(path)
    try:
        with open(path, "wb") as handle:
            handle.write(data)
    except OSError as exc:
        raise InputError(f"-o {visible(str(path))}: cannot write ({exc.strerror or exc})") from None


@contextlib.contextmanager
def open_text(path: Path) -> Iterator[IO[str]]:
    """A text file for a reporter that writes as it goes (the rich console)."""
    refuse_inputs(path)
    try:
        with open(path, "w", encoding="utf-8", errors=ENCODE_ERRORS) as handle:
            yield handle
    except OSError as exc:
        raise InputError(f"-o {visible(str(path))}: cannot write ({exc.strerror or exc})") from None
