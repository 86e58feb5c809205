# Two commands on a fresh machine (Python >= 3.11):
#   make run    install into .venv and run the main job on a local Dask cluster (GPUs when present)
#   make test   install into .venv and run the test suite (GPU tests skip without a GPU)
# Both can be repeated: the install is redone only when pyproject.toml (or the extras) changed, and
# `make run` replaces its own results.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# GPU machines (nvidia-smi works) get the CuPy + dask-cuda extra
EXTRAS := $(shell nvidia-smi -L >/dev/null 2>&1 && echo "plot,gpu" || echo "plot")
comma := ,
# an editable install is redone only when its stamp is older than pyproject.toml (`run` needs no test extra)
RUN_STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))
TEST_STAMP := $(RUN_STAMP)-test

.PHONY: run test gpu-test bench install clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[$(EXTRAS)]"
	@touch $@

$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[$(EXTRAS),test]"
	@touch $@ $(RUN_STAMP)

install: $(TEST_STAMP)

run: $(RUN_STAMP)
	@mkdir -p results
	$(BIN)/distsim pbn steady-state examples/pbn/bbm209_sizek2019_cell_cycle_apoptosis_87n.bnet \
	    --perturbation 1e-3 --target v_Casp3=1 --target "v_Casp3=0,v_Casp8=1" --precision 1e-3 \
	    --output results/sizek_steady_state.nc --plot results/sizek_convergence.png --overwrite

test: $(TEST_STAMP)
	$(BIN)/python -m pytest -q

# On a lent GPU machine with the wheels in .whl/ (see README, "GPU tests"):
gpu-test:
	bash scripts/gpu-test.sh

bench: $(RUN_STAMP)
	$(BIN)/python benchmarks/pbn_sim.py
	$(BIN)/python benchmarks/pbn_steady_state.py

clean:
	rm -rf $(VENV) results .pytest_cache
