"""Make terminal control characters visible before text reaches a terminal.

File names, dataset paths, GPU process names (chosen by any user of the machine), package
names and strings inside a snapshot are not ours: an ESC in one can retitle the terminal,
clear the screen or hide lines, a carriage return can overwrite a finding, a newline can
forge one, and bidirectional overrides can reorder what is read. Each such character is
shown as its Python escape (`\\x1b`, `\\n`, `\\u202e`); a lone surrogate (a file name
that is not valid UTF-8) is shown as `\\udcXX`. Tabs stay.
"""

from __future__ import annotations

import html
import re

# C0 controls but tab, DEL, C1 controls, bidirectional embeddings/overrides/isolates,
# line and paragraph separators, and lone surrogates.
_UNSAFE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\n":
        return "\\n"
    if char == "\r":
        return "\\r"
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with every control character shown as an escape; one line, always."""
    return _UNSAFE.sub(_escaped, text)


def visible_lines(text: str) -> str:
    """`text` with its line breaks kept and every other control character escaped."""
    return "\n".join(visible(line) for line in text.split("\n"))


def html_escape(text: str) -> str:
    """`text` for an HTML page: markup escaped and control characters shown as escapes.

    html.escape alone leaves ESC and BEL raw: `doctor -f html` goes to the terminal by
    default, where they retitle or clear it, and the HTML spec forbids them in a page."""
    return html.escape(visible_lines(text))
