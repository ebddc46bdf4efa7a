"""Calibration of the distinct_k family's equivalence rule (poeval.metrics.distinct) on HUMAN quatrains.

Two quatrains should fall in the same class when one is a light perturbation of the other, and in different
classes when they are two distinct HUMAN quatrains, however close. On --quatrains (the dev split: JSON lines with
"id", "lines" and "source", its Gutenberg book), this script builds

* perturbed pairs: each of --perturb quatrains (seeded) against each of its light perturbations: punctuation
  removed and case folded; one word, or two, replaced by a word drawn from the file's vocabulary; two verses
  swapped; one typo (two adjacent letters of a word swapped);
* distinct pairs: each quatrain and its nearest neighbour in the file, by cosine and by the lexical ratio (the
  hardest pairs for either rule), and as many random pairs;

and scores both candidate rules on every pair: the cosine of the semantic family's encoder embeddings, and the
Ratcliff-Obershelp ratio of the memorization matcher (difflib, the quatrain's verses joined by one space). It
prints, per threshold, the share of perturbed pairs merged (score >= threshold) and the share of distinct pairs
kept apart, then chooses each rule's threshold by 5-fold cross-validation grouped by book: on four folds the
threshold that maximises the balanced accuracy (mean of the merged share and the nearest-neighbour pairs' apart
share; ties: the middle of the best run), scored on the fifth. Last, the file is partitioned at the chosen
cosine threshold, alone and with every perturbation appended after the originals.

Example (the main job's dev split, the semantic family's default encoder)::

    HF_HUB_OFFLINE=1 python benchmarks/calibrate_distinct.py --quatrains data/en/dev.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import string
import time

import numpy as np
from rapidfuzz.process import cdist

from poeval.metrics import distinct, memorization, semantic

KINDS = ("punct_case", "word1", "word2", "swap", "typo")
WORD = re.compile(r"[A-Za-zÀ-ÿ]+")


def perturb(lines: list[str], kind: str, vocab: list[str], rng: np.random.Generator) -> list[str]:
    """One light perturbation of a quatrain."""
    if kind == "punct_case":
        table = str.maketrans("", "", string.punctuation + "“”‘’«»—–")
        return [v.translate(table).lower() for v in lines]
    if kind == "swap":
        i, j = rng.choice(4, size=2, replace=False)
        out = list(lines)
        out[i], out[j] = out[j], out[i]
        return out
    words = [(v, m.start(), m.end()) for v, line in enumerate(lines) for m in WORD.finditer(line)]
    if kind == "typo":
        long = [w for w in words if w[2] - w[1] >= 4] or words
        v, s, e = long[rng.integers(len(long))]
        k = s + int(rng.integers(e - s - 1))
        line = lines[v]
        return [line[:k] + line[k + 1] + line[k] + line[k + 2:] if i == v else x for i, x in enumerate(lines)]
    out = list(lines)
    picks = rng.choice(len(words), size=min(len(words), 1 if kind == "word1" else 2), replace=False)
    for v, s, e in sorted((words[p] for p in picks), key=lambda w: -w[1]):   # right to left: offsets stay valid
        out[v] = out[v][:s] + vocab[rng.integers(len(vocab))] + out[v][e:]
    return out


def lexical(a: list[str], b: list[str]) -> float:
    return memorization.ratio(" ".join(a), " ".join(b))


def shares(scores: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Per threshold of ``grid``, the share of ``scores`` at or above it."""
    return (scores[None, :] >= grid[:, None]).mean(axis=1) if scores.size else np.full(len(grid), np.nan)


def best_threshold(pos: np.ndarray, neg: np.ndarray, grid: np.ndarray) -> float:
    acc = (shares(pos, grid) + 1 - shares(neg, grid)) / 2
    best = np.flatnonzero(np.isclose(acc, acc.max()))
    run = best[: np.argmax(np.diff(np.append(best, best[-1] + 2)) > 1) + 1]   # the first run of best thresholds
    return float(grid[run[len(run) // 2]])


def cross_validate(pos, pos_group, neg, neg_group, grid, folds, seed):
    """(per fold: threshold chosen on the others, held-out merged share, held-out apart share)."""
    books = np.unique(np.concatenate([pos_group, neg_group]))
    fold_of = dict(zip(books, np.random.default_rng(seed).permutation(len(books)) % folds))
    pf, nf = (np.array([fold_of[g] for g in groups]) for groups in (pos_group, neg_group))
    out = []
    for f in range(folds):
        t = best_threshold(pos[pf != f], neg[nf != f], grid)
        out.append((t, float((pos[pf == f] >= t).mean()), float((neg[nf == f] < t).mean())))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quatrains", required=True)
    ap.add_argument("--perturb", type=int, default=300, help="quatrains perturbed (each in every kind)")
    ap.add_argument("--encoder", default="default")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--json", help="write every table here too")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    records = [json.loads(line) for line in open(args.quatrains, encoding="utf-8")]
    quatrains = [r["lines"] for r in records]
    books = np.array([r.get("source", r["id"]) for r in records])
    vocab = sorted({w for q in quatrains for v in q for w in WORD.findall(v)})
    chosen = rng.choice(len(quatrains), size=min(args.perturb, len(quatrains)), replace=False)
    perturbed = [(int(i), kind, perturb(quatrains[i], kind, vocab, rng)) for i in chosen for kind in KINDS]

    t0 = time.perf_counter()
    emb = semantic.embed_quatrains(quatrains + [p for _, _, p in perturbed], args.encoder, progress=False)
    print(f"encoded {len(emb)} quatrains in {time.perf_counter() - t0:.1f} s")
    orig, pert = emb[: len(quatrains)], emb[len(quatrains):]

    sims = orig @ orig.T
    np.fill_diagonal(sims, -np.inf)
    texts = [" ".join(q) for q in quatrains]
    indel = cdist(texts, texts, workers=1)   # rapidfuzz's normalised Indel similarity, an upper bound of difflib's
    np.fill_diagonal(indel, -1)
    near = {tuple(sorted((i, int(j)))) for i, j in enumerate(sims.argmax(axis=1))}
    near |= {tuple(sorted((i, int(j)))) for i, j in enumerate(indel.argmax(axis=1))}
    near = sorted(near)
    rand = [tuple(p) for p in (rng.choice(len(quatrains), size=2, replace=False) for _ in range(len(near)))]

    def scored(pairs):
        return (np.array([float(orig[i] @ orig[j]) for i, j in pairs]),
                np.array([lexical(quatrains[i], quatrains[j]) for i, j in pairs]))

    pos_cos = np.array([float(orig[i] @ pert[k]) for k, (i, _, _) in enumerate(perturbed)])
    pos_lex = np.array([lexical(quatrains[i], p) for i, _, p in perturbed])
    pos_kind = np.array([kind for _, kind, _ in perturbed])
    pos_group = books[[i for i, _, _ in perturbed]]
    (nn_cos, nn_lex), (rd_cos, rd_lex) = scored(near), scored(rand)
    nn_group = books[[i for i, _ in near]]

    report: dict = {"n_quatrains": len(quatrains), "n_perturbed": len(perturbed), "n_near": len(near),
                    "n_random": len(rand), "rules": {}}
    for rule, pos, nn, rd, grid in (("cosine", pos_cos, nn_cos, rd_cos, np.round(np.arange(0.50, 1.0001, 0.01), 2)),
                                    ("ratio", pos_lex, nn_lex, rd_lex, np.round(np.arange(0.40, 1.0001, 0.01), 2))):
        rows = []
        for t, merged, apart_nn, apart_rd, *by_kind in zip(grid, shares(pos, grid), 1 - shares(nn, grid),
                                                          1 - shares(rd, grid),
                                                          *(shares(pos[pos_kind == k], grid) for k in KINDS)):
            rows.append({"threshold": float(t), "merged": float(merged), "apart_near": float(apart_nn),
                         "apart_random": float(apart_rd), **{k: float(v) for k, v in zip(KINDS, by_kind)}})
        cv = cross_validate(pos, pos_group, nn, nn_group, grid, args.folds, args.seed)
        report["rules"][rule] = {"table": rows, "cv": cv, "chosen": best_threshold(pos, nn, grid),
                                 "max_near": float(nn.max()), "min_perturbed": float(pos.min())}
        print(f"\n## {rule}: perturbed pairs merged / distinct pairs kept apart\n")
        print("| threshold | merged (all) | " + " | ".join(KINDS) + " | apart (nearest) | apart (random) |")
        print("|---" * (4 + len(KINDS)) + "|")
        chosen = report["rules"][rule]["chosen"]
        for r in (r for i, r in enumerate(rows) if i % 2 == 0 or np.isclose(r["threshold"], chosen)):
            print(f"| {r['threshold']:.2f} | {r['merged']:.3f} | " + " | ".join(f"{r[k]:.3f}" for k in KINDS)
                  + f" | {r['apart_near']:.3f} | {r['apart_random']:.3f} |")
        print(f"\n{args.folds}-fold CV by book (threshold chosen on the other folds, held-out merged, held-out apart):")
        for f, (t, m, a) in enumerate(cv):
            print(f"  fold {f}: {t:.2f}  merged {m:.3f}  apart {a:.3f}")
        print(f"  mean held-out balanced accuracy {np.mean([(m + a) / 2 for _, m, a in cv]):.4f}; "
              f"chosen on all pairs: {report['rules'][rule]['chosen']:.2f}")

    t = report["rules"]["cosine"]["chosen"]
    alone = distinct.partition(orig, t)
    mixed = np.concatenate([orig, pert])
    labels = distinct.partition(mixed, t)
    joined = np.mean([labels[len(orig) + k] == labels[i] for k, (i, _, _) in enumerate(perturbed)])
    report["partition"] = {"threshold": t, "classes_alone": int(alone.max() + 1), "perturbations_joined": float(joined)}
    print(f"\npartition at cosine {t:.2f}: the {len(orig)} quatrains alone make {alone.max() + 1} classes; with their "
          f"perturbations after them, {joined:.3f} of the perturbations join their original's class")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main()
