"""Benchmark of poeval's semantic-similarity metric.

Two parts (--mode, both by default):

* maxsim: ``max_similarity`` of --queries random L2-normalised float32 vectors against --keys ones
  (default 1000 x 180,000, 384-d: a sample against a QuaTrain-sized training set). Prints the time and
  the peak memory it allocated (tracemalloc, which numpy reports to, and the growth of the process's
  maximum RSS), and checks a few rows against a direct computation.
* encode: encoding throughput (quatrains/s) of the sentence encoder on --encode-n real quatrains, from
  --quatrains (JSON lines with "lines"), else data/en/train.jsonl, else the German DLK file
  ../shared/data/de/dlk_poems.jsonl.gz (first four lines of each stanza of at least four).

Examples::

    python benchmarks/bench_semantic.py
    python benchmarks/bench_semantic.py --mode encode --encode-n 500 --batch-size 32 --threads 2
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import sys
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")   # never reach a model hub

import numpy as np  # noqa: E402

from poeval.errors import PoevalError  # noqa: E402
from poeval.metrics import semantic  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0   # Linux: KiB


def bench_maxsim(args) -> None:
    rng = np.random.default_rng(args.seed)
    print(f"maxsim: generating {args.queries} x {args.keys} normalised float32 vectors, dim {args.dim} ...")
    keys = rng.standard_normal((args.keys, args.dim), dtype=np.float32)
    keys /= np.linalg.norm(keys, axis=1, keepdims=True)
    queries = rng.standard_normal((args.queries, args.dim), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    inputs_mib = (keys.nbytes + queries.nbytes) / 2**20
    times = []
    rss_before = _maxrss_mib()
    tracemalloc.start()
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        best = semantic.max_similarity(queries, keys, chunk=args.chunk)
        times.append(time.perf_counter() - t0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_growth = _maxrss_mib() - rss_before
    rows = rng.choice(args.queries, size=min(5, args.queries), replace=False)
    direct = (queries[rows] @ keys.T).max(axis=1)
    ok = np.allclose(best[rows], direct, atol=1e-5)
    gflop = 2.0 * args.queries * args.keys * args.dim / 1e9
    print(f"maxsim: {args.queries} x {args.keys} x {args.dim}, chunk {args.chunk}: "
          f"best {min(times):.2f} s of {len(times)} ({gflop / min(times):.1f} GFLOP/s); "
          f"inputs {inputs_mib:.0f} MiB; extra peak allocated {peak / 2**20:.0f} MiB (tracemalloc), "
          f"max-RSS growth {rss_growth:.0f} MiB; spot check {'ok' if ok else 'MISMATCH'}")
    if not ok:
        sys.exit(1)


def _quatrains_from_jsonl(path: Path, n: int) -> list[list[str]]:
    opener = gzip.open if path.suffix == ".gz" else open
    out: list[list[str]] = []
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            rec = json.loads(line)
            if "lines" in rec:
                candidates = [rec["lines"]]
            else:   # DLK poem: stanzas of {"text"}
                candidates = [[v["text"] for v in st[:4]] for st in rec.get("stanzas", []) if len(st) >= 4]
            for q in candidates:
                if len(q) == 4 and all(isinstance(v, str) and v.strip() for v in q):
                    out.append(q)
                    if len(out) >= n:
                        return out
    return out


def real_quatrains(args) -> tuple[list[list[str]], str]:
    candidates = [Path(args.quatrains)] if args.quatrains else [
        ROOT / "data" / "en" / "train.jsonl", ROOT.parent / "shared" / "data" / "de" / "dlk_poems.jsonl.gz"]
    for path in candidates:
        if path.exists():
            qs = _quatrains_from_jsonl(path, args.encode_n)
            if qs:
                return qs, path.name
    raise PoevalError("no quatrains for the encode benchmark: pass --quatrains FILE (JSON lines with \"lines\")")


def bench_encode(args) -> None:
    quatrains, source = real_quatrains(args)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    model = semantic.load_encoder(args.encoder, device=args.device)
    load_s = time.perf_counter() - t0
    semantic.embed_quatrains(quatrains[:8], model, batch_size=args.batch_size, progress=False)   # warm-up
    t0 = time.perf_counter()
    emb = semantic.embed_quatrains(quatrains, model, batch_size=args.batch_size, progress=False)
    dt = time.perf_counter() - t0
    import torch

    print(f"encode: {len(quatrains)} quatrains from {source} with {semantic.canonical_encoder_name(args.encoder)} "
          f"(dim {emb.shape[1]}, device {model.device}, torch threads {torch.get_num_threads()}, "
          f"batch {args.batch_size}): {dt:.2f} s = {len(quatrains) / dt:.0f} quatrains/s "
          f"(encoder load {load_s:.1f} s)")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=["all", "maxsim", "encode"], default="all")
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--keys", type=int, default=180_000)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--chunk", type=int, default=20_000)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--encoder", default="default")
    p.add_argument("--device", default=None, help="cpu, cuda, ... (default: sentence-transformers' choice)")
    p.add_argument("--quatrains", default=None)
    p.add_argument("--encode-n", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--threads", type=int, default=None, help="torch threads for encoding")
    args = p.parse_args(argv)
    try:
        if args.mode in ("all", "maxsim"):
            bench_maxsim(args)
        if args.mode in ("all", "encode"):
            bench_encode(args)
    except PoevalError as err:
        sys.exit(f"error: {err}")


if __name__ == "__main__":
    main()
