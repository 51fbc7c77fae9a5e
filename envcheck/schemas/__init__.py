"""JSON Schemas of envcheck's public outputs, shipped in the package."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any


def load(name: str) -> dict[str, Any]:
    """The schema `name` ("report" or "snapshot") as a dict."""
    text = resources.files(__package__).joinpath(f"{name}.schema.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data
