"""Cost of the diversity family (poeval.metrics.diversity, not in the paper) on one sample.

Times each measure on --samples (JSON lines with "id" and "lines") and, with --reference (the training
split) and --embeddings (its cache from `poeval embed`), MAUVE against a HUMAN draw from the reference
rows not in the sample, as `poeval evaluate` does. Prints CPU and wall seconds per measure, the value,
and the settings that trade time for exactness: self-BLEU with all others or --references drawn ones,
homogenization over all pairs or --partners drawn ones. The load average is printed at the start and
the end: on a shared machine wall times are upper bounds.

A whole cell (the encoder run included) is timed with the CLI, e.g.::

    /usr/bin/time poeval evaluate data/en/human/human0.jsonl --reference data/en/train.jsonl --lang en \
        --metrics diversity --reference-embeddings results/embeddings/en/train.npy --threads 1 \
        --exclude-sample-from-reference --out /tmp/cell.json --quiet

Example::

    OMP_NUM_THREADS=1 python benchmarks/bench_diversity.py --samples data/en/human/human0.jsonl \
        --reference data/en/train.jsonl --embeddings results/embeddings/en/train.npy
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from poeval.metrics import diversity


def timed(name, fn):
    cpu, wall = time.process_time(), time.perf_counter()
    value = fn()
    print(f"{name:<32} {time.process_time() - cpu:7.2f} CPU-s {time.perf_counter() - wall:7.2f} s wall  {value}",
          flush=True)
    return value


def read(path):
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", required=True)
    ap.add_argument("--reference")
    ap.add_argument("--embeddings")
    ap.add_argument("--references", type=int, default=100, help="self-BLEU references drawn (besides all)")
    ap.add_argument("--partners", type=int, default=100, help="homogenization partners drawn (besides all)")
    args = ap.parse_args()
    print("load average at start:", os.getloadavg())
    records = read(args.samples)
    texts = diversity.texts([r["lines"] for r in records])
    print(f"{len(texts)} quatrains")
    mean = lambda v: None if v is None else round(float(v.mean()), 6)   # noqa: E731
    timed("self-BLEU, all others", lambda: mean(diversity.self_bleu(texts, None)))
    timed(f"self-BLEU, {args.references} drawn", lambda: mean(diversity.self_bleu(texts, args.references)))
    timed("homogenization, all pairs", lambda: mean(diversity.homogenization(texts, None)))
    timed(f"homogenization, {args.partners} drawn", lambda: mean(diversity.homogenization(texts, args.partners)))
    timed("distinct-n", lambda: diversity.distinct_n(texts))
    timed("compression ratio, gzip", lambda: diversity.compression_ratio(texts))
    timed("compression ratio, diversity", lambda: diversity.compression_ratio(texts, "diversity"))
    if args.reference and args.embeddings:
        position = {r["id"]: i for i, r in enumerate(read(args.reference))}
        cached = np.load(args.embeddings)
        mine = [position[r["id"]] for r in records if r["id"] in position]
        if len(mine) != len(records):
            print("the sample is not in the reference: Vendi and MAUVE need its embeddings; skipped")
            return
        rest = np.setdiff1d(np.arange(len(cached)), mine)
        human = cached[rest][diversity.human_rows(len(rest), len(mine), 1)]
        timed("Vendi (dual form)", lambda: diversity.vendi(cached[mine]))
        timed("MAUVE (auto buckets, seed 25)", lambda: diversity.mauve_score(cached[mine], human, "auto", 25))
    print("load average at end:", os.getloadavg())


if __name__ == "__main__":
    main()
