# Set-up and the two everyday jobs; every target installs what it needs into .venv.
VENV ?= .venv
PY := $(VENV)/bin/python
RLGEN := $(VENV)/bin/rlgen
# Each verl release rlgen supports (generator/rlgen/verl/releases), installed without its
# dependencies into a folder of its own: the tests compose each one's Hydra config and load
# its tool interface.
VERL_RELEASES := 0.7.1 0.9.1
# A secret scanner of tests/hostile, without its exact pins of attrs and PyYAML (see pyproject.toml).
TRUFFLEHOG3 := trufflehog3>=3.0.10

.PHONY: setup toolchain validation-tools demo-tools demo dist test bench schemas clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	# The data image's pinned packages (rlgen.generate.dataset_job), so the tests run the versions the
	# dataset and model Jobs run, whatever the index has released since.
	$(PY) -m pip install --quiet $$($(PY) -c 'from rlgen.generate.dataset_job import DATA_PACKAGES; print(*DATA_PACKAGES)')
	for v in $(VERL_RELEASES); do rm -rf .verl/$$v && $(PY) -m pip install --quiet --no-deps --target .verl/$$v "verl==$$v" || exit 1; done
	$(PY) -m pip install --quiet --no-deps '$(TRUFFLEHOG3)'
	touch $@

# The pinned upstream tools (toolchain/*/go.mod), built from source into a cache keyed by version;
# a second run builds nothing. Commands and tests find them in .toolchain/bin, first on PATH.
# Argo CD 3.6 needs Go 1.27: the go command fetches this release through the module proxy.
export GOTOOLCHAIN ?= go1.27.3
TOOLS := $(CURDIR)/.toolchain/bin
WITH_TOOLS := PATH="$(TOOLS):$$PATH"

toolchain:
	python3 toolchain/build.py

# What rendering and validating need (kustomize, kubeconform): a few minutes, not the whole toolchain.
validation-tools:
	python3 toolchain/build.py kustomize kubeconform

# The demo's tools: validation's, and sops and age, which the generated README's SOPS steps use.
demo-tools:
	python3 toolchain/build.py kustomize kubeconform sops age

# The demo's registry, Git URL, OSS bucket and its region are answers every repository needs
# (rlgen defaults none of them); replace them with your own.
DEMO_REGISTRY ?= registry.cn-hangzhou.aliyuncs.com/rl-demo
DEMO_GIT_URL ?= https://github.com/rl-demo/rl-repo.git
DEMO_BUCKET ?= rl-demo-data
DEMO_REGION ?= cn-hangzhou
# Where the demo's data image and CI install rlgen from. This checkout is an editable install, no
# source an image build can reach: by default its commit at its origin (scripts/demo_install.py).
DEMO_INSTALL ?=

# The demo needs rlgen alone: no test extras, no verl, pip's progress shown.
$(VENV)/.core: pyproject.toml
	python3 -m venv $(VENV)
	@echo "Installing rlgen and its dependencies into $(VENV) (the first run only)..."
	$(PY) -m pip install --progress-bar on -e .
	touch $@

demo: $(VENV)/.core demo-tools
	rm -rf demo
	install="$$(python3 scripts/demo_install.py '$(DEMO_INSTALL)')" && \
	$(WITH_TOOLS) $(RLGEN) new demo --no-input --set rlgen.registry=$(DEMO_REGISTRY) --set rlgen.node_pool=lingjun --set rlgen.node_cpu=180 --set rlgen.node_memory=1800 --set rlgen.git_url=$(DEMO_GIT_URL) \
		--set "rlgen.install=$$install" --set ak-storage.bucket=$(DEMO_BUCKET) --set ak-storage.region=$(DEMO_REGION)
	$(WITH_TOOLS) $(RLGEN) render demo --out demo/rendered
	$(WITH_TOOLS) $(RLGEN) validate demo -o table
	@echo
	@echo "Next: read demo/README.md, then, in a shell of its own:"
	@echo '  export PATH="$(TOOLS):$(abspath $(VENV))/bin:$$PATH" && cd $(CURDIR)/demo'
	@echo "  rlgen run new lr-3e-6 --set actor_rollout_ref.actor.optim.lr=3e-6 && rlgen diff"

# The sdist and the wheel as the release workflow builds them (the version from the Git tag:
# pyproject.toml), checked by twine. pip install dist/rlgen-*.whl installs rlgen anywhere.
dist: setup
	rm -rf dist
	$(PY) -m build --outdir dist .
	$(PY) -m twine check --strict dist/*

# The end-to-end tests that share one control plane run in order, in one process: each starts
# from the cluster the one before left. The modules with control planes of their own run in two
# more processes beside it (Argo CD's apart, about as long as the rest together), so their waits
# for controllers and the scheduler overlap each other's work.
E2E_OWN := tests/e2e/test_ack_addons.py tests/e2e/test_change_matrix.py tests/e2e/test_kueue.py \
	tests/e2e/test_secrets_external.py tests/e2e/test_e2e_command_kinds.py
E2E_ARGO := tests/e2e/test_argo.py tests/e2e/test_argo_variant.py tests/e2e/test_e2e_command_argo.py \
	tests/e2e/test_kueue_argo.py tests/e2e/test_first_sync.py tests/e2e/test_second_cluster_secrets.py
E2E_BESIDE := -n 0 -p no:cacheprovider
test: setup toolchain
	$(WITH_TOOLS) $(PY) -m pytest --ignore=tests/e2e
	$(WITH_TOOLS) bash -c 'base=$$(mktemp -d); \
		$(PY) -m pytest $(E2E_BESIDE) --basetemp=$$base/own $(E2E_OWN) > $$base/own.log 2>&1 & own=$$!; \
		$(PY) -m pytest $(E2E_BESIDE) --basetemp=$$base/argo $(E2E_ARGO) > $$base/argo.log 2>&1 & argo=$$!; \
		$(PY) -m pytest -n 0 --basetemp=$$base/shared tests/e2e $(addprefix --ignore=,$(E2E_OWN) $(E2E_ARGO)); shared=$$?; \
		wait $$own; o=$$?; wait $$argo; a=$$?; cat $$base/own.log $$base/argo.log; rm -rf $$base; \
		exit $$(( shared ? shared : o ? o : a ))'

# One table: each rlgen command beside its baseline, timed in the same run (benchmarks/timing.py),
# rlgen installed from a local wheel into a fresh environment, as a generated repository's CI has it.
# rlgen e2e and bench_push run the control plane, so bench needs the whole toolchain.
bench: setup toolchain
	$(WITH_TOOLS) $(PY) benchmarks/bench.py
	$(WITH_TOOLS) $(PY) benchmarks/bench_scale.py
	$(WITH_TOOLS) $(PY) benchmarks/bench_push.py
	$(WITH_TOOLS) $(PY) benchmarks/bench_e2e.py

# Regenerate the CRD-derived schemas of rlgen's catalog from the pinned CRDs in upstream/crds.
schemas: setup
	$(PY) scripts/update_schemas.py

clean:
	rm -rf $(VENV) build dist demo .toolchain .verl
