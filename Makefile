# One file of targets; CI (.ci/run) uses `make lint typecheck test`.
# The two README commands are `make demo` and `make test`: both build the virtualenv first.
VENV ?= .venv
PY ?= $(VENV)/bin/python
STAMP = $(VENV)/.installed
SRC = accelstack components policies __main__.py tests bench tools
PRESET ?= stacks/llama3-70b-trn2.yaml
# checkov (the Kubernetes scanner of tests/test_k8s_scan.py) in its own virtualenv: it pins old
# boto3/botocore and others that the test extra must not be downgraded to
CHECKOV_VENV ?= .venv-checkov
CHECKOV = $(CHECKOV_VENV)/bin/checkov

.PHONY: install lint format typecheck test ci bench schema golden demo clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	# CPU build of torch from local disk, for the real torchrun runs of rendered scripts
	$(PY) -m pip install -q torch==2.13.0
	touch $(STAMP)

$(CHECKOV): pyproject.toml
	test -x $(CHECKOV_VENV)/bin/python || python3 -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install -q "$$(sed -n 's/^scan = \["\(checkov[^"]*\)"\]/\1/p' pyproject.toml)"
	touch $(CHECKOV)

install: $(STAMP) $(CHECKOV)

demo: $(STAMP)
	$(PY) -m accelstack.cli plan $(PRESET)

test: $(STAMP) $(CHECKOV)
	ACCELSTACK_CHECKOV=$(CHECKOV) $(PY) -m pytest -q

lint: $(STAMP)
	$(PY) -m ruff check $(SRC)
	$(PY) -m ruff format --check $(SRC)
	$(VENV)/bin/lint-imports

format: $(STAMP)
	$(PY) -m ruff format $(SRC)
	$(PY) -m ruff check --fix $(SRC)

typecheck: $(STAMP)
	$(PY) -m mypy

ci: lint typecheck test

bench: $(STAMP)
	$(PY) bench/plan.py
	$(PY) bench/pricing.py

schema: $(STAMP)
	$(PY) -m accelstack.cli schema -o schema/spec.schema.json
	$(PY) -m accelstack.spec.docs

golden: $(STAMP)
	ACCELSTACK_UPDATE_GOLDEN=1 $(PY) -m pytest -q -k golden

clean:
	rm -rf $(VENV) $(CHECKOV_VENV) .pytest_cache .mypy_cache .ruff_cache
