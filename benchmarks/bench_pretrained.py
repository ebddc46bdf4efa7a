"""Costs of the pretrained models on CPU: Gemma 3 270M beside SmolLM2-135M, measured in the same run.

For each imported checkpoint it times, through poeval's own functions: LoRA training steps of 4 quatrains
(params.yaml's ``smollm2`` block: r 16 on q/k/v/o of the last 10 layers, lr 0.002; ms per step, one dev
evaluation of 4 quatrains included), sampling 100 generations (ancestral, temperature 1, no top-k/top-p;
``max_attempts`` = n, so both models make exactly n), and causal scoring of 100 BPoMP word_swap pairs (both
texts of each pair) mined from ../shared/data/limericks/fortune_limericks.jsonl. Quatrains for training
are the first four verses of those limericks. It prints the seconds and each as a ratio Gemma/SmolLM2
of the same run, with the load average before and after (the machine may be shared). The code measured
is whichever ``poeval`` is imported: run it with ``PYTHONPATH`` at two revisions for a before/after.
``--import-gguf`` also times ``poeval import`` of the .gguf file (and of ``smollm2-135m``) first.

Example::

    poeval import smollm2-135m --out /tmp/smollm2; poeval import gemma3-270m --out /tmp/gemma
    python benchmarks/bench_pretrained.py --smollm2 /tmp/smollm2 --gemma /tmp/gemma --threads 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")   # never reach a model hub

import torch  # noqa: E402

from poeval import bpomp  # noqa: E402
from poeval.bpomp import scoring  # noqa: E402
from poeval.generators.lm import generation, training  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FORTUNE = ROOT.parent / "shared" / "data" / "limericks" / "fortune_limericks.jsonl"
LORA = {"r": 16, "alpha": 16, "dropout": 0.05, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"], "layers": 10}


def load() -> str:
    return "load average " + " / ".join(f"{x:.2f}" for x in os.getloadavg())


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def quatrain_splits(work: Path) -> tuple[str, str]:
    """train/dev JSONL of quatrains: the first four verses of each limerick."""
    lims, _ = bpomp.build_corpus("fortune", str(FORTUNE))
    rows = [{"id": f"q{k}", "lines": lim["lines"][:4]} for k, lim in enumerate(lims)]
    paths = []
    for split, part in (("train", rows[:-20]), ("dev", rows[-20:])):
        paths.append(str(work / f"{split}.jsonl"))
        Path(paths[-1]).write_text("".join(json.dumps(r) + "\n" for r in part))
    return paths[0], paths[1]


def lora_step_ms(model_dir: str, splits: tuple[str, str], work: Path, steps: int, threads: int) -> float:
    # the arch is a label for a pretrained checkpoint (it loads as its own class): gemma3 for Gemma, else llama
    arch = "gemma3" if "gemma" in json.loads((Path(model_dir) / "config.json").read_text())["model_type"] else "llama"
    cfg = {"arch": arch, "size": "S", "init": "pretrained", "name_or_path": model_dir, "conditioned": False,
           "lora": LORA}
    tcfg = {"batch_size": 4, "max_steps": steps, "lr": 0.002, "warmup_steps": 1, "eval_every": steps,
            "eval_quatrains": 4, "seed": 1}
    torch.set_num_threads(threads)
    summary = training.train(*splits, str(work / f"lora-{Path(model_dir).name}"), cfg, tcfg, threads=threads,
                             progress=False)
    return 1000 * summary["elapsed_s"] / summary["steps"]


def sample_s(model_dir: str, work: Path, n: int, threads: int) -> tuple[float, int]:
    sampling = {"n": n, "batch_size": n, "max_attempts": n, "max_new_tokens": 100, "seed": 1}
    out = work / f"sample-{Path(model_dir).name}"
    secs, _ = timed(lambda: generation.sample(model_dir, {"temperature": 1.0, "top_k": 0, "top_p": 1.0}, sampling,
                                              f"{out}.jsonl", f"{out}.json", threads=threads, progress=False))
    return secs, json.loads(Path(f"{out}.json").read_text())["valid"]


def score_s(model_dir: str, texts: list[str], threads: int) -> float:
    torch.set_num_threads(threads)
    model, tok = scoring.resolve_model(model_dir, "causal")
    secs, _ = timed(lambda: scoring.causal_scores(model, tok, texts))
    return secs


def import_s(source: str, work: Path) -> float:
    cmd = [sys.executable, "-m", "poeval.cli", "import", source, "--out", str(work / f"import-{Path(source).stem}")]
    secs, _ = timed(lambda: subprocess.run(cmd, check=True, capture_output=True))
    return secs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smollm2", required=True, help="imported SmolLM2-135M checkpoint (poeval import smollm2-135m)")
    ap.add_argument("--gemma", required=True, help="imported Gemma 3 270M checkpoint")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5, help="LoRA training steps per model")
    ap.add_argument("--n", type=int, default=100, help="generations to sample")
    ap.add_argument("--pairs", type=int, default=100, help="BPoMP word_swap pairs to score")
    ap.add_argument("--import-gguf", help="also time `poeval import` of this .gguf (and of smollm2-135m)")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    print(f"before: {load()}; torch {torch.__version__}, {args.threads} threads", flush=True)
    pairs = bpomp.make_pairs(bpomp.build_corpus("fortune", str(FORTUNE))[0], "word_swap", check_scheme=False)[0]
    texts = sorted({scoring.pair_text(p[f]) for p in pairs[: args.pairs] for f in ("original", "corrupted")})
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        splits = quatrain_splits(work)
        for name, model_dir in (("smollm2", args.smollm2), ("gemma", args.gemma)):
            row = rows.setdefault(name, {})
            if args.import_gguf:
                row["import_s"] = import_s(args.import_gguf if name == "gemma" else "smollm2-135m", work)
            row["lora_step_ms"] = lora_step_ms(model_dir, splits, work, args.steps, args.threads)
            row["sample_s"], row["valid"] = sample_s(model_dir, work, args.n, args.threads)
            row["score_s"] = score_s(model_dir, texts, args.threads)
            print(f"{name}: " + ", ".join(f"{k} {v:.1f}" for k, v in row.items()) + f"  ({load()})", flush=True)
    print(f"{'measure':<14} {'SmolLM2':>9} {'Gemma':>9} {'Gemma/SmolLM2':>14}")
    for key in rows["gemma"]:
        a, b = rows["smollm2"][key], rows["gemma"][key]
        print(f"{key:<14} {a:>9.1f} {b:>9.1f} {b / a if a else float('nan'):>14.2f}")
    print(f"after: {load()}; scoring: {len(texts)} texts of {min(args.pairs, len(pairs))} pairs")
    if args.json:
        Path(args.json).write_text(json.dumps({"threads": args.threads, "n": args.n, "pairs": args.pairs,
                                               "steps": args.steps, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
