PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
# `make install` is the tool alone; test, lint and bench add the extras they need. Installs are
# editable, so the command runs the code of this checkout as it is edited.
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
BENCH_STAMP := $(VENV)/.installed-bench
REAL_STAMP := $(VENV)/.installed-bench-real
# The build backend's note about editable installs of a flat layout is for packagers, not for
# someone installing the tool: it is not printed.
PIP := PYTHONWARNINGS=ignore $(BIN)/pip install -q --disable-pip-version-check

.PHONY: install run test lint bench bench-frontier bench-real bench-real-late bench-opencode bench-opencode-tuning bench-undo wait-bench demo fuzz integration clean

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "$(PYTHON) not found; set PYTHON=/path/to/python3.11"; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(PIP) -e .
	@rm -f $(DEV_STAMP) $(BENCH_STAMP) $(REAL_STAMP)
	@touch $(STAMP)
	@echo "installed: $(BIN)/mini-claude (put $(abspath $(BIN)) on PATH, or see the README's Install)"

$(DEV_STAMP): $(STAMP)
	$(PIP) -e '.[dev,bench]'
	@touch $(DEV_STAMP) $(BENCH_STAMP)

$(BENCH_STAMP): $(STAMP)
	$(PIP) -e '.[bench]'
	@touch $(BENCH_STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/mini-claude

test: $(DEV_STAMP)
	$(BIN)/pytest

lint: $(DEV_STAMP)
	$(BIN)/ruff check mini_claude tests
	$(BIN)/mypy

bench: $(BENCH_STAMP)
	$(BIN)/mini-claude bench

# mini-claude's own lower summary thresholds against what they lose, under the fair and the poor
# summarizer, beside Codex CLI, on the tuning sessions at 200K: frontier.md (about 3 minutes).
bench-frontier: $(BENCH_STAMP)
	$(BIN)/mini-claude bench --frontier --windows 200000

$(REAL_STAMP): $(BENCH_STAMP)
	$(PIP) -e '.[bench,bench-real]'
	@touch $(REAL_STAMP)

# The real Claude Code CLI through the held-out sessions at 200K and 100K, beside its model and
# mini-claude (docs/bench/real-claude.md says how long it takes).
bench-real: $(REAL_STAMP)
	$(BIN)/mini-claude bench --real-claude

# The same against a server answering summaries and notes 20 s late and the loops' own calls
# 1 s late, in real time, mini-claude's notes in the background: real-claude-late.md (the last
# run's is in docs/bench/, which says how long it takes).
bench-real-late: $(REAL_STAMP)
	$(BIN)/mini-claude bench --real-claude --latency 20,1

# The real opencode CLI (from the npm registry, into .bench-tools/; needs node's npm) through the
# held-out sessions at 200K and 32K, beside Codex CLI's model and mini-claude: real-opencode.md;
# its settings searched on the tuning sessions: real-opencode-tuning.md (each says how long).
OPENCODE_TOOL := .bench-tools/node_modules/.bin/opencode
$(OPENCODE_TOOL): $(BENCH_STAMP)
	npm install --silent --no-save --prefix .bench-tools \
		"$$($(BIN)/python -c 'from mini_claude.bench.real_opencode import OPENCODE_PACKAGE as p; print(p)')"

bench-opencode: $(OPENCODE_TOOL)
	$(BIN)/mini-claude bench --real-opencode --jobs 2

bench-opencode-tuning: $(OPENCODE_TOOL)
	$(BIN)/mini-claude bench --real-opencode --sessions tuning --jobs 2

# The main loop's stall at each compaction against a server answering summaries and notes 20 s
# late and the loop's own calls 1 s late (150 calls, 40K and 200K, both wires): ~25 minutes.
wait-bench: $(DEV_STAMP)
	$(BIN)/python -m tests.support.stall --side 20 --main 1 --calls 150

# What checkpointing a command costs on a generated 10,000-file project and on this repository
# (median and p95 added per run_shell, the first command, rewinds of 1,000 and 2,000 files).
bench-undo: $(DEV_STAMP)
	$(BIN)/python -m tests.support.shell_checkpoint_measure

demo: $(STAMP)
	$(BIN)/mini-claude --demo

# Tests that build another product's environment first (Harbor needs Python 3.12): slow once.
integration: $(DEV_STAMP)
	$(BIN)/pytest -m integration

fuzz: $(DEV_STAMP)
	MINI_CLAUDE_FUZZ_EXAMPLES=20000 $(BIN)/pytest tests/test_properties.py tests/test_lifecycle_properties.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
