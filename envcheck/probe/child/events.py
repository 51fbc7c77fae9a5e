"""The child's one channel to the parent: JSON lines on the real stdout.

Frameworks print to stdout (TensorFlow's banners, warnings); file descriptor 1 is pointed
at stderr for the whole run and events go to a private duplicate of the original stdout,
so nothing else can interleave with them.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from typing import Any


class Emitter:
    def __init__(self) -> None:
        self._fd = os.dup(1)
        os.dup2(2, 1)
        self._start = time.monotonic()

    def emit(self, event: str, **fields: Any) -> None:
        fields["event"] = event
        fields["t"] = round(time.monotonic() - self._start, 4)
        line = json.dumps(fields, default=str) + "\n"
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os.write(self._fd, line.encode("utf-8"))
