# One file of targets; CI (.ci/run) uses `make lint typecheck test`.
# The two README commands are `make demo` and `make test`: both build the virtualenv first.
VENV ?= .venv
PY ?= $(VENV)/bin/python
STAMP = $(VENV)/.installed
SRC = accelstack components policies __main__.py tests bench tools
PRESET ?= stacks/llama3-70b-trn2.yaml

.PHONY: install lint format typecheck test fuzz ci bench schema golden demo clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	# CPU build of torch from local disk, for the real torchrun runs of rendered scripts
	$(PY) -m pip install -q torch==2.13.0
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) -m accelstack.cli plan $(PRESET)

test: $(STAMP)
	$(PY) -m pytest -q

# The spec property test with many more examples than CI runs (tests/test_fuzz_spec.py)
fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest -q -p no:cacheprovider tests/test_fuzz_spec.py

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
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
