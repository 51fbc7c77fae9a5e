"""The command line: a thin typer layer. Options in, exit code out.

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 usage or input
error (one line on stderr); 3 internal error (one line; the traceback with -v).

One module a command; importing them registers the commands, in the order `--help`
lists them.
"""

# isort: off
from envcheck.cli import doctor  # noqa: F401  doctor, collect
from envcheck.cli import scripts  # noqa: F401
from envcheck.cli import probe  # noqa: F401
from envcheck.cli import run  # noqa: F401
from envcheck.cli import fix  # noqa: F401
from envcheck.cli import diff  # noqa: F401
from envcheck.cli import rules  # noqa: F401
from envcheck.cli.app import app, main, reflow_help, rules_app

reflow_help(app, rules_app)

# isort: on

__all__ = ["app", "main"]
