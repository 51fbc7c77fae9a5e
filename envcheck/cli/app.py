"""The typer application, its exit codes, and the guard that turns every error into one
line and an exit code."""

from __future__ import annotations

import functools
import inspect
import os
import re
import sys
import traceback
from collections.abc import Sequence
from typing import Annotated, Any, Callable, NoReturn, Optional, TypeVar

import typer
from typer.core import TyperGroup

from envcheck import __version__, inputs, signals
from envcheck import output as outputs
from envcheck.errors import EnvcheckError
from envcheck.report.escape import visible

EXIT_OK, EXIT_FINDINGS, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3


class OneLineUsageErrors(TyperGroup):
    """Usage errors (an unknown option, a value out of its choices or range, a missing
    argument) as one line on stderr and exit 2, like every other bad input, instead of
    typer's boxed usage panel. `--help`, no arguments (help) and exit codes are unchanged."""

    def main(
        self,
        args: Optional[Sequence[str]] = None,
        prog_name: Optional[str] = None,
        complete_var: Optional[str] = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        run = functools.partial(
            super().main, args, prog_name, complete_var, False, windows_expand_args, **extra
        )
        if not standalone_mode:
            return run()
        try:
            code = run()
        except typer.Abort:
            typer.echo("envcheck: aborted", err=True)
            sys.exit(1)
        except Exception as exc:
            if not (hasattr(exc, "format_message") and hasattr(exc, "exit_code")):
                raise  # not a usage error (click's ClickException interface)
            _usage_error(exc)
        sys.exit(code if isinstance(code, int) else EXIT_OK)


def _usage_error(exc: Any) -> NoReturn:
    if type(exc).__name__ == "NoArgsIsHelpError":  # a bare group: its help, as before
        exc.show()
        sys.exit(exc.exit_code)
    ctx = getattr(exc, "ctx", None)
    hint = f" (see {ctx.command_path} --help)" if ctx is not None else ""
    typer.echo(f"envcheck: error: {visible(exc.format_message())}{hint}", err=True)
    sys.exit(exc.exit_code)


app = typer.Typer(
    cls=OneLineUsageErrors,
    name="envcheck",
    help="Why is GPU training slow here, and which fix buys the most? "
    "Audits the environment, the machine, the data and the training scripts, and measures "
    "the input pipeline with a short training probe.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
rules_app = typer.Typer(help="List and explain the rules envcheck applies.", no_args_is_help=True)
app.add_typer(rules_app, name="rules")

F = TypeVar("F", bound=Callable[..., Any])


def guarded(command: F) -> F:
    """Turn domain errors into exit 2 and crashes into exit 3, each as one line."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        verbose = bool(kwargs.get("verbose")) or bool(os.environ.get("ENVCHECK_DEBUG"))
        inputs.forget()  # what an earlier command in this process read is not ours
        try:
            return command(*args, **kwargs)
        except typer.Exit:
            raise
        except EnvcheckError as exc:
            typer.echo(f"envcheck: error: {visible(str(exc))}", err=True)
            raise typer.Exit(EXIT_INPUT) from None
        except BrokenPipeError:  # the reader of stdout went away (`| head -1`)
            outputs.silence_stdout()
            raise typer.Exit(EXIT_OK) from None
        except KeyboardInterrupt:
            typer.echo("envcheck: interrupted", err=True)
            raise typer.Exit(130) from None
        except signals.Terminated as exc:  # SIGTERM while a child ran: cleaned up, now end
            typer.echo("envcheck: terminated", err=True)
            raise typer.Exit(128 + exc.signum) from None
        except Exception as exc:
            if verbose:
                traceback.print_exc()
            hint = "" if verbose else " (run with -v for the traceback)"
            what = visible(f"{type(exc).__name__}: {exc}")
            typer.echo(f"envcheck: internal error: {what}{hint}", err=True)
            raise typer.Exit(EXIT_INTERNAL) from None

    return wrapper  # type: ignore[return-value]


def reflow(text: str) -> str:
    """Join each paragraph's lines into one.

    Typer's rich help keeps a docstring's hard line breaks, so lines written for an
    88-column source break mid-sentence in an 80-column terminal; a paragraph given as one
    line is wrapped at the terminal's width instead. List items ("- ...") keep their own
    lines.
    """
    paragraphs = []
    for block in re.split(r"\n\s*\n", text.strip()):
        lines: list[str] = []
        for raw in block.splitlines():
            line = raw.strip()
            if lines and not line.startswith("- "):
                lines[-1] = f"{lines[-1]} {line}"
            else:
                lines.append(line)
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


def reflow_help(*apps: typer.Typer) -> None:
    """Reflow every registered command's help (its help= or its docstring) once."""
    for each in apps:
        for info in each.registered_commands:
            text = info.help if isinstance(info.help, str) else inspect.getdoc(info.callback)
            if text:
                info.help = reflow(text)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"envcheck {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version_callback,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """envcheck: measure why GPU training is slow and rank the fixes."""


def main() -> None:
    outputs.harden_streams()
    try:
        app()
    except BrokenPipeError:  # --help or --version into `| head -1`
        outputs.silence_stdout()
        sys.exit(EXIT_OK)
    except OSError as exc:  # only writing help or usage gets here: commands are guarded
        outputs.silence_stdout()
        typer.echo(f"envcheck: error: stdout: cannot write ({exc.strerror or exc})", err=True)
        sys.exit(EXIT_INPUT)
