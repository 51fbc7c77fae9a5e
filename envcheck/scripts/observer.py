"""The observer protocol: one family of observations (DataLoader, torch training loops,
tf.data, Keras) that the walker (analyze.py) feeds, one module per family.

`call` sees every call during the single walk over the file, with its qualified name;
`finish` runs once after the walk, for what needs the whole file (loops, pipelines).
Observers write plain JSON observations into the walker's FileReport and file facts;
rules judge them, observers never do.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional, Protocol, runtime_checkable

if TYPE_CHECKING:
    from envcheck.scripts.analyze import Walker


@runtime_checkable
class Observer(Protocol):
    def call(self, walker: Walker, node: ast.Call, name: Optional[str]) -> None:
        """One call of the file, with its qualified name (None when not a plain name)."""

    def finish(self, walker: Walker) -> None:
        """After the walk: observations that need the whole file."""
