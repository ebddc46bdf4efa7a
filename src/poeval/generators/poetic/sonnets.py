"""Pseudo-sonnets: the training data of DeepSpeare and Structured Adversary, built from a quatrain split.

Both models were trained on sonnets (14 verses: three quatrains and a couplet). Our corpus has
quatrains, so a pseudo-sonnet is three quatrains and one couplet, all from different quatrains. The
paper's Table 1 counts floor(2/7 x quatrains) sonnets per split (train and dev): every verse is used
once, so seven quatrains give two sonnets, six quatrains whole and the seventh split into its two
couplets, one per sonnet. We pack a seeded permutation of the split in blocks of seven; a remainder of
four to six quatrains gives one more sonnet (half of its couplet quatrain stays unused). Verses are reused
only when ``allow_reuse`` asks for more sonnets than that: each further pass packs a fresh permutation.

``recipe: paper`` (params ``poetic.sonnets.recipe``) builds them as the paper's code did instead
(hgroener/diversity_in_poetry_generation, ``training_data/parse_sonnets.py``; :func:`paper_sonnets`,
:func:`paper_split`): consecutive groups of four quatrains of the train split in its order (corpus order:
the split draws dev out and keeps the rest in place), the last group always dropped, each group one sonnet
of its first three quatrains and the first two verses of the fourth, every verse's line-final punctuation
stripped; the first 70 % of them train word2vec only (:func:`write_word2vec`) and the other 30 % are cut
80/10/10: train (the ports' training sonnets, 24 % of all), dev (Table 1's dev sonnets) and test (counted
in the report, unused, as in the paper). The dev quatrain split plays no part.

Records: ``{"id", "lines": [14], "quatrains": [[4] x3], "couplet": [2], "half": 0|1, "schemes": [3],
"meters": [3], "sources": [4 quatrain ids]}``; ``half`` says which couplet of the fourth quatrain it is;
scheme and metre are null when the split was not labelled.
"""

from __future__ import annotations

import collections
import dataclasses
import random
import string
from pathlib import Path

from poeval.errors import PoevalError
from poeval.generators.poetic.common import Word2Vec, tokenize, train_word2vec
from poeval.io import read_jsonl, write_json, write_jsonl
from poeval.sections import Section

RECIPE = "paper"   # the paper's recipe; the other, "poeval", is the schema's default
PAPER_CUTS = (0.7, 0.8, 0.9)   # background share of all sonnets; train and dev cut points of the rest
EOS = "<eos>"   # the paper's verse separator, a word of its word2vec sentences
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


def _strip_end(line: str) -> str:
    """A verse without its line-final ASCII punctuation and the spaces before it (parse_sonnets.py: one
    rstrip of ``string.punctuation``, then of whitespace; "far , !" -> "far ,")."""
    return line.rstrip(string.punctuation).rstrip()


def paper_sonnets(quatrains: list[dict]) -> list[dict]:
    """The paper's sonnets of quatrain records in their order (parse_sonnets.py, ``get_sonnets``): groups
    of four consecutive quatrains, the last group dropped (whole or not), each group three quatrains and
    the first two verses of the fourth (``half`` 0), verses stripped by :func:`_strip_end`."""
    groups = [quatrains[i : i + PARTS] for i in range(0, len(quatrains), PARTS)][:-1]
    stripped = [[{**q, "lines": [_strip_end(line) for line in q["lines"]]} for q in group] for group in groups]
    return [_sonnet(k, group[:3], group[3], 0) for k, group in enumerate(stripped)]


def paper_split(sonnets: list) -> tuple[list, list, list, list]:
    """(background, train, dev, test) as parse_sonnets.py's ``split_sonnets``: the first int(0.7 n) are the
    background (word2vec only); of the other m, the first int(0.8 m) train, up to int(0.9 m) dev, the rest test."""
    cut = int(len(sonnets) * PAPER_CUTS[0])
    rest = sonnets[cut:]
    train_end, dev_end = (int(len(rest) * share) for share in PAPER_CUTS[1:])
    return sonnets[:cut], rest[:train_end], rest[train_end:dev_end], rest[dev_end:]


@dataclasses.dataclass(frozen=True)
class Sonnets(Section):
    """Params ``poetic.sonnets``: how many pseudo-sonnets, drawn how, by which recipe (module docstring)."""

    POINTER, WHERE = "#/properties/poetic/properties/sonnets", "poetic.sonnets"
    n: int | None
    seed: int
    allow_reuse: bool
    recipe: str

    def __post_init__(self):
        if self.recipe == RECIPE and (self.n is not None or self.allow_reuse):
            raise PoevalError("poetic.sonnets.n and allow_reuse belong to recipe poeval; recipe paper takes every "
                              "group of four train quatrains (docs/paper-vs-poeval.md \"poeval vs the paper's code\")")


def _paper_parts(quatrains: list[dict], train: str) -> dict[str, list[dict]]:
    parts = paper_split(paper_sonnets(quatrains))
    if not parts[1]:
        raise PoevalError(f"{train}: {len(quatrains)} quatrains are too few for the paper's sonnet recipe "
                          "(no training sonnet)")
    return dict(zip(("background", "train", "dev", "test"), parts))


def _write_paper(train: str, out: str, dev_out: str) -> dict:
    quatrains = _quatrain_records(train)
    parts = _paper_parts(quatrains, train)
    write_jsonl(out, parts["train"])
    write_jsonl(dev_out, parts["dev"])
    return {"recipe": RECIPE, "quatrains": len(quatrains),
            **{name: {"sonnets": len(records)} for name, records in parts.items()},
            "uses": "background: word2vec only; train: the ports' training sonnets; dev: Table 1; test: unused"}


def write_sonnets(train: str, dev: str, out: str, dev_out: str, report: str, sonnets: Sonnets,
                  recorded: dict | None = None) -> dict:
    """Pseudo-sonnets of the train and dev splits (Table 1 counts both; the ports train on the train
    ones) and one report with the counts of each; under ``recipe: paper`` the paper's train and dev
    sonnets, all from the train split (module docstring). ``recorded``: the params the report's stamp
    records (the rule's: its job's; default: the section)."""
    from poeval.stamps import stamp

    recorded = {"sonnets": sonnets.to_dict()} if recorded is None else recorded
    if sonnets.recipe == RECIPE:
        summary = _write_paper(train, out, dev_out)
        write_json(report, {**summary, "provenance": stamp({"train": train}, recorded)})
        return summary
    # n caps the training sonnets; dev always takes its floor(2/7) share, the paper's dev SonNet
    train_records, train_summary = build(_quatrain_records(train), sonnets.n, sonnets.seed, sonnets.allow_reuse)
    dev_records, dev_summary = build(_quatrain_records(dev), None, sonnets.seed)
    write_jsonl(out, train_records)
    write_jsonl(dev_out, dev_records)
    summary = {"train": train_summary, "dev": dev_summary}
    write_json(report, {**summary, "provenance": stamp({"train": train, "dev": dev}, recorded)})
    return summary


def write_word2vec(train: str, out: str, word2vec: Word2Vec, sonnets: Sonnets | None = None) -> dict:
    """word2vec vectors of the training split's verses (the models' tokenisation), for embedding init.
    ``sonnets`` (params ``poetic.sonnets``) with ``recipe: paper``: of the paper's background sonnets
    instead, one sentence per sonnet with :data:`EOS` after every verse, as its file of sonnets joined by
    `` <eos> `` (parse_sonnets.py); words are the models' tokens, not its whitespace-split ones."""
    if sonnets is not None and sonnets.recipe == RECIPE:
        background = _paper_parts(_quatrain_records(train), train)["background"]
        sentences = [[t for line in sonnet["lines"] for t in tokenize(line) + [EOS]] for sonnet in background]
    else:
        verses = [tokenize(line) for r in _quatrain_records(train) for line in r["lines"]]
        sentences = [v for v in verses if v]
    return train_word2vec(sentences, out, word2vec)
