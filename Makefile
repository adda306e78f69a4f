PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test lint bench demo fuzz clean

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "$(PYTHON) not found; set PYTHON=/path/to/python3.11"; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,bench]'
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/mini-claude

test: $(STAMP)
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check mini_claude tests
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/mini-claude bench

demo: $(STAMP)
	$(BIN)/mini-claude --demo

fuzz: $(STAMP)
	MINI_CLAUDE_FUZZ_EXAMPLES=20000 $(BIN)/pytest tests/test_properties.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
