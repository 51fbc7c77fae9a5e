# Two entry points, both from nothing on a fresh Linux machine with python3:
#   make doctor   install envcheck into .venv and audit this machine's python3
#   make test     install the dev dependencies into .venv, lint, type-check, run the tests
PYTHON ?= python3
VENV ?= .venv
AUDIT ?= $(PYTHON)
BIN := $(VENV)/bin

.PHONY: doctor test lint typecheck unit docs bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.dev-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

doctor: $(VENV)/.installed
	$(BIN)/envcheck doctor --python $(AUDIT) --exit-zero

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.dev-installed
	$(BIN)/mypy

unit: $(VENV)/.dev-installed
	$(BIN)/python -m pytest

test: lint typecheck unit

docs: $(VENV)/.dev-installed
	$(BIN)/python -m envcheck.docs_gen > docs/rules.md

bench: $(VENV)/.dev-installed
	$(BIN)/python benchmarks/doctor_speed.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
