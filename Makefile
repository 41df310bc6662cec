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

# The demo's registry and Git URL are answers every repository needs; replace them with your own.
DEMO_REGISTRY ?= registry.cn-hangzhou.aliyuncs.com/rl-demo
DEMO_GIT_URL ?= https://github.com/rl-demo/rl-repo.git

demo: setup
	rm -rf demo
	$(RLGEN) new demo --no-input --set rlgen.registry=$(DEMO_REGISTRY) --set rlgen.git_url=$(DEMO_GIT_URL)
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
