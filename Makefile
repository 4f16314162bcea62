# tfhadoop: `make demo` and `make test` work as the first command on a fresh machine; each does
# whatever setup is missing (Python venvs from lock files, the JVM build, Hadoop artifacts).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
SBT := tools/sbt
JVM_SOURCES := $(shell find connectors spark yarn -path '*/target' -prune -o \( -name '*.java' -o -name '*.scala' -o -path '*/resources/*' \) -print 2>/dev/null)
PYTEST_ARGS ?=

.PHONY: help setup venv jars native lint test test-jvm test-native test-python test-durations test-fast demo demo-secure bench bench-all bench-smoke clean cluster-up cluster-down

help:
	@echo "make demo        bring the embedded cluster up, run the main job end to end, tear down"
	@echo "make demo-secure the same on the Kerberized embedded cluster (cluster up --secure)"
	@echo "make test        JVM and native unit tests + the whole Python suite against the embedded cluster"
	@echo "make test-durations  order the test groups by the last run's times (tests/durations.json)"
	@echo "make test-fast   the suite without tests marked slow"
	@echo "make setup       venvs (.venv: pyspark 4.3 + TF; .venv35: pyspark 3.5; .venv-mlflow: a test MLflow server), jars/, Hadoop artifacts"
	@echo "make lint        ruff and Pyright over every Python file (part of make test)"
	@echo "make bench       the headline benchmarks (the current figures of BENCHMARKS.md), <= 20 min on 2 cores"
	@echo "make bench-all   the headline benchmarks and all the others (hours: trainer, chaos, scaling)"
	@echo "make bench-smoke every benchmark in its smallest configuration (does it still run?)"

setup: venv jars native

# Rust crates under connectors/native/ (cargo, crates.io), their libraries copied into the package.
# Cargo's build folder is shared by this user's checkouts, as uv's and Coursier's caches are, so a
# fresh clone does not compile the crates' ~90 dependencies again; tools/build-native also keeps
# the built libraries by the hash of their sources, since Cargo relinks the two crates (thin LTO,
# ~160 CPU-s) in a checkout at a new path. Set CARGO_TARGET_DIR to choose another folder.
export CARGO_TARGET_DIR ?= $(HOME)/.cache/tfhadoop/cargo-target
NATIVE_SOURCES := $(shell find connectors/native -path '*/target' -prune -o -type f \( -name '*.rs' -o -name Cargo.toml \) -print 2>/dev/null)
native: target/.native-ok

target/.native-ok: Cargo.toml $(wildcard Cargo.lock) tools/build-native $(NATIVE_SOURCES)
	tools/build-native
	@mkdir -p target && touch $@

# ruff (ruff.toml) and Pyright (pyrightconfig.json, basic strictness): both must be clean.
PYRIGHT_VERSION := 1.1.414
PYRIGHT := .tools/pyright/node_modules/.bin/pyright
lint: $(VENV)/.ok $(PYRIGHT) native
	$(VENV)/bin/ruff check .
	$(PYRIGHT) -p pyrightconfig.json

# Pyright from the npm registry, pinned, into .tools/ (needs node and npm).
$(PYRIGHT): | $(VENV)/.ok
	@command -v npm >/dev/null || { echo "make lint needs npm (apt-get install nodejs npm)" >&2; exit 1; }
	npm install --silent --no-audit --no-fund --prefix .tools/pyright pyright@$(PYRIGHT_VERSION)

venv: $(VENV)/.ok .venv35/.ok .venv-mlflow/.ok

$(VENV)/.ok: setup.py requirements.lock tools/bootstrap-python
	tools/bootstrap-python $(VENV) requirements.lock --editable
	@touch $@

# pyspark 3.5 only: the same tfhadoop jar is tested on Spark 3.5 and Spark 4.x.
.venv35/.ok: requirements-spark35.lock tools/bootstrap-python | $(VENV)/.ok
	tools/bootstrap-python .venv35 requirements-spark35.lock
	@touch $@

# An MLflow tracking server for the tests of --mlflow-tracking-uri (tests/trainer/test_mlflow.py), in
# its own venv: the server package (mlflow, not mlflow-skinny) pins pyarrow<26, .venv has pyarrow 26.
.venv-mlflow/.ok: requirements-mlflow-server.lock tools/bootstrap-python | $(VENV)/.ok
	tools/bootstrap-python .venv-mlflow requirements-mlflow-server.lock
	@touch $@

jars: jars/.ok

# The tfhadoop jar, the application master agent (yarn/am-agent), and the embedded cluster's Hadoop
# 3.5.0 artifacts (resolved from Maven Central).
jars/.ok: build.sbt project/build.properties project/repositories $(JVM_SOURCES)
	$(SBT) cluster/writeClusterClasspath tfhadoop/copyJar amAgent/copyAgentJar
	@touch $@

# The setup steps (uv, sbt, cargo, npm) side by side, each one's output kept together (-O); then
# pytest, with lint and the JVM and Rust tests beside it at the lowest CPU priority (nice 19): they take
# the CPU time pytest's jobs leave while they wait on YARN, instead of ~65 s of the run before
# pytest (their 100 CPU-s; the pytest phase leaves ~10 % of the CPUs idle). Their output follows
# pytest's, in build/checks.log too, and either failing fails `make test`.
# (.venv35 and Pyright wait for .venv: it creates .tools/ and uv.)
test:
	@$(MAKE) --no-print-directory -j6 -O setup $(PYRIGHT)
	@mkdir -p build; \
	  nice -n 19 $(MAKE) --no-print-directory -j3 -O lint test-jvm test-native > build/checks.log 2>&1 & checks=$$!; \
	  $(MAKE) --no-print-directory test-python; rc=$$?; \
	  wait $$checks; crc=$$?; \
	  echo "== lint and the JVM and Rust unit tests (build/checks.log):"; cat build/checks.log; \
	  [ $$crc -eq 0 ] || echo "make test: lint or the JVM/Rust unit tests failed (above)" >&2; \
	  [ $$rc -eq 0 ] && [ $$crc -eq 0 ]

test-jvm: jars
	$(SBT) test

# The native crates' own unit tests (error-code mapping, retry policy, token parsing).
# In the dev profile: no release link (thin LTO over every dependency, ~70 CPU-s a fresh checkout).
test-native:
	cargo test --workspace --quiet

# Two pytest-xdist workers side by side by default (27-30 min against 43-48 for one process in
# fresh-clone CI runs here); TEST_WORKERS=0 runs one plain process. Each worker has its own embedded
# cluster, and a module's tests (the secure package's) stay in one worker, longest first
# (tests/schedule.py).
# pytest exits 5 when it collected nothing: that is a broken suite, not a pass. Every test's
# duration lands in build/test-results/pytest.xml (JUnit XML): where CI time goes, test by test;
# `make test-durations` turns it into the order the next runs hand work out in.
TEST_WORKERS ?= 2
XDIST := $(if $(filter-out 0 1,$(TEST_WORKERS)),-n $(TEST_WORKERS))
test-python: setup
	@$(PY) -m pytest $(XDIST) --durations=25 \
	  --junitxml=build/test-results/pytest.xml $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing the suite" >&2; exit 1; fi; exit $$rc

test-durations:
	$(PY) -m tests.schedule build/test-results/pytest.xml

test-fast: setup
	@$(PY) -m pytest $(XDIST) -m "not slow" $(PYTEST_ARGS); rc=$$?; [ $$rc -ne 5 ] || { echo "no tests collected" >&2; exit 1; }; exit $$rc

demo: setup
	$(VENV)/bin/tfhadoop demo

# The same on the Kerberized embedded cluster (KDC; runs as its test user from a keytab).
demo-secure: setup
	@tools/ensure-krb5 >/dev/null
	$(VENV)/bin/tfhadoop demo --secure

# The suites are listed in bench/suite.py (one embedded cluster shared by the benches of a run).
bench: setup
	$(PY) -m bench.suite headline

bench-all: setup
	$(PY) -m bench.suite all

bench-smoke: setup
	$(PY) -m bench.suite all --smoke

cluster-up: setup
	$(VENV)/bin/tfhadoop cluster up

cluster-down:
	$(VENV)/bin/tfhadoop cluster down

clean:
	rm -rf jars/*.jar jars/*.txt jars/.ok target */target yarn/cluster/target project/target
