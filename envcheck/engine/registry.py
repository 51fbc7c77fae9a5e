"""One registry of rules by id: duplicates refused, user rule files and folders added.

Which rules are built in is envcheck.rulebook's business, not the engine's."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator, Optional

from envcheck.engine import toml_rules
from envcheck.engine.rule import Rule
from envcheck.errors import InputError


class Registry:
    def __init__(self, rules: Iterable[Rule] = ()):
        self._rules: dict[str, Rule] = {}
        for rule in rules:
            self.add(rule)

    def add(self, rule: Rule) -> None:
        existing = self._rules.get(rule.id)
        if existing is not None:
            raise InputError(
                f"{rule.origin}: rule id {rule.id} is already defined by {existing.origin}"
            )
        self._rules[rule.id] = rule

    def add_path(self, path: Path) -> None:
        """A user rule file, or every *.toml file in a folder."""
        if path.is_dir():
            files = sorted(path.glob("*.toml"))
            if not files:
                raise InputError(f"--rules {path}: no *.toml rule files in this folder")
        elif path.exists():
            files = [path]
        else:
            raise InputError(f"--rules {path}: no such file or folder")
        for file in files:
            for rule in toml_rules.load_file(file, origin=str(file)):
                self.add(rule)

    def get(self, rule_id: str) -> Optional[Rule]:
        return self._rules.get(rule_id.upper())

    def __iter__(self) -> Iterator[Rule]:
        return iter(sorted(self._rules.values(), key=lambda r: r.id))

    def __len__(self) -> int:
        return len(self._rules)
