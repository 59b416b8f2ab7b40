# One entry point for people and CI. Every target sets itself up on a fresh
# machine that has only Python 3.11+ and make.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed

.PHONY: test docs demo discord-demo lint typecheck imports bench bench-quick reliability mutate clean

$(STAMP): pyproject.toml
	$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "stm needs Python 3.11+")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,postgres,docs]'
	touch $(STAMP)

## Run the demo: a bundled transcript replayed through the whole cycle on SQLite.
demo: $(STAMP)
	$(BIN)/stm demo

## The Discord kit's example bot, offline: discord.py's real client against a fake
## Discord on 127.0.0.1, a scripted model; prints what the bot sent.
discord-demo: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[discord]'
	rm -rf build/discord-demo && mkdir -p build/discord-demo
	cd build/discord-demo && env -u DISCORD_TOKEN $(CURDIR)/$(BIN)/python \
		$(CURDIR)/examples/discord-bot/bot.py

## Run the whole test suite (lint, strict typing, the layers contract and the docs
## site first).
test: $(STAMP) lint typecheck imports docs
	$(BIN)/python -m pytest

## Build the docs site into build/site/ in strict mode: a broken link or anchor,
## or a page left out of the navigation, fails the build. Open build/site/index.html.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy

## The layers contract (pyproject.toml, [tool.importlinter]).
imports: $(STAMP)
	$(BIN)/lint-imports

## Benchmarks: write bench/results.json and bench/RESULTS.md.
bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python -m bench

bench-quick: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python -m bench --quick

## Long reliability runs (see docs/reliability.md): 120 SIGKILLs per database,
## 10x the state-machine, fuzzing and privacy cases; needs STM_TEST_POSTGRES_URL.
## The figures of the run go to build/reliability-figures.json.
reliability: $(STAMP)
	mkdir -p build
	rm -f build/reliability-figures.json
	STM_RELIABILITY_SCALE=full STM_REQUIRE_POSTGRES=1 \
	STM_RELIABILITY_FIGURES=build/reliability-figures.json \
	$(BIN)/python -m pytest tests/reliability -q
	cat build/reliability-figures.json

## Mutation testing of the core (docs/testing.md); not part of CI. About 6,000
## mutants at roughly one per second on two cores: hours, not minutes (resumable);
## memory and SQLite only. Writes build/mutation-score.json.
mutate: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[mutate]'
	rm -rf mutants build/fresh-recheck.json
	env -u STM_TEST_POSTGRES_URL -u STM_REQUIRE_POSTGRES $(BIN)/mutmut run || true
	mkdir -p build
	env -u STM_TEST_POSTGRES_URL -u STM_REQUIRE_POSTGRES $(BIN)/python tools/fresh_recheck.py
	$(BIN)/python tools/hand_mutants.py
	$(BIN)/python tools/mutation_score.py --out build/mutation-score.json

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache mutants
