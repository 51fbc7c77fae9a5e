"""Each EC5xx rule's examples as source snippets (one `<ID>.toml` per rule): a script that
fails the rule and the same script fixed. tests/test_scripts_snippets.py runs every
snippet through the real analyser and rule; docs/rules.md shows them (envcheck.docs_gen).

Each `[[snippet]]` has `name`, `expect` (fail or pass), `source`, and optionally `line`
(where the finding is), `system` (the training machine's platform, default Linux) and
`packages` (installed versions, e.g. Keras 2). The training machine is otherwise
`MACHINE`: 16 usable CPUs of 64, one A100. Sources are written as `ruff format` writes
them: docs/rules.md shows them, and `ruff format --check` reads its Python code blocks."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from envcheck.tomlread import load_toml

FOLDER = Path(__file__).parent
MACHINE: dict[str, Any] = {
    "cpu": {"usable": 16, "logical": 64},
    "gpu": {
        "status": "ok",
        "devices": [{"index": 0, "name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0"}],
    },
}


@dataclass(frozen=True)
class Snippet:
    rule: str
    name: str
    expect: str
    source: str
    line: Optional[int] = None
    system: str = "Linux"
    packages: dict[str, str] = field(default_factory=dict)

    def machine(self) -> dict[str, Any]:
        """The training machine's sections (and installed packages) for this snippet."""
        facts: dict[str, Any] = {**MACHINE, "platform": {"system": self.system}}
        if self.packages:
            facts["packages"] = dict(self.packages)
            facts["modules"] = {"providers": {name: [name] for name in self.packages}}
        return facts


def rules() -> list[str]:
    """The rules with snippets, in id order."""
    return sorted(p.stem for p in FOLDER.glob("EC*.toml"))


def load(rule_id: str) -> list[Snippet]:
    path = FOLDER / f"{rule_id}.toml"
    if not path.is_file():
        return []
    return [
        Snippet(
            rule=rule_id,
            name=str(entry["name"]),
            expect=str(entry["expect"]),
            source=str(entry["source"]).lstrip("\n"),
            line=entry.get("line"),
            system=str(entry.get("system", "Linux")),
            packages=dict(entry.get("packages", {})),
        )
        for entry in load_toml(path).get("snippet", [])
    ]
