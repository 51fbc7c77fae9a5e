"""--python audits interpreters older (and newer) than envcheck's own, down to 2.7.

The target runs a standard-library-only script that is valid Python 2.7. The
interpreters come from pyenv where the machine has them; missing ones are skipped.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envcheck.cli import app

PYENV = Path.home() / ".pyenv" / "versions"
CANDIDATES = sorted(PYENV.glob("*/bin/python")) if PYENV.is_dir() else []


@pytest.mark.parametrize("python", CANDIDATES or [None], ids=lambda p: p and p.parts[-3])
def test_doctor_audits_other_interpreters(python: Path | None) -> None:
    if python is None:
        pytest.skip("no pyenv interpreters on this machine")
    result = CliRunner().invoke(
        app, ["doctor", "--python", str(python), "--format", "json", "--exit-zero"]
    )
    assert result.exit_code == 0, result.output
    facts = json.loads(result.stdout)["facts"]
    assert facts["interpreter"]["version"] == python.parts[-3].split("-")[0]
    assert facts["collectors"]["packages"]["status"] == "ok"
    assert facts["platform"]["python"] == facts["interpreter"]["version"]
