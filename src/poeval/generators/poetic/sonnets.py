"""Pseudo-sonnets: the training data of DeepSpeare and Structured Adversary, built from a quatrain split.

Both models were trained on sonnets (14 verses: three quatrains and a couplet). Our corpus has
quatrains, so a pseudo-sonnet is three quatrains and one couplet, all from different quatrains. The
paper's Table 1 counts floor(2/7 x quatrains) sonnets per split (train and dev): every verse is used
once, so seven quatrains give two sonnets, six quatrains whole and the seventh split into its two
couplets, one per sonnet. We pack a seeded permutation of the split in blocks of seven; a remainder of
four to six quatrains gives one more sonnet (half of its couplet quatrain stays unused). Verses are reused
only when ``allow_reuse`` asks for more sonnets than that: each further pass packs a fresh permutation.

Records: ``{"id", "lines": [14], "quatrains": [[4] x3], "couplet": [2], "half": 0|1, "schemes": [3],
"meters": [3], "sources": [4 quatrain ids]}``; ``half`` says which couplet of the fourth quatrain it is;
scheme and metre are null when the split was not labelled.
"""

from __future__ import annotations

import collections
import random
from pathlib import Path

from poeval import config
from poeval.errors import PoevalError
from poeval.generators.poetic.common import tokenize, train_word2vec
from poeval.io import read_jsonl, write_json, write_jsonl

SONNET_DEFAULTS = config.defaults("#/properties/poetic/properties/sonnets")   # the params schema's
BLOCK = 7   # quatrains that give two sonnets: 2 x (3 quatrains + 1 couplet) = 28 verses = 7 quatrains
PARTS = 4   # quatrains one sonnet draws on


def capacity(n_quatrains: int) -> int:
    """Pseudo-sonnets a split of ``n_quatrains`` gives with every verse used at most once: floor(2n/7)."""
    return 2 * n_quatrains // BLOCK


def _pass(n_quatrains: int, rng: random.Random) -> list[tuple[list[int], int, int]]:
    """One pass over a fresh permutation: (three quatrain indices, couplet quatrain index, half) per sonnet."""
    order = rng.sample(range(n_quatrains), n_quatrains)
    plan = []
    for b in range(0, n_quatrains - PARTS + 1, BLOCK):
        block = order[b : b + BLOCK]
        half = rng.randrange(2)
        plan.append((block[:3], block[-1], half))
        if len(block) == BLOCK:   # the couplet quatrain's other half completes a second sonnet
            plan.append((block[3:6], block[-1], 1 - half))
    return plan


def build(quatrains: list[dict], n: int | None = None, seed: int = 1, allow_reuse: bool = False
          ) -> tuple[list[dict], dict]:
    """Pseudo-sonnets from quatrain records ``{"id", "lines", ["scheme", "meter"]}``; ``n`` None takes
    floor(2/7 x quatrains), every verse used once. Returns (records, report)."""
    total = len(quatrains)
    limit = capacity(total)
    if total < PARTS:
        raise PoevalError(f"pseudo-sonnets need at least {PARTS} quatrains (3 quatrains and a couplet from "
                          f"different ones); the split has {total}")
    n = limit if n is None else int(n)
    if n < 1:
        raise PoevalError(f"pseudo-sonnets: n must be >= 1, got {n}")
    if n > limit and not allow_reuse:
        raise PoevalError(f"{n} pseudo-sonnets need {14 * n} verses, but the split has {total} quatrains (at "
                          f"most {limit} sonnets with every verse used once); lower poetic.sonnets.n or set "
                          "poetic.sonnets.allow_reuse: true")
    rng = random.Random(seed)
    plan: list = []
    while len(plan) < n:
        plan += _pass(total, rng)
    records = [_sonnet(k, [quatrains[i] for i in whole], quatrains[c], half)
               for k, (whole, c, half) in enumerate(plan[:n])]
    verse_uses = collections.Counter(verse for step in plan[:n] for verse in _verses(*step))
    report = {"quatrains": total, "sonnets": n, "verses": 14 * n,
              "quatrains_used": len({i for i, _ in verse_uses}), "verses_used": len(verse_uses),
              "max_verse_uses": max(verse_uses.values()), "seed": seed, "allow_reuse": allow_reuse}
    return records, report


def _verses(whole: list[int], couplet_quatrain: int, half: int) -> list[tuple[int, int]]:
    """(quatrain index, verse index) of every verse of a planned sonnet."""
    return [(i, v) for i in whole for v in range(4)] + [(couplet_quatrain, 2 * half + v) for v in range(2)]


def _sonnet(k: int, whole: list[dict], fourth: dict, half: int) -> dict:
    couplet = list(fourth["lines"][2 * half : 2 * half + 2])
    quatrains = [list(p["lines"]) for p in whole]
    return {
        "id": f"sonnet{k:06d}",
        "lines": [line for q in quatrains for line in q] + couplet,
        "quatrains": quatrains,
        "couplet": couplet,
        "half": half,
        "schemes": [p.get("scheme") for p in whole],
        "meters": [p.get("meter") for p in whole],
        "sources": [str(p.get("id", "")) for p in whole + [fourth]],
    }


def _quatrain_records(path: str | Path) -> list[dict]:
    records = list(read_jsonl(path))
    for i, r in enumerate(records):
        lines = r.get("lines") if isinstance(r, dict) else None
        if not isinstance(lines, list) or len(lines) != 4 or not all(isinstance(x, str) for x in lines):
            raise PoevalError(f"{path}: record {i + 1} is not a quatrain (needs 'lines': 4 strings)")
    return records


def write_sonnets(train: str, dev: str, out: str, dev_out: str, report: str, cfg: dict) -> dict:
    """Pseudo-sonnets of the train and dev splits (Table 1 counts both; the ports train on the train
    ones) and one report with the counts of each."""
    cfg = {**SONNET_DEFAULTS, **cfg}
    config.check(cfg, "#/properties/poetic/properties/sonnets", "poetic.sonnets")
    from poeval.stamps import stamp

    # n caps the training sonnets; dev always takes its floor(2/7) share, the paper's dev SonNet
    train_records, train_summary = build(_quatrain_records(train), cfg["n"], int(cfg["seed"]), bool(cfg["allow_reuse"]))
    dev_records, dev_summary = build(_quatrain_records(dev), None, int(cfg["seed"]))
    write_jsonl(out, train_records)
    write_jsonl(dev_out, dev_records)
    summary = {"train": train_summary, "dev": dev_summary}
    write_json(report, {**summary, "provenance": stamp({"train": train, "dev": dev}, {"sonnets": cfg})})
    return summary


def write_word2vec(train: str, out: str, cfg: dict) -> dict:
    """word2vec vectors of the training split's verses (the models' tokenisation), for embedding init."""
    verses = [tokenize(line) for r in _quatrain_records(train) for line in r["lines"]]
    return train_word2vec([v for v in verses if v], out, cfg)
