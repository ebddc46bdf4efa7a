# poeval: `make run` runs the main job, `make test` runs the tests. Both set everything up first.
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.installed
# Debian packages the project needs (installed with apt-get when missing).
DEBIAN_PACKAGES :=
CORES ?= all
export PATH := $(BIN):$(PATH)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: setup run test debian clean-artifacts

debian:
	@missing=""; for p in $(DEBIAN_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[test]'
	touch $(STAMP)

setup: debian $(STAMP)
	@[ -d .dvc ] || dvc init -q

run: setup
	snakemake -c $(CORES)

test: setup
	pytest -q

clean-artifacts:
	rm -rf data models results logs .snakemake
