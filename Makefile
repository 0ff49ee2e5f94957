# One file of targets; .ci/run calls `make ci`. PY defaults to the project virtualenv.
VENV ?= .venv
PY ?= $(VENV)/bin/python
SRC = accelstack components policies __main__.py tests bench tools

.PHONY: venv install lint format typecheck test ci bench schema golden demo

venv:
	test -x $(PY) || python3 -m venv $(VENV)

install: venv
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -m pip install -q torch==2.13.0

lint:
	$(PY) -m ruff check $(SRC)
	$(PY) -m ruff format --check $(SRC)

format:
	$(PY) -m ruff format $(SRC)
	$(PY) -m ruff check --fix $(SRC)

typecheck:
	$(PY) -m mypy

test:
	$(PY) -m pytest -q

ci: lint typecheck test

bench:
	$(PY) bench/plan.py

schema:
	$(PY) -m accelstack.cli schema -o schema/spec.schema.json

golden:
	ACCELSTACK_UPDATE_GOLDEN=1 $(PY) -m pytest -q -k golden

demo:
	$(PY) -m accelstack.cli validate stacks/llama3-70b-trn2.yaml
