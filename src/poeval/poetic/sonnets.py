"""Pseudo-sonnets: the training data of DeepSpeare and Structured Adversary, built from the quatrain split.

Both models were trained on sonnets (14 verses: three quatrains and a couplet). Our corpus has
quatrains, so a pseudo-sonnet is three training quatrains and one couplet (the first or the second
half of a fourth quatrain), all four from different quatrains. The papers' public code cuts sonnets
from overlapping windows, which repeats verses; here every training quatrain is used once before any is
used again, and reuse happens only when ``allow_reuse`` asks for more sonnets than the split holds.

Records: ``{"id", "lines": [14], "quatrains": [[4] x3], "couplet": [2], "schemes": [3], "meters": [3],
"sources": [4 quatrain ids]}``; scheme and metre are null when the split was not labelled.
"""

from __future__ import annotations

import collections
import random
from pathlib import Path

from ..errors import PoevalError
from ..io import read_jsonl, write_json, write_jsonl
from .common import tokenize, train_word2vec

SONNET_DEFAULTS = {"n": None, "seed": 1, "allow_reuse": False}
PARTS = 4  # three quatrains and the quatrain the couplet comes from


def _draw(n_quatrains: int, n: int, rng: random.Random) -> list[list[int]]:
    """Index groups of four distinct quatrains; each full pass over a fresh permutation uses every
    quatrain once, so uses differ by at most one across quatrains."""
    order: list[int] = []
    while len(order) < PARTS * n:
        order += rng.sample(range(n_quatrains), n_quatrains)
    order = order[: PARTS * n]
    groups = [order[i : i + PARTS] for i in range(0, len(order), PARTS)]
    for g, group in enumerate(groups):   # a group spanning two passes may repeat a quatrain
        for j in range(PARTS):
            if group[j] in group[:j]:
                group[j] = _swap_in(groups, g, j)
    return groups


def _swap_in(groups: list[list[int]], g: int, j: int) -> int:
    """Swap ``groups[g][j]`` with an element of a later group that is new to group g and whose own
    group does not hold the outgoing element, keeping every group's members distinct."""
    out = groups[g][j]
    for h in range(g + 1, len(groups)):
        for k, cand in enumerate(groups[h]):
            if cand not in groups[g] and out not in groups[h]:
                groups[h][k] = out
                return cand
    for h in range(g):   # the tail: look back instead
        for k, cand in enumerate(groups[h]):
            if cand not in groups[g] and out not in groups[h]:
                groups[h][k] = out
                return cand
    raise PoevalError("cannot draw four distinct quatrains per pseudo-sonnet")


def build(quatrains: list[dict], n: int | None = None, seed: int = 1, allow_reuse: bool = False
          ) -> tuple[list[dict], dict]:
    """Pseudo-sonnets from training quatrain records ``{"id", "lines", ["scheme", "meter"]}``; ``n``
    None takes as many as the split gives without reuse. Returns (records, report)."""
    total = len(quatrains)
    limit = total // PARTS
    if total < PARTS:
        raise PoevalError(f"pseudo-sonnets need at least {PARTS} training quatrains (3 quatrains and a couplet "
                          f"from different ones); the training split has {total}")
    n = limit if n is None else int(n)
    if n < 1:
        raise PoevalError(f"pseudo-sonnets: n must be >= 1, got {n}")
    if n > limit and not allow_reuse:
        raise PoevalError(f"{n} pseudo-sonnets need {PARTS * n} different training quatrains, but the training "
                          f"split has {total} (at most {limit} sonnets without reuse); lower poetic.sonnets.n or "
                          "set poetic.sonnets.allow_reuse: true")
    rng = random.Random(seed)
    records = [_sonnet(k, [quatrains[i] for i in group], rng) for k, group in enumerate(_draw(total, n, rng))]
    uses = collections.Counter(src for r in records for src in r["sources"])
    report = {"train_quatrains": total, "sonnets": n, "verses": 14 * n, "quatrains_used": len(uses),
              "max_uses": max(uses.values()), "reused_quatrains": sum(1 for c in uses.values() if c > 1),
              "seed": seed, "allow_reuse": allow_reuse}
    return records, report


def _sonnet(k: int, parts: list[dict], rng: random.Random) -> dict:
    half = rng.randrange(2)   # the couplet is the first or the second half of the fourth quatrain
    couplet = list(parts[3]["lines"][2 * half : 2 * half + 2])
    quatrains = [list(p["lines"]) for p in parts[:3]]
    return {
        "id": f"sonnet{k:06d}",
        "lines": [line for q in quatrains for line in q] + couplet,
        "quatrains": quatrains,
        "couplet": couplet,
        "schemes": [p.get("scheme") for p in parts[:3]],
        "meters": [p.get("meter") for p in parts[:3]],
        "sources": [str(p.get("id", "")) for p in parts],
    }


def _read_train(path: str | Path) -> list[dict]:
    records = list(read_jsonl(path))
    for i, r in enumerate(records):
        lines = r.get("lines") if isinstance(r, dict) else None
        if not isinstance(lines, list) or len(lines) != 4 or not all(isinstance(x, str) for x in lines):
            raise PoevalError(f"{path}: record {i + 1} is not a quatrain (needs 'lines': 4 strings)")
    return records


def write_sonnets(train: str, out: str, report: str, cfg: dict) -> dict:
    """Build pseudo-sonnets from the training split and write them with their report (counts)."""
    unknown = set(cfg) - set(SONNET_DEFAULTS)
    if unknown:
        raise PoevalError(f"unknown poetic.sonnets parameter(s) {sorted(unknown)}; known: {sorted(SONNET_DEFAULTS)}")
    cfg = {**SONNET_DEFAULTS, **cfg}
    from ..provenance import stamp

    records, summary = build(_read_train(train), cfg["n"], int(cfg["seed"]), bool(cfg["allow_reuse"]))
    write_jsonl(out, records)
    write_json(report, {**summary, "provenance": stamp({"train": train}, {"sonnets": cfg})})
    return summary


def write_word2vec(train: str, out: str, cfg: dict) -> dict:
    """word2vec vectors of the training split's verses (the models' tokenisation), for embedding init."""
    verses = [tokenize(line) for r in _read_train(train) for line in r["lines"]]
    return train_word2vec([v for v in verses if v], out, cfg)
