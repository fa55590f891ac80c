# One-command setup: every target installs what it needs into .venv first.
# The interpreter .venv is built from. A distribution's CPython (Debian's /usr/bin/python3 here) is a
# static executable built with profile-guided and link-time optimisation; pyenv's default build is a
# shared library without either, and searches run about 12% slower on it (docs/ARCHITECTURE.md,
# "The interpreter"). So the system one is used when it is >= 3.11 and has venv; `make PYTHON=...` overrides.
DISTRO_PYTHON ?= /usr/bin/python3
SYSTEM_PYTHON := $(shell $(DISTRO_PYTHON) -c 'import ensurepip, sys; print(sys.executable if sys.version_info >= (3, 11) else "")' 2>/dev/null)
PYTHON ?= $(or $(SYSTEM_PYTHON),python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test ci nightly ci-baseline bench clean counterexamples constraints kafka kafka-all screenshots compiled compiled-status

# Apache Kafka's jars for `conform` (docs/ARCHITECTURE.md, "Kafka's own code"): Maven copies kafka/pom.xml's
# dependencies for one version into .kafka/<version>/lib, with its repository inside the project (.kafka/m2),
# so nothing outside the checkout is written. The stamp is written last: an interrupted download is redone.
KAFKA_VERSIONS := $(shell grep -v '^\#' kafka/versions.txt)
KAFKA ?= $(firstword $(KAFKA_VERSIONS))
MVN ?= mvn
.kafka/%/.resolved: kafka/pom.xml
	@command -v $(MVN) >/dev/null || { echo "conform needs Maven ($(MVN)) and Java 17 to resolve Kafka's jars" >&2; exit 1; }
	rm -rf .kafka/$*/lib
	$(MVN) -B -q -Dstyle.color=never -f kafka/pom.xml -Dmaven.repo.local=$(CURDIR)/.kafka/m2 -Dkafka.version=$* \
	  dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/.kafka/$*/lib
	touch $@

# conform's adapter (kafka/adapter): compiled against each version's jars, since it calls the controller's
# package-private builders and methods, whose signatures move between versions.
ADAPTER_SRC := kafka/adapter/org/apache/kafka/controller/ConformAdapter.java
.kafka/%/adapter.jar: .kafka/%/.resolved $(ADAPTER_SRC)
	rm -rf .kafka/$*/adapter.classes && mkdir -p .kafka/$*/adapter.classes
	javac -nowarn -encoding UTF-8 -d .kafka/$*/adapter.classes -cp '.kafka/$*/lib/*' $(ADAPTER_SRC)
	jar cf $@.tmp -C .kafka/$*/adapter.classes . && mv $@.tmp $@

# The stamp is what harness.kafka reads (resolved_versions): make must not delete it as an intermediate file.
.PRECIOUS: .kafka/%/.resolved
kafka: .kafka/$(KAFKA)/adapter.jar  ## Kafka's jars for one version (default: the newest listed in kafka/versions.txt)
kafka-all: $(foreach v,$(KAFKA_VERSIONS),.kafka/$(v)/adapter.jar)  ## every version in kafka/versions.txt

# constraints.txt pins every package the project installs (the versions tested here); CI's pip cache is
# keyed on it and on pyproject.toml. After changing a dependency: make constraints.
$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

# The driver JVM's class-data-sharing archive (about 10 s, once per environment): Spark's session starts in
# about half the time with it, and as before without it.
ARCHIVE := $(VENV)/.spark-class-archive
$(ARCHIVE): $(STAMP)
	$(PY) -c 'from harness.engines.spark import make_class_archive as m; print("Spark class archive:", m() or "not built; sessions start without it")'
	touch $(ARCHIVE)

constraints:  ## re-pin constraints.txt to what .venv holds
	$(PY) -m pip freeze --exclude-editable | grep -v '^kafka-reassignment-harness' > constraints.txt

# The hot modules compiled by Cython (harness/compiled.py; docs/ARCHITECTURE.md, "A compiled hot path"): the
# same sources, searches 1.25-1.33x as fast. Optional: without a build (or with HARNESS_COMPILED=0) every
# module runs from source, and a module edited since the build runs from source until the next build.
# It needs a C compiler and the interpreter's headers (Debian's python3-dev, installed here if missing).
PYTHON_H := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)/Python.h
$(PYTHON_H):
	@command -v apt-get >/dev/null || { echo "make compiled needs the interpreter's headers at $@: install them" >&2; exit 1; }
	$(if $(filter 0,$(shell id -u)),,sudo) apt-get install -y python3-dev || \
	  { $(if $(filter 0,$(shell id -u)),,sudo) apt-get update && $(if $(filter 0,$(shell id -u)),,sudo) apt-get install -y python3-dev; }

compiled: $(STAMP) $(PYTHON_H)  ## the hot modules compiled by Cython into .compiled/ (searches 1.25-1.33x as fast)
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev,compiled]'
	$(PY) -c 'import sys; from harness.compiled import build; sys.exit(build())'

compiled-status: $(STAMP)  ## which modules load compiled, which are stale
	@$(PY) -c 'from harness.compiled import status; status()'

run: $(ARCHIVE) kafka  ## the main job
	$(PY) -m harness check kraft --config ci

# Debian's Chromium for the browser tests (Playwright drives it; its own browser download needs a network
# this project does not assume). Installed once, as root or through sudo.
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	@command -v apt-get >/dev/null || { echo "the browser tests need Chromium at $(CHROMIUM): install it" >&2; exit 1; }
	$(if $(filter 0,$(shell id -u)),,sudo) apt-get install -y chromium || \
	  { $(if $(filter 0,$(shell id -u)),,sudo) apt-get update && $(if $(filter 0,$(shell id -u)),,sudo) apt-get install -y chromium; }

test: $(ARCHIVE) $(CHROMIUM) kafka
	CHROMIUM=$(CHROMIUM) $(PY) -m pytest -m "not cluster and not nightly"

ci: $(ARCHIVE) $(CHROMIUM) kafka  ## the CI gate (ci/gate.py): pytest, ci exhaustion, mutation adequacy, corpus replay, Hypothesis, baseline
	CHROMIUM=$(CHROMIUM) $(PY) ci/gate.py

nightly: $(ARCHIVE) kafka-all compiled  ## the nightly job (ci/nightly.py): Spark exhaustion, Hypothesis nightly, liveness; reports/<date>T<time>/
	$(PY) ci/nightly.py $(ARGS)

ci-baseline: $(STAMP)  ## rewrite ci/baseline.json from the current models
	$(PY) ci/gate.py --write-baseline

bench: $(ARCHIVE) compiled  ## BFS and Spark measurements -> bench/results/
	$(PY) bench/bfs_bench.py
	$(PY) bench/hypothesis_bench.py
	$(PY) bench/spark_bench.py

screenshots: $(STAMP) $(CHROMIUM)  ## the explorer's screenshots at 1280x800 (docs/images/)
	CHROMIUM=$(CHROMIUM) $(PY) -m harness.explore.capture docs/images

counterexamples: $(STAMP)  ## regenerate the committed counterexample corpus
	$(PY) -m harness corpus

clean:
	rm -rf $(VENV) .kafka .compiled traces .pytest_cache .hypothesis build *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
