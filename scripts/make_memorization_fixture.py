"""Write tests/fixtures/memorization_real.jsonl: real model samples beside the training quatrains nearest to
them, for the test that the memorization search equals brute force on real text (tests/unit/test_memorization.py).

Run after the main job (it reads its samples and the English training split)::

    python scripts/make_memorization_fixture.py results/samples/en/gpt2-s/vanilla.jsonl \\
        results/samples/en/smollm2/vanilla.jsonl --train data/en/train.jsonl
"""

from __future__ import annotations

import argparse
import json
import random

from rapidfuzz import process
from rapidfuzz.distance import Indel

from poeval.io import read_poems
from poeval.metrics.memorization import units


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("samples", nargs="+", help="sample files of the main job")
    ap.add_argument("--train", required=True)
    ap.add_argument("--per-file", type=int, default=12, help="samples taken from each file")
    ap.add_argument("--nearest", type=int, default=4, help="nearest training quatrains kept per sample")
    ap.add_argument("--train-size", type=int, default=240, help="training quatrains in all (nearest + random)")
    ap.add_argument("--out", default="tests/fixtures/memorization_real.jsonl")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    train, _ = read_poems(args.train)
    train_units = units([p["lines"] for p in train], "quatrain")
    records, keep = [], set()
    for path in args.samples:
        poems, _ = read_poems(path)
        for poem in rng.sample(poems, min(args.per_file, len(poems))):
            records.append({"role": "sample", "source": path, "id": poem["id"], "lines": poem["lines"]})
            nearest = process.extract(units([poem["lines"]], "quatrain")[0], train_units,
                                      scorer=Indel.normalized_similarity, limit=args.nearest)
            keep.update(i for _, _, i in nearest)
    rest = [i for i in range(len(train)) if i not in keep]
    keep.update(rng.sample(rest, max(0, min(len(rest), args.train_size - len(keep)))))
    records += [{"role": "train", "source": args.train, "id": train[i]["id"], "lines": train[i]["lines"]}
                for i in sorted(keep)]
    with open(args.out, "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    print(f"{args.out}: {sum(r['role'] == 'sample' for r in records)} samples, {len(keep)} training quatrains")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
