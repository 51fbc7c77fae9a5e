"""envcheck's start-up hook for `envcheck run --measure` and `envcheck fix`.

Python imports `sitecustomize` at start-up from sys.path; envcheck prepends this folder
to the child's PYTHONPATH, so this file runs first in the user's program and in every
process it starts (spawned loader workers included). It installs the measuring agent
and then imports the `sitecustomize` it shadows, if there is one, as Python would have.
Nothing here may break the program: any failure of the agent is written once to stderr
and the program runs on, unmeasured.
"""

import contextlib
import os
import sys


def _install() -> None:
    try:
        import importlib

        importlib.import_module("envcheck_measure_agent").install()
    except Exception as exc:  # the user's program runs on, unmeasured
        with contextlib.suppress(Exception):
            sys.stderr.write(f"envcheck: the measuring hook is off ({type(exc).__name__}: {exc})\n")


def _chain() -> None:
    """Import the sitecustomize this one shadows, under its own name, as `site` would."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # what site.execsitecustomize prints for a failing one
        if sys.flags.verbose:
            sys.excepthook(*sys.exc_info())
        else:
            sys.stderr.write(
                "Error in sitecustomize; set PYTHONVERBOSE for traceback:\n"
                f"{type(exc).__name__}: {exc}\n"
            )


_install()
_chain()
