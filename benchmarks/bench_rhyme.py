"""Rhyme-scheme benchmark on the dev gold (`../shared/data/gold/rhyme_{en,de}_dev.jsonl`).

Reports, per language: exact-scheme accuracy on 4-line stanzas (and on all stanzas), pairwise precision
and recall over all line pairs of all stanzas ("rhyme or repetition" = linked), and stanzas/s.

* ``shipped``: the fitted tables the package ships (``poeval/poetry/data/rhyme_fit.json``: ``rhyme.LLR``,
  ``rhyme.PAIR_LLR``, ``schemes.DIST_BIAS``, ``schemes.SCHEME_COUNTS_4``).
* ``dev-fit``: level log-likelihood ratios, the pair table (``fit_pair_llr``), distance shifts and scheme
  counts fitted on all of dev (what ``--fit`` writes to that file, with the command, commit, date and the
  gold's sha256, or to ``--fit-out``; the 4-line scheme prior uses ``PRIOR_WEIGHT``/``PRIOR_SMOOTHING``).
* ``cv5-poet``: 5-fold cross-validation by poet (``--folds``; ``poet_folds``: no poet in two folds, the
  English 17th-18th-century poets spread over the folds): everything fitted (level ratios, pair table,
  scheme prior, distance shifts) is counted on the other folds' poets and scored on the fold's; the honest
  figure. The hand-written knowledge in ``poeval.poetry`` (historical vowels, spellings) is general, not
  read off this gold. The stanza context (``schemes.CONTEXT``: how much less a loose pair counts beside exact ones) is
  fixed in every setup; ``--context STRONG,BOTH,ONE`` or ``--context off`` scores other values.
* ``shipped+poem``, ``cv5-poet+poem``: the same, each poem's stanzas labelled together (``schemes.vote_labels``,
  weight ``schemes.POEM_VOTE`` or ``--poem-weight``; the poem of a stanza is its gold id's parent,
  ``poem_key``), with the spread of the CV estimates over poets. ``--nested-poem`` chooses the weight inside
  each fold (``nested_poem``, ``POEM_GRID``); ``--errors`` counts the CV's 4-line errors with the poem by
  class (``error_class``) and by gold -> predicted scheme.
* ``--by-poet`` adds ``loo-poet`` (leave-one-poet-out) and ``loo-period`` (leave-one-period-out: each
  century's poets scored with everything fitted on the other centuries' poets, as held-out poets of a
  period dev barely has would be), figures per period (``POET_PERIOD``, ``POET_PERIOD_DE``: the poets'
  centuries, public knowledge, used only to group and report, never as detector input), the spread of
  the CV 4-line estimate when the poets are resampled, and the leave-one-poet-out 4-line accuracy of each
  poet.
* ``nested-ctx`` (only with ``--nested-context``, a few minutes a language): the CV by poet with the stanza
  context chosen inside each fold from ``CONTEXT_GRID`` (``nested_context``); the folds' choices go to stderr.
* ``rhymetagger`` (only with ``--rhymetagger PYTHON``): the peer tool rhymetagger (PyPI, Plecháč 2018) with
  its shipped pretrained ``en``/``de`` model and default settings, run on the same stanzas (one stanza = one
  poem) in a subprocess of PYTHON, an interpreter of a separate venv that has it installed (it is not a
  dependency of poeval). Its per-line rhyme links (``tag(..., output_format=1)``) are closed into clusters,
  unlinked lines get their own letter. stanzas/s counts its tagging time only (model load excluded).

    .venv/bin/python benchmarks/bench_rhyme.py [--lang en de] [--fit [--fit-out rhyme_fit.json]] [--limit N]
        [--folds 5] [--by-poet] [--context STRONG,BOTH,ONE|off] [--nested-context] [--poem-weight W]
        [--nested-poem] [--errors]
        [--rhymetagger /tmp/rt-venv/bin/python [--rhymetagger-normalise-de]]

(set-up of that venv, outside the project's: ``python3 -m venv /tmp/rt-venv && /tmp/rt-venv/bin/pip install
rhymetagger``; see benchmarks/README.md.)

Takes about two minutes for both languages (espeak-ng and CMUdict lookups are cached per word); rhymetagger
adds about 13 minutes (it starts espeak-ng three times per stanza).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import re
import subprocess
import sys
import time
from collections import Counter
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from poeval import files, io  # noqa: E402
from poeval.poetry import rhyme, schemes, spelling  # noqa: E402

GOLD = ROOT.parent / "shared" / "data" / "gold"


def load(lang: str, limit: int | None = None) -> list[dict]:
    path = GOLD / f"rhyme_{lang}_dev.jsonl"
    if not path.exists():
        sys.exit(f"gold data not found: {path}")
    rows = [json.loads(x) for x in path.open(encoding="utf-8")]
    return rows[:limit] if limit else rows


def count_levels(rows: list[dict], lang: str, detail: bool = False) -> tuple[Counter, Counter]:
    """Linked and unlinked gold pairs per level (``detail``: per pair key, level and detail)."""
    link, non = Counter(), Counter()
    for r in rows:
        lev = r["_lev"]
        s = r["scheme"]
        for i, j in itertools.combinations(range(len(s)), 2):
            key = lev[i][j] if detail else lev[i][j].split(" ", 1)[0]
            (link if s[i] == s[j] else non)[key] += 1
    return link, non


def fit_llr(link: Counter, non: Counter, alpha: float = 1.0) -> dict[str, float]:
    """Smoothed log P(level | linked) / P(level | not linked); an unseen level gets 0 (no evidence)."""
    nl, nn = sum(link.values()), sum(non.values())
    ratio = nn / max(nl, 1)
    out = {}
    for lev in rhyme.LEVELS:
        out[lev] = round(math.log((link[lev] + alpha) / (non[lev] + alpha * ratio)) + math.log(ratio), 3)
    return out


PAIR_PRIOR = 5.0  # pseudo-pairs at the level's own link rate that every pair-table entry starts from


def fit_pair_llr(rows: list[dict], lang: str, llr: dict[str, float]) -> dict[str, float]:
    """The pair table: the ratio of each level-and-detail key seen on ``rows`` (``rhyme.pair_levels`` with
    ``detail=True``: the two stressed vowels, or the spellings' shared final letters), shrunk towards its
    level's ratio ``llr`` by ``PAIR_PRIOR`` pseudo-pairs at the level's link rate, so that a detail seen a
    few times moves its ratio a little and one seen often speaks for itself."""
    link, non = count_levels(rows, lang, detail=True)
    odds = math.log(sum(link.values()) / max(sum(non.values()), 1))  # a ratio is log-odds less this
    out = {}
    for key in sorted(set(link) | set(non)):
        level = key.split(" ", 1)[0]
        if level == key:
            continue
        q = 1.0 / (1.0 + math.exp(-(llr[level] + odds)))  # the level's link rate
        x = round(math.log((link[key] + PAIR_PRIOR * q) / (non[key] + PAIR_PRIOR * (1 - q))) - odds, 3)
        if x != llr[level]:
            out[key] = x
    return out


def fit_ratios(rows: list[dict], lang: str) -> dict[str, float]:
    """Level ratios and the pair table fitted on ``rows``, merged as ``rhyme.ratio`` reads them."""
    llr = fit_llr(*count_levels(rows, lang))
    return {**llr, **fit_pair_llr(rows, lang, llr)}


FIT_PATH = ROOT / "src" / "poeval" / rhyme.FIT_FILE


def write_fit(path: str, fitted_tables: dict) -> None:
    """The fitted tables in the package data file's format (checked by ``rhyme.check_fit``), with provenance."""
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    gold = {lang: {"file": f"gold/rhyme_{lang}_dev.jsonl", "sha256": files.file_sha256(GOLD / f"rhyme_{lang}_dev.jsonl")}
            for lang in fitted_tables}
    table = {
        "provenance": {"command": "python benchmarks/bench_rhyme.py --fit", "commit": commit,
                       "date": date.today().isoformat(), "dev_gold": gold},
        "llr": {lang: t[0] for lang, t in fitted_tables.items()},
        "pair_llr": {lang: t[5] for lang, t in fitted_tables.items()},
        "dist_bias": {lang: t[3] for lang, t in fitted_tables.items()},
        "scheme_counts_4": {lang: t[4] for lang, t in fitted_tables.items()},
    }
    rhyme.check_fit(table, str(path))
    io.write_json(path, table)


def scheme_counts(rows: list[dict]) -> Counter:
    return Counter(schemes.normalise_scheme(r["scheme"]) for r in rows if len(r["scheme"]) == 4)


def fit_dist_bias(rows: list[dict], maxd: int = 12) -> list[float]:
    """log-odds of a link at line distance d minus the log-odds over all pairs (stanzas of 5+ lines)."""
    link, non = Counter(), Counter()
    for r in rows:
        s = r["scheme"]
        if len(s) < 5:
            continue
        for i, j in itertools.combinations(range(len(s)), 2):
            (link if s[i] == s[j] else non)[min(j - i, maxd)] += 1
    base = math.log(sum(link.values()) / max(sum(non.values()), 1))
    return [round(math.log((link[d] + 1) / (non[d] + 1)) - base, 3) for d in range(1, maxd + 1)]


# Century of each English dev poet (general knowledge, not fitted): the folds spread each period, so that
# every fold scores some 17th-18th-century verse with tables fitted on the other periods' poets too.
POET_PERIOD = {
    "Thomas Wyatt": 16, "Sir Thomas More": 16, "Edmund Spenser": 16, "Samuel Daniel": 16, "Thomas Lodge": 16,
    "Henry Constable": 16, "Bartholomew Griffin": 16, "William Smith": 16, "Richard Lovelace": 17,
    "Anne Finch": 17, "Jonathan Swift": 18, "Alexander Pope": 18, "Charlotte Turner Smith": 18,
    "William Wordsworth": 19, "Samuel Taylor Coleridge": 19, "Lord Byron": 19, "A. E. Housman": 20,
    "Rupert Brooke": 20, "Edward Thomas": 20,
}


def poet_folds(rows: list[dict], k: int, period: dict | None = None) -> dict[str, int]:
    """Fold of each poet (``author``): poets of one period (17th and 18th century together) are dealt in
    turn, largest first (4-line stanzas, then all), each to the fold with the fewest 4-line stanzas so far,
    so that the periods and the stanza counts are spread over the k folds. No poet is in two folds."""
    period = POET_PERIOD if period is None else period
    n4, n = Counter(), Counter()
    for r in rows:
        n[r["author"]] += 1
        n4[r["author"]] += len(r["scheme"]) == 4
    era = {a: 17 if period.get(a) == 18 else period.get(a, 0) for a in n}  # 17th-18th century: one stratum
    load4 = [0] * k
    loadall = [0] * k
    fold = {}
    for a in sorted(n, key=lambda a: (era[a], -n4[a], -n[a], a)):
        f = min(range(k), key=lambda i: (load4[i], loadall[i], i))
        fold[a] = f
        load4[f] += n4[a]
        loadall[f] += n[a]
    return fold


def cross_validate(rows: list[dict], lang: str, k: int, weight: float, bias: float, dist: bool,
                   context: tuple | None = None, fold: dict | None = None, poem: float = 0.0) -> list[str]:
    """Predictions with k-fold cross-validation by poet: the level ratios, the pair table, the scheme prior
    and the distance shifts are fitted on the other folds' poets only. ``fold`` (poet -> fold id) overrides
    the k folds of :func:`poet_folds` (leave-one-poet-out, leave-one-period-out); ``poem`` > 0 lets each
    poem's stanzas vote with that weight (``schemes.vote_labels``)."""
    return vote_predict(rows, fold_weights(rows, lang, k, weight, bias, dist, context, fold), poem)


def fold_weights(rows: list[dict], lang: str, k: int, weight: float, bias: float, dist: bool,
                 context: tuple | None = None, fold: dict | None = None) -> list[tuple]:
    """(pair weights, scheme prior) of every row with everything fitted on the other folds' poets."""
    fold = poet_folds(rows, k) if fold is None else fold
    out: list[tuple] = [None] * len(rows)
    for f in sorted(set(fold.values())):
        train = [r for r in rows if fold[r["author"]] != f]
        idx = [i for i, r in enumerate(rows) if fold[r["author"]] == f]
        if not idx:
            continue
        llr, prior, dist_f = fit_tables(train, lang, weight, dist)
        for i, wp in zip(idx, row_weights([rows[i] for i in idx], llr, bias, prior, dist_f, context)):
            out[i] = wp
    return out


def fit_tables(train: list[dict], lang: str, weight: float, dist: bool) -> tuple:
    """(level ratios and pair table, scheme prior, distance shifts) fitted on ``train``: one fold's tables."""
    prior = schemes.scheme_prior(lang, weight, scheme_counts(train)) if weight > 0 else None
    return fit_ratios(train, lang), prior, fit_dist_bias(train) if dist else []


def fit_and_predict(train: list[dict], test: list[dict], lang: str, weight: float, bias: float, dist: bool,
                    context: tuple | None) -> list[str]:
    """``test``'s schemes, each alone, with everything fitted on ``train`` (:func:`fit_tables`)."""
    llr, prior, dist_f = fit_tables(train, lang, weight, dist)
    return predict(test, llr, bias, prior, dist_f, context)


def poem_key(row: dict) -> str:
    """The poem of a gold stanza: its id without the stanza number (corpus / source file / poem)."""
    return row["id"].rsplit("/", 1)[0]


# the poem vote weights --nested-poem chooses from inside each fold
POEM_GRID = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0]


def nested_poem(rows: list[dict], lang: str, k: int, weight: float, bias: float, dist: bool,
                context: tuple | None, grid: list[float] = POEM_GRID) -> tuple[list[str], list[float]]:
    """Predictions with the poem vote's weight chosen inside each of the k folds by poet: the weight of
    ``grid`` with the best (4-line, all-stanza) accuracy in a (k-1)-fold CV by poet on the fold's training
    poets; with the weight each fold chose. The honest figure for ``schemes.POEM_VOTE``, which was chosen
    on all of dev."""
    fold = poet_folds(rows, k)
    outer = fold_weights(rows, lang, k, weight, bias, dist, context, fold)
    preds, chosen = [""] * len(rows), []
    for f in sorted(set(fold.values())):
        idx = [i for i, r in enumerate(rows) if fold[r["author"]] == f]
        train = [r for r in rows if fold[r["author"]] != f]
        inner = fold_weights(train, lang, k - 1, weight, bias, dist, context)
        scores = [(evaluate(train, vote_predict(train, inner, lam)), lam) for lam in grid]
        lam = max(scores, key=lambda x: (x[0]["acc4"], x[0]["acc_all"], -x[1]))[1]
        chosen.append(lam)
        for i, p in zip(idx, vote_predict([rows[i] for i in idx], [outer[i] for i in idx], lam)):
            preds[i] = p
    return preds, chosen


# the stanza-context settings --nested-context chooses from inside each fold
CONTEXT_GRID = [(3.0, 3.0, 1.0), (3.0, 3.0, 1.5), (3.0, 4.0, 1.0), (3.0, 4.0, 1.5), (3.5, 3.0, 1.0),
                (2.5, 3.0, 1.0), (3.0, 3.0, 0.5), (3.0, 3.0, 2.0)]


def nested_context(rows: list[dict], lang: str, k: int, weight: float, bias: float, dist: bool,
                   grid: list[tuple] = CONTEXT_GRID) -> tuple[list[str], list[tuple]]:
    """Predictions with the stanza context chosen inside each of the k folds by poet: the setting of ``grid``
    with the best (4-line, all-stanza) accuracy in a (k-1)-fold CV by poet on the fold's training poets,
    then everything fitted on them and the fold scored; with the setting each fold chose. The honest figure
    for "the context chosen by CV", which the fixed ``schemes.CONTEXT`` rows are not."""
    fold = poet_folds(rows, k)
    preds, chosen = [""] * len(rows), []
    for f in sorted(set(fold.values())):
        train = [r for r in rows if fold[r["author"]] != f]
        idx = [i for i, r in enumerate(rows) if fold[r["author"]] == f]
        scores = [(evaluate(train, cross_validate(train, lang, k - 1, weight, bias, dist, ctx)), ctx) for ctx in grid]
        ctx = max(scores, key=lambda x: (x[0]["acc4"], x[0]["acc_all"]))[1]
        chosen.append(ctx)
        for i, p in zip(idx, fit_and_predict(train, [rows[i] for i in idx], lang, weight, bias, dist, ctx)):
            preds[i] = p
    return preds, chosen


# Century of each German dev poet's main verse (general knowledge; used only to group folds and to report
# figures by period, never as detector input). Undated "N. N." is the 1848 collection's anonymous verse.
POET_PERIOD_DE = {
    "Heinrich Mühlpfort": 17, "Kaspar von Stieler": 17, "Georg Rodolf Weckherlin": 17, "Angelus Silesius": 17,
    "Friedrich von Logau": 17, "Philipp von Zesen": 17, "Johann Beer": 17, "Daniel von Czepko": 17,
    "Nicolaus Ludwig von Zinzendorf": 18, "Ludwig Christoph Heinrich Hölty": 18, "Johann Georg Gressel": 18,
    "Anna Luise Karsch": 18, "Christian Felix Weiße": 18, "Friedrich von Hagedorn": 18,
    "Christian Gotthold Spindler": 18, "Johann Wilhelm Ludwig Gleim": 18, "Ewald Christian von Kleist": 18,
    "Christian zu Stolberg-Stolberg": 18, "Johann Wolfgang von Goethe": 18, "Friedrich Hölderlin": 18,
    "Achim von Arnim": 19, "Theodor Fontane": 19, "N. N.": 19, "Ludwig Uhland": 19, "Johann Peter Hebel": 19,
    "Justinus Kerner": 19, "Georg Herwegh": 19, "Nikolaus Lenau": 19, "Joseph von Eichendorff": 19,
    "Georg Trakl": 20,
}


def period_of(lang: str) -> dict:
    return POET_PERIOD if lang == "en" else POET_PERIOD_DE


def period_folds(rows: list[dict], lang: str) -> dict[str, int]:
    """Leave-one-period-out: each century's poets form one fold, scored with everything fitted on the poets
    of the other centuries only (the poets a held-out half adds may write in a period dev barely has)."""
    per = period_of(lang)
    return {r["author"]: per.get(r["author"], 0) for r in rows}


def poet_out_folds(rows: list[dict]) -> dict[str, int]:
    """Leave-one-poet-out: one fold per poet."""
    names = sorted({r["author"] for r in rows})
    return {a: k for k, a in enumerate(names)}


def by_period(rows: list[dict], preds: dict[str, list[str]], lang: str) -> list[tuple]:
    """(period, n4, {setup: evaluate(...)}) per century of the poets, in order."""
    per = period_of(lang)
    out = []
    for c in sorted({per.get(r["author"], 0) for r in rows}):
        idx = [i for i, r in enumerate(rows) if per.get(r["author"], 0) == c]
        sub = [rows[i] for i in idx]
        out.append((c, sum(len(r["scheme"]) == 4 for r in sub),
                    {k: evaluate(sub, [p[i] for i in idx]) for k, p in preds.items()}))
    return out


def poet_spread(rows: list[dict], preds: list[str], reps: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """Spread of a CV 4-line estimate over poets: the estimate and the 5th and 95th percentile when the poets
    (with all their stanzas) are drawn again with replacement: how much another set of poets from the same
    sources could move it."""
    import random

    n, ok = Counter(), Counter()
    for r, p in zip(rows, preds):
        if len(r["scheme"]) == 4:
            n[r["author"]] += 1
            ok[r["author"]] += schemes.normalise_scheme(r["scheme"]) == p
    poets = [a for a in n if n[a]]
    rng = random.Random(seed)
    vals = []
    for _ in range(reps):
        draw = [rng.choice(poets) for _ in poets]
        vals.append(sum(ok[a] for a in draw) / max(sum(n[a] for a in draw), 1))
    vals.sort()
    return sum(ok.values()) / sum(n.values()), vals[int(0.05 * reps)], vals[int(0.95 * reps) - 1]


def per_poet(rows: list[dict], preds: list[str]) -> list[tuple[str, int, float]]:
    """(poet, 4-line stanzas, exact accuracy), most stanzas first."""
    n, ok = Counter(), Counter()
    for r, p in zip(rows, preds):
        if len(r["scheme"]) == 4:
            n[r["author"]] += 1
            ok[r["author"]] += schemes.normalise_scheme(r["scheme"]) == p
    return [(a, n[a], ok[a] / n[a]) for a in sorted(n, key=lambda a: (-n[a], a))]


def row_weights(rows: list[dict], llr: dict, bias: float, prior: dict | None = None,
                dist: list[float] | None = None, context: tuple | None = None) -> list[tuple]:
    """(pair weights, scheme prior) of each row (``_lev``: its pair keys) under the given tables."""
    return [(schemes.level_weights(r["_lev"], llr, bias, dist, context), prior if len(r["_lev"]) == 4 else None)
            for r in rows]


def vote_predict(rows: list[dict], weights: list[tuple], poem: float = 0.0) -> list[str]:
    """Schemes from (weights, prior) per row: each alone, or with ``poem`` > 0 each poem's stanzas
    (:func:`poem_key`) voting (``schemes.vote_labels``, the library's own step)."""
    if poem <= 0:
        return [schemes.best_partition(w, p) for w, p in weights]
    groups: dict = {}
    for i, r in enumerate(rows):
        groups.setdefault(poem_key(r), []).append(i)
    out = [""] * len(rows)
    for idx in groups.values():
        for i, label in zip(idx, schemes.vote_labels([weights[i][0] for i in idx], [weights[i][1] for i in idx],
                                                     poem)):
            out[i] = label
    return out


def predict(rows: list[dict], llr: dict, bias: float, prior: dict | None = None,
            dist: list[float] | None = None, context: tuple | None = None, poem: float = 0.0) -> list[str]:
    return vote_predict(rows, row_weights(rows, llr, bias, prior, dist, context), poem)


def error_class(lev: list[list[str]], gold: str, pred: str) -> str:
    """The class of a wrong 4-line label, by its wrong pairs and the level of the first: a link both missed
    and added (in the wrong place); a missed link whose end words share no sound (levels v0c0 and v0c1 with
    no tail and no eye rhyme) or only a loose one; an added link of a repeated word, of a feminine or
    unstressed ending only (tails w, u, y), or of a rhyme the gold keeps apart."""
    pairs = list(itertools.combinations(range(len(gold)), 2))
    missed = [(i, j) for i, j in pairs if gold[i] == gold[j] and pred[i] != pred[j]]
    extra = [(i, j) for i, j in pairs if gold[i] != gold[j] and pred[i] == pred[j]]
    if missed and extra:
        return "a link in the wrong place"
    i, j = (missed or extra)[0]
    level = lev[i][j].split(" ", 1)[0]
    m = re.fullmatch(r"v(.)c(.)([wuy]?)(\+eye)?", level)
    if missed:
        none = m is not None and m[2] in "01" and not m[3] and not m[4] and m[1] == "0"
        return "missed: no shared sound" if none else "missed: a loose rhyme rated too low"
    if level == "identical":
        return "extra: a repeated end word"
    return "extra: a feminine or unstressed ending only" if m is not None and m[3] else \
        "extra: a rhyme the gold keeps apart"


def error_classes(rows: list[dict], alone: list[str], voted: list[str]) -> tuple[Counter, Counter, tuple]:
    """The 4-line errors of ``voted`` by gold -> predicted scheme and by :func:`error_class`, and how many
    stanzas the vote fixed and broke against ``alone``."""
    wrong, classes, fixed, broke = Counter(), Counter(), 0, 0
    for r, a, v in zip(rows, alone, voted):
        g = schemes.normalise_scheme(r["scheme"])
        if len(g) != 4:
            continue
        fixed += a != g and v == g
        broke += a == g and v != g
        if v != g:
            wrong[(g, v)] += 1
            classes[error_class(r["_lev"], g, v)] += 1
    return wrong, classes, (fixed, broke)


def evaluate(rows: list[dict], preds: list[str]) -> dict:
    n4 = ok4 = nall = okall = tp = fp = fn = 0
    for r, p in zip(rows, preds):
        g = r["scheme"]
        same = schemes.normalise_scheme(g) == schemes.normalise_scheme(p)
        nall += 1
        okall += same
        if len(g) == 4:
            n4 += 1
            ok4 += same
        for i, j in itertools.combinations(range(len(g)), 2):
            gl, pl = g[i] == g[j], p[i] == p[j]
            tp += gl and pl
            fp += pl and not gl
            fn += gl and not pl
    return {
        "acc4": ok4 / max(n4, 1), "n4": n4, "acc_all": okall / max(nall, 1), "n": nall,
        "P": tp / max(tp + fp, 1), "R": tp / max(tp + fn, 1),
    }


# Runs inside the rhymetagger interpreter: reads {"lang", "stanzas"} as JSON on stdin, writes one JSON object
# with the per-line link lists of every stanza. nltk >= 3.9 word_tokenize wants the `punkt_tab` data, which
# rhymetagger tries to download at start-up; offline it cannot, so the download is skipped and lines are
# tokenised without sentence splitting (preserve_line=True), which leaves the line-final word, the only
# token rhymetagger uses (radif deletion is off in the shipped models), unchanged. A stanza whose one-call
# espeak-ng transcription (fast_ipa) comes back with fewer line separators than lines (IndexError; some
# historical German lines with `ꝛ`) is retagged with fast_ipa=False; a stanza that still fails counts as
# unrhymed.
RT_WORKER = r"""
import json, sys, time, importlib.metadata as md
import nltk
nltk.download = lambda *a, **k: False
_wt = nltk.tokenize.word_tokenize
nltk.tokenize.word_tokenize = lambda text, language="english", preserve_line=False: _wt(text, language, True)
from rhymetagger import RhymeTagger
job = json.load(sys.stdin)
rt = RhymeTagger()
rt.load_model(job["lang"], verbose=False)
fast = rt.fast_ipa
links, errors, slow = [], [], 0
t0 = time.perf_counter()
for k, lines in enumerate(job["stanzas"]):
    try:
        links.append(rt.tag(list(lines), output_format=1, fast_ipa=fast))
    except Exception:
        try:  # the one-call transcription lost a line separator: transcribe line by line
            links.append(rt.tag(list(lines), output_format=1, fast_ipa=False))
            slow += 1
        except Exception as e:
            links.append([[] for _ in lines])
            errors.append(f"stanza {k}: {type(e).__name__}: {e}")
dt = time.perf_counter() - t0
json.dump({"version": md.version("rhymetagger"), "seconds": dt, "links": links, "errors": errors,
           "slow": slow}, sys.stdout)
"""


def links_to_scheme(links: list[list[int]]) -> str:
    """First-appearance scheme from per-line link lists: connected components; unlinked lines stand alone."""
    parent = list(range(len(links)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, js in enumerate(links):
        for j in js:
            if 0 <= j < len(links):
                parent[find(i)] = find(j)
    return schemes.normalise_scheme([find(i) for i in range(len(links))])


def run_rhymetagger(python: str, lang: str, rows: list[dict],
                    normalise_de: bool = False) -> tuple[list[str], dict]:
    stanzas = [r["lines"] for r in rows]
    if normalise_de and lang == "de":
        stanzas = [[spelling.normalise_de(x) for x in st] for st in stanzas]
    job = json.dumps({"lang": lang, "stanzas": stanzas}, ensure_ascii=False)
    try:
        proc = subprocess.run([python, "-c", RT_WORKER], input=job, capture_output=True, text=True,
                              encoding="utf-8")
    except OSError as e:
        sys.exit(f"cannot run --rhymetagger interpreter {python}: {e}")
    if proc.returncode != 0:
        sys.exit(f"rhymetagger ({python}) failed with exit code {proc.returncode}:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout)
    preds = []
    for r, lk in zip(rows, out["links"]):
        p = links_to_scheme(lk)
        if len(p) != len(r["lines"]):
            sys.exit(f"rhymetagger returned {len(p)} labels for {len(r['lines'])} lines ({r['id']})")
        preds.append(p)
    for e in out["errors"][:5]:
        print(f"rhymetagger {lang}: {e}", file=sys.stderr)
    return preds, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lang", nargs="+", default=["en", "de"])
    ap.add_argument("--fit", action="store_true",
                    help="write the tables fitted on all of dev to the package's data file (or --fit-out)")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--prior-weight", type=float, default=None, help="override PRIOR_WEIGHT (fitted/cv rows)")
    ap.add_argument("--no-dist", action="store_true", help="fit/evaluate without the distance shift")
    ap.add_argument("--folds", type=int, default=5, help="folds of the cross-validation by poet")
    ap.add_argument("--by-poet", action="store_true",
                    help="also leave-one-poet-out and leave-one-period-out CV, figures per period and per poet")
    ap.add_argument("--context", default=None, metavar="STRONG,BOTH,ONE",
                    help="override schemes.CONTEXT (fitted/cv rows); 'off' switches the stanza context off")
    ap.add_argument("--nested-context", action="store_true",
                    help="also the CV with the stanza context chosen inside each fold (CONTEXT_GRID; minutes)")
    ap.add_argument("--poem-weight", type=float, default=None,
                    help="override schemes.POEM_VOTE in the cv +poem row (each poem's stanzas vote; 0 switches it "
                         "off); shipped+poem keeps the shipped weight")
    ap.add_argument("--nested-poem", action="store_true",
                    help="also the CV by poet with the poem vote's weight chosen inside each fold (POEM_GRID)")
    ap.add_argument("--errors", action="store_true",
                    help="the 4-line errors of the CV by poet (+poem), counted by class and by gold -> predicted "
                         "scheme, and the stanzas the vote fixed and broke")
    ap.add_argument("--fit-out", default=str(FIT_PATH), help="where --fit writes the tables (default: %(default)s)")
    ap.add_argument("--rhymetagger", metavar="PYTHON", default=None,
                    help="also run the peer tool rhymetagger with this interpreter (of a venv that has it)")
    ap.add_argument("--rhymetagger-normalise-de", action="store_true",
                    help="feed rhymetagger German lines after poeval.poetry.spelling.normalise_de (default: raw)")
    args = ap.parse_args()
    if args.fit and (sorted(args.lang) != sorted(spelling.LANGS) or args.limit or args.no_dist):
        sys.exit("--fit fits the tables of both languages on all of dev: use it without --lang, --limit, --no-dist")
    table = []
    by_poet = {}
    rt_info = {}
    fitted_tables = {}
    spreads, errors = {}, {}
    for lang in args.lang:
        rows = load(lang, args.limit)
        t0 = time.perf_counter()
        shipped = schemes.schemes([r["lines"] for r in rows], lang)
        dt = time.perf_counter() - t0
        t1 = time.perf_counter()
        shipped2 = schemes.schemes([r["lines"] for r in rows], lang)  # warm caches
        dt_warm = time.perf_counter() - t1
        assert shipped == shipped2
        for r in rows:
            r["_lev"] = rhyme.pair_levels(r["lines"], lang, detail=True)
        res = evaluate(rows, shipped)
        res.update(name="shipped", sps=len(rows) / dt, sps_warm=len(rows) / dt_warm)
        table.append((lang, res))
        link, non = count_levels(rows, lang)
        llr = fit_llr(link, non)
        pair_llr = fit_pair_llr(rows, lang, llr)
        bias = rhyme.LINK_BIAS[lang]
        weight = schemes.PRIOR_WEIGHT[lang] if args.prior_weight is None else args.prior_weight
        prior = schemes.scheme_prior(lang, weight, scheme_counts(rows)) if weight > 0 else None
        dist = fit_dist_bias(rows) if not args.no_dist else []
        fitted_tables[lang] = (llr, link, non, dist, dict(scheme_counts(rows).most_common()), pair_llr)
        ctx = schemes.CONTEXT[lang] if args.context is None else (
            None if args.context == "off" else tuple(float(x) for x in args.context.split(",")))
        devfit = predict(rows, {**llr, **pair_llr}, bias, prior, dist, ctx)
        res = evaluate(rows, devfit)
        res.update(name="dev-fit")
        table.append((lang, res))
        preds = cross_validate(rows, lang, args.folds, weight, bias, not args.no_dist, ctx)
        res = evaluate(rows, preds)
        res.update(name=f"cv{args.folds}-poet")
        table.append((lang, res))
        poem = schemes.POEM_VOTE[lang] if args.poem_weight is None else args.poem_weight
        keys = [poem_key(r) for r in rows]
        res = evaluate(rows, schemes.schemes([r["lines"] for r in rows], lang, poems=keys))
        res.update(name="shipped+poem")
        table.append((lang, res))
        preds_poem = cross_validate(rows, lang, args.folds, weight, bias, not args.no_dist, ctx, poem=poem)
        res = evaluate(rows, preds_poem)
        res.update(name=f"cv{args.folds}-poet+poem")
        table.append((lang, res))
        spreads[lang] = {f"cv{args.folds}-poet": poet_spread(rows, preds),
                         f"cv{args.folds}-poet+poem": poet_spread(rows, preds_poem)}
        if args.errors:
            errors[lang] = error_classes(rows, preds, preds_poem)
        if args.nested_poem:
            nested, chosen = nested_poem(rows, lang, args.folds, weight, bias, not args.no_dist, ctx)
            res = evaluate(rows, nested)
            res.update(name="nested-poem")
            table.append((lang, res))
            print(f"{lang} nested-poem: the folds chose {chosen}", file=sys.stderr)
        if args.nested_context:
            nested, chosen = nested_context(rows, lang, args.folds, weight, bias, not args.no_dist)
            res = evaluate(rows, nested)
            res.update(name="nested-ctx")
            table.append((lang, res))
            print(f"{lang} nested-ctx: the folds chose {chosen}", file=sys.stderr)
        if args.by_poet:
            lopo = cross_validate(rows, lang, 0, weight, bias, not args.no_dist, ctx, poet_out_folds(rows))
            lopero = cross_validate(rows, lang, 0, weight, bias, not args.no_dist, ctx, period_folds(rows, lang))
            for name, p in (("loo-poet", lopo), ("loo-period", lopero)):
                res = evaluate(rows, p)
                res.update(name=name)
                table.append((lang, res))
            by_poet[lang] = (per_poet(rows, lopo),
                             by_period(rows, {"dev-fit": devfit, f"cv{args.folds}": preds, "loo-poet": lopo,
                                              "loo-period": lopero}, lang),
                             {"loo-poet": poet_spread(rows, lopo), "loo-period": poet_spread(rows, lopero)})
        if args.rhymetagger:
            norm = args.rhymetagger_normalise_de and lang == "de"
            preds, out = run_rhymetagger(args.rhymetagger, lang, rows, norm)
            res = evaluate(rows, preds)
            res.update(name="rhymetagger" + ("+n" if norm else ""), sps=len(rows) / max(out["seconds"], 1e-9),
                       sps_warm=None)
            table.append((lang, res))
            rt_info[lang] = (out["version"], out["slow"], len(out["errors"]), norm)
    print(f"{'lang':4} {'setup':13} {'4-line acc':>10} {'n4':>5} {'all acc':>8} {'n':>5} {'pair P':>7} "
          f"{'pair R':>7} {'stanzas/s cold/warm':>20}")
    for lang, r in table:
        sps = ""
        if "sps" in r:
            sps = f"{r['sps']:.0f}/" + ("-" if r["sps_warm"] is None else f"{r['sps_warm']:.0f}")
        print(f"{lang:4} {r['name']:13} {100 * r['acc4']:9.1f}% {r['n4']:5d} {100 * r['acc_all']:7.1f}% "
              f"{r['n']:5d} {100 * r['P']:6.1f}% {100 * r['R']:6.1f}% {sps:>20}")
    for lang, spread in spreads.items():
        for k, (est, lo, hi) in spread.items():
            print(f"{lang} {k}: 4-line {100 * est:.2f} %, 90 % of poet resamples in [{100 * lo:.1f}, {100 * hi:.1f}]")
    for lang, (schemes_wrong, classes, moved) in errors.items():
        print(f"\n{lang} 4-line errors of cv{args.folds}-poet+poem ({sum(classes.values())}); the poem's vote "
              f"fixed {moved[0]} stanzas and broke {moved[1]}. By class:")
        for c, n in classes.most_common():
            print(f"  {n:4d}  {c}")
        print("gold -> predicted:")
        for (g, p), c in schemes_wrong.most_common():
            print(f"  {g} -> {p}  {c}")
    for lang, (rows_p, periods, spread) in by_poet.items():
        print(f"\n{lang} by period (century of the poets; 4-line exact / pair P / pair R):")
        for c, n4, res in periods:
            cells = "  ".join(f"{k} {100 * r['acc4']:5.1f} {100 * r['P']:5.1f} {100 * r['R']:5.1f}"
                              for k, r in res.items())
            print(f"  {c:>2}th  n4 {n4:5d}  {cells}")
        for k, (est, lo, hi) in spread.items():
            print(f"{lang} {k}: 4-line {100 * est:.1f} %, 90 % of poet resamples in [{100 * lo:.1f}, {100 * hi:.1f}]"
                  f" (a held-out 5 points lower, {100 * est - 5:.1f} %, is {'inside' if lo <= est - 0.05 else 'outside'})")
        print(f"\n{lang} leave-one-poet-out, 4-line exact per poet:")
        for author, n4, acc in rows_p:
            print(f"  {author:28} {n4:5d} {100 * acc:6.1f}%")
    for lang, (version, slow, n_err, norm) in rt_info.items():
        print(f"rhymetagger {version}, shipped '{lang}' model, default settings"
              f"{', input normalise_de (+n)' if norm else ''}; {slow} stanzas retagged with fast_ipa=False, "
              f"{n_err} failed (counted unrhymed)")
    if args.fit:
        for lang, (llr, link, non, _, _, pair_llr) in fitted_tables.items():
            print(f"\n{lang}: level  linked  not-linked  llr")
            for lev in rhyme.LEVELS:
                print(f"  {lev:18} {link[lev]:7d} {non[lev]:9d} {llr[lev]:7.3f}")
            flip = [k for k in pair_llr if (pair_llr[k] > 0) != (llr[k.split(" ", 1)[0]] > 0)]
            print(f"{lang}: pair table, {len(pair_llr)} keys; {len(flip)} link where their level does not, or "
                  "the other way round:")
            for key in sorted(flip, key=lambda k: -abs(pair_llr[k] - llr[k.split(" ", 1)[0]])):
                print(f"  {key:24} {pair_llr[key]:7.3f} (level {llr[key.split(' ', 1)[0]]:7.3f})")
        write_fit(args.fit_out, fitted_tables)
        print(f"\nwrote the fitted tables to {args.fit_out}")


if __name__ == "__main__":
    main()
