# One command to set up and run the app, one to set up and run every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-store check lint no-databases docs bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	# bytecode now, as pip writes it for an installed package: where PYTHONDONTWRITEBYTECODE
	# is set, every start would otherwise compile ctxscope's ~100 modules again
	$(BIN)/python -m compileall -q cli engine tools tui prompts
	touch $(STAMP)

run: $(STAMP)  ## set up and open the workbench on the current directory
	$(BIN)/ctxscope $(ARGS)

# The suite runs on pytest-xdist workers, one more than the cores (JOBS=0 runs it in this one
# process): many tests wait on a process, a server or a terminal they started, and the extra
# worker fills that wait (2 cores, fresh clone, machine idle: 4 min 47 s with 2 workers, 3 min
# 59 s with 3). Each worker takes the next test as it frees up (worksteal), the files of the
# longest tests first (tests/conftest.py), so one slow file does not hold the end.
JOBS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
PYTEST_ARGS ?=

test: $(STAMP)  ## set up and run the whole test suite
	$(BIN)/pytest -q -n $(JOBS) --dist worksteal $(PYTEST_ARGS)

test-store: $(STAMP)  ## the store's suite on SQLite and on a PostgreSQL server it starts
	$(BIN)/pytest -q -rs tests/engine/store

lint: $(STAMP) no-databases  ## ruff, formatting, strict types on engine/ and tools/, the import contract
	$(BIN)/ruff check cli engine tools prompts tui tests bench
	$(BIN)/ruff format --check cli engine tools prompts tui tests bench
	$(BIN)/mypy cli engine tools
	$(BIN)/lint-imports

# A database is made by running ctxscope, never a source: one committed by mistake (a 3.9 MB
# dbg.db once) is refused, with its write-ahead log and journal files.
DATABASE_FILES := '*.db' '*.sqlite' '*.sqlite3' '*-wal' '*-shm' '*-journal'

no-databases:  ## refuse a database file tracked by git
	@tracked="$$(git ls-files -- $(DATABASE_FILES))"; \
	if [ -n "$$tracked" ]; then \
		printf 'tracked database file: %s\n' $$tracked >&2; \
		echo "remove it from git (git rm --cached FILE); *.db is in .gitignore" >&2; \
		exit 1; \
	fi

check: lint test  ## lint, import contract and tests

docs: $(STAMP)  ## regenerate docs/settings.md from the Settings model (engine/settings/config.py)
	$(BIN)/python docs/gen_settings.py

bench: $(STAMP)
	$(BIN)/python bench/bench_engine.py
	$(BIN)/python bench/bench_strategies.py
	$(BIN)/python bench/bench_fidelity.py
	$(BIN)/python bench/bench_tools.py
	$(BIN)/python bench/bench_tui.py
	$(BIN)/python bench/bench_import.py
	$(BIN)/python bench/bench_watch.py
	$(BIN)/python bench/bench_postgres.py

clean:
	rm -rf $(VENV) .pytest_cache
