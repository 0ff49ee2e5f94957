# One file of targets; CI (.ci/run) uses `make lint typecheck test`.
# The two README commands are `make demo` and `make test`: both build the virtualenv first.
VENV ?= .venv
PY ?= $(VENV)/bin/python
# Two installs, each with its stamp: the runtime (what `make demo` and the wheel need) and
# the development tools on top (test extras + the CPU torch, for `make test` and CI).
RUNTIME_STAMP = $(VENV)/.installed-runtime
STAMP = $(VENV)/.installed-test
SRC = accelstack components policies __main__.py tests bench tools
PRESET ?= stacks/llama3-70b-trn2.yaml
# checkov (the Kubernetes scanner of tests/render/test_k8s_scan.py) in its own virtualenv: it pins old
# boto3/botocore and others that the test extra must not be downgraded to
CHECKOV_VENV ?= .venv-checkov
CHECKOV = $(CHECKOV_VENV)/bin/checkov
# Bytecode is written (into the ignored __pycache__/ folders): a machine that sets
# PYTHONDONTWRITEBYTECODE (this project's containers do) would otherwise compile accelstack,
# and pytest rewrite every test module, in each process the suite starts: about 6 s of every
# test worker's collection and a tenth of a second per CLI subprocess (bench/suite.py).
unexport PYTHONDONTWRITEBYTECODE
# pytest-xdist workers. `make test-fast`: one per CPU (auto). `make test`: one more than the
# CPUs, since about a tenth of its wall time is tests waiting (a torch rendezvous dropping a
# lost node, training steps, subprocesses) and the extra worker fills it (bench/suite.py
# --jobs; docs/plan.md). JOBS=N sets both (0: in-process).
JOBS ?=
TEST_JOBS = $(or $(JOBS),$(shell python3 -c 'import os; f = getattr(os, "sched_getaffinity", None); print((len(f(0)) if f else os.cpu_count() or 1) + 1)'))
FAST_JOBS = $(or $(JOBS),auto)

.PHONY: install install-runtime lint format typecheck test test-fast fuzz ci bench bench-suite schema docs golden demo clean

$(RUNTIME_STAMP): pyproject.toml
	@test -x $(PY) || { echo "==> creating the virtualenv $(VENV)"; python3 -m venv $(VENV) && $(PY) -m pip install -q --upgrade pip; }
	@echo "==> installing accelstack and its runtime dependencies into $(VENV) (no test tools, no torch)"
	$(PY) -m pip install -q -e .
	@touch $(RUNTIME_STAMP)

$(STAMP): $(RUNTIME_STAMP)
	@echo "==> installing the test extras (pytest, moto, ruff, mypy, ...) into $(VENV)"
	$(PY) -m pip install -q -e '.[test]'
	@echo "==> installing the CPU build of torch, for the real torchrun runs of rendered scripts"
	$(PY) -m pip install -q torch==2.13.0
	@touch $(STAMP)

install-runtime: $(RUNTIME_STAMP)

$(CHECKOV): pyproject.toml
	test -x $(CHECKOV_VENV)/bin/python || python3 -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install -q "$$(sed -n 's/^scan = \["\(checkov[^"]*\)"\]/\1/p' pyproject.toml)"
	touch $(CHECKOV)

install: $(STAMP) $(CHECKOV)

demo: $(RUNTIME_STAMP)
	@echo "==> accelstack plan $(PRESET): offline under Pulumi mocks (no AWS account, no Pulumi CLI)"
	$(PY) -m accelstack.cli plan $(PRESET)

test: $(STAMP) $(CHECKOV)
	@echo "==> running the test suite"
	ACCELSTACK_CHECKOV=$(CHECKOV) $(PY) -m pytest -q -n $(TEST_JOBS)

# The unit tests alone: no plan under Pulumi's mocks, no test that takes seconds (the `plan`
# marker is set by tests/conftest.py, `slow` by the tests: torchrun, subprocesses, moto
# cross-checks, sweeps). Under a minute on two cores.
test-fast: $(STAMP)
	$(PY) -m pytest -q -n $(FAST_JOBS) -m "not plan and not slow"

# The spec property test with many more examples than CI runs (tests/spec/test_fuzz.py)
fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest -q -p no:cacheprovider tests/spec/test_fuzz.py

lint: $(STAMP)
	$(PY) -m ruff check $(SRC)
	$(PY) -m ruff format --check $(SRC)
	$(VENV)/bin/lint-imports
	$(VENV)/bin/vulture

format: $(STAMP)
	$(PY) -m ruff format $(SRC)
	$(PY) -m ruff check --fix $(SRC)

typecheck: $(STAMP)
	$(PY) -m mypy

ci: lint typecheck test

bench: $(RUNTIME_STAMP)
	$(PY) bench/plan.py
	$(PY) bench/pricing.py
	$(PY) bench/scale.py
	$(PY) bench/startup.py

# The test loop's targets (bench/suite.py): runs make test-fast and make test, minutes
bench-suite: $(STAMP) $(CHECKOV)
	$(PY) bench/suite.py

schema: $(RUNTIME_STAMP)
	$(PY) -m accelstack.cli schema -o schema/spec.schema.json
	$(PY) -m accelstack.docs

# Every generated doc (accelstack/docs.py): docs/spec.md, the deploy-rule table of docs/plan.md,
# the instance types of README.md and of the CLI's help (accelstack/cli/catalog_names.py)
docs: $(RUNTIME_STAMP)
	$(PY) -m accelstack.docs

golden: $(STAMP)
	ACCELSTACK_UPDATE_GOLDEN=1 $(PY) -m pytest -q -k golden

clean:
	rm -rf $(VENV) $(CHECKOV_VENV) .pytest_cache .mypy_cache .ruff_cache
