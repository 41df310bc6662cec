# Set-up and the two everyday jobs; every target installs what it needs into .venv.
VENV ?= .venv
PY := $(VENV)/bin/python
RLGEN := $(VENV)/bin/rlgen
# verl is installed without its dependencies: the tests only compose its Hydra config.
VERL := verl==0.7.1

.PHONY: setup demo test bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	$(PY) -m pip install --quiet --no-deps '$(VERL)'
	touch $@

# Offline machines validate against the schema folder beside the checkout when there is one.
SCHEMAS ?= $(wildcard $(abspath ../shared/schemas))

demo: setup
	rm -rf demo
	$(RLGEN) new demo --no-input
	$(RLGEN) render demo --out demo/rendered
	RLGEN_SCHEMA_DIR=$(SCHEMAS) $(RLGEN) validate demo

test: setup
	$(PY) -m pytest

bench: setup
	$(PY) benchmarks/bench_cli.py
	RLGEN_SCHEMA_DIR=$(SCHEMAS) $(PY) benchmarks/bench_validate.py
	$(PY) benchmarks/bench_diff.py
	$(PY) benchmarks/bench_data.py

clean:
	rm -rf $(VENV) build demo
