"""Documentation generated from the registry stays in step with it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from conftest import cli_flags

from envcheck.docs_gen import render
from envcheck.rulebook import builtin_registry

ROOT = Path(__file__).resolve().parent.parent


def test_rules_reference_is_current() -> None:
    committed = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert committed == render(builtin_registry()), "run `make docs` and commit docs/rules.md"


def test_every_rule_is_documented_where_its_findings_point() -> None:
    """docs/ is not in the wheel: a finding points at `envcheck rules show ID`, which works
    wherever envcheck is installed; the reference in docs/ has a section for each rule."""
    text = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    for rule in builtin_registry():
        assert f"## {rule.id}" in text
        assert rule.docs_ref == f"envcheck rules show {rule.id}"


# Each command and the heading of its section in docs/guide.md.
GUIDE_SECTIONS = {
    ("doctor",): "### `envcheck doctor`",
    ("collect",): "### `envcheck collect`",
    ("probe",): "### `envcheck probe`",
    ("scripts",): "### `envcheck scripts`",
    ("run",): "### `envcheck run`",
    ("fix",): "### `envcheck fix`",
    ("diff",): "### `envcheck diff`",
    ("rules", "list"): "### `envcheck rules list` and `envcheck rules show`",
    ("rules", "show"): "### `envcheck rules list` and `envcheck rules show`",
}


def _command_flags(path: tuple[str, ...]) -> list[str]:
    """Every long option of a command, including the --no- halves of boolean pairs.

    Top-level commands go through conftest's cli_flags; subcommands of a group (rules
    list, rules show) are looked up the same way, one level down."""
    import typer

    from envcheck.cli import app

    group: Any = typer.main.get_command(app)
    command = group.commands[path[0]]
    for name in path[1:]:
        command = command.commands[name]
    flags = cli_flags(path[0]) if len(path) == 1 else []
    for param in command.params:
        for opt in [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]:
            if opt.startswith("--") and opt != "--help" and opt not in flags:
                flags.append(opt)
    return flags


def _guide_section(heading: str) -> str:
    text = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    assert heading in text, f"docs/guide.md has no section {heading!r}"
    start = text.index(heading) + len(heading)
    end = re.search(r"^#{1,3} ", text[start:], flags=re.MULTILINE)
    return text[start : start + end.start()] if end else text[start:]


def test_every_command_has_a_guide_section() -> None:
    import typer

    from envcheck.cli import app

    group: Any = typer.main.get_command(app)
    commands = {(name,) for name, cmd in group.commands.items() if not hasattr(cmd, "commands")}
    commands |= {
        (name, sub) for name, cmd in group.commands.items() for sub in getattr(cmd, "commands", {})
    }
    assert commands == set(GUIDE_SECTIONS), "add the new command's section to docs/guide.md"


@pytest.mark.parametrize("path", sorted(GUIDE_SECTIONS), ids=" ".join)
def test_guide_documents_every_flag(path: tuple[str, ...]) -> None:
    """Every option of every command appears as `--flag in that command's section."""
    section = _guide_section(GUIDE_SECTIONS[path])
    missing = [flag for flag in _command_flags(path) if f"`{flag}" not in section]
    assert not missing, f"docs/guide.md, {GUIDE_SECTIONS[path]}: options not documented: {missing}"


# Links -------------------------------------------------------------------------------

LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", flags=re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def _markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _prose(text: str) -> str:
    """The text without fenced code blocks and inline code, where links are not links."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text (links and inline markup reduced to their
    text), lower-cased, punctuation dropped except - and _, spaces turned into hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # [text](url) -> text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)  # \w is Unicode: letters, digits, _
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor GitHub makes in a markdown file: one per heading (a repeated heading
    gets -1, -2, ...), plus explicit <a id> / <a name> targets."""
    text = path.read_text(encoding="utf-8")
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in FENCE.sub("", text).splitlines():
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        slug = github_slug(heading.group(1))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    found |= set(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", text))
    return found


def test_github_slug_rules() -> None:
    assert github_slug("Reading the doctor's output") == "reading-the-doctors-output"
    assert github_slug("`envcheck rules list` and `envcheck rules show`") == (
        "envcheck-rules-list-and-envcheck-rules-show"
    )
    assert github_slug("EC101") == "ec101"
    assert github_slug("Snapshot sections: `gpu`, `frameworks`, `deep`") == (
        "snapshot-sections-gpu-frameworks-deep"
    )
    assert github_slug("Results, 2026-11-22, CPU only (no GPU)") == (
        "results-2026-11-22-cpu-only-no-gpu"
    )


@pytest.mark.parametrize("doc", _markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc: Path) -> None:
    """Every relative link in README.md and docs/*.md points to a file that exists, and
    every #anchor into a markdown file to one of its headings."""
    broken = []
    for target in LINK.findall(_prose(doc.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, flags=re.IGNORECASE):
            continue  # https:, mailto: ...
        file_part, _, anchor = target.partition("#")
        linked = (doc.parent / file_part).resolve() if file_part else doc
        if not linked.exists():
            broken.append(f"{target}: no such file")
            continue
        if anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading with the anchor #{anchor}")
    assert not broken, f"{doc.relative_to(ROOT)}: " + "; ".join(broken)


def test_link_checker_sees_links() -> None:
    """The checker is not vacuous: it finds the README's links and rejects a bad anchor."""
    readme = _prose((ROOT / "README.md").read_text(encoding="utf-8"))
    targets = LINK.findall(readme)
    assert "docs/guide.md#installation" in targets and "docs/rules.md" in targets
    assert "no-such-heading" not in anchors(ROOT / "docs" / "guide.md")
    assert "installation" in anchors(ROOT / "docs" / "guide.md")


# Commands in the docs' code blocks use options that exist ------------------------------

# "envcheck <command>" not inside parentheses (a report's own text) or a path
COMMAND_LINE = re.compile(
    r"(?<![(\w/.-])envcheck\s+(doctor|collect|probe|scripts|run|diff|rules\s+\w+)\b(.*)"
)
END_OF_COMMAND = re.compile(r"\s#|\||&&|;|\s--(?=\s|$)")
SHORT_OPTIONS = {"-o", "-f", "-v", "-h"}


def documented_command_lines() -> list[tuple[str, tuple[str, ...], list[tuple[str, str]]]]:
    """(where, command path, [(option, the token after it)]) for every envcheck command in
    a fenced code block (shell lines, `run:` steps, pre-commit entries), up to a comment,
    a pipe or `--`."""
    found = []
    for doc in _markdown_files():
        for block in FENCE.finditer(doc.read_text(encoding="utf-8")):
            for line in block.group(0).splitlines():
                match = COMMAND_LINE.search(line)
                if not match:
                    continue
                rest = END_OF_COMMAND.split(match.group(2))[0]
                tokens = rest.split()
                options = [
                    (token.split("=")[0], tokens[i + 1] if i + 1 < len(tokens) else "")
                    for i, token in enumerate(tokens)
                    if token.startswith("-")
                ]
                path = tuple(match.group(1).split())
                found.append((f"{doc.name}: {line.strip()}", path, options))
    return found


def test_docs_show_commands() -> None:
    lines = documented_command_lines()
    assert len(lines) > 30
    assert {path[0] for _, path, _ in lines} >= {"doctor", "collect", "probe", "scripts", "run"}


@pytest.mark.parametrize(
    ("where", "path", "options"), documented_command_lines(), ids=lambda v: str(v)[:60]
)
def test_documented_command_uses_real_options(
    where: str, path: tuple[str, ...], options: list[tuple[str, str]]
) -> None:
    flags = set(_command_flags(path)) | SHORT_OPTIONS
    unknown = [option for option, _ in options if option not in flags]
    assert not unknown, f"{where}: no such option {unknown} for envcheck {' '.join(path)}"
    choices = _choices(path)
    for option, value in options:
        if option in choices:
            assert value in choices[option], f"{where}: {option} {value} is not a choice"


def _choices(path: tuple[str, ...]) -> dict[str, list[str]]:
    """The accepted values of --format/-f (from the command) and --fail-on."""
    import typer

    from envcheck.cli import app
    from envcheck.model import Severity

    command: Any = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    found = {"--fail-on": [severity.value for severity in Severity]}
    for param in command.params:
        values = getattr(param.type, "choices", None)
        if values and "--format" in getattr(param, "opts", []):
            found["--format"] = found["-f"] = [str(getattr(v, "value", v)) for v in values]
    return found
