"""Metre benchmark on the metre gold (`resources/gold/metre_{en,de}.jsonl`, resources/gold/README.md).

Per language, the verse-level metre family of :mod:`poeval.poetry.feet` against the gold's:

* ``cv-poet``: cross-validation by poet on the dev part (``--folds``, default 5; no poet in two folds): the
  constants are fitted on the other folds' poets and the fold's verses labelled with them; the honest
  figure. Per fold: verse accuracy (the spread over folds) and each family's recall (its verses labelled
  right); pooled: accuracy, per-family precision and recall, and quatrain accuracy (stanzas of 4 verses,
  the gold family the majority of its verses', ties left out; predicted by
  :func:`poeval.poetry.feet.stanza_metre`).
* ``today`` (English): the labeller the workflow used before issue 42 (CMUdict stress templates at every foot
  offset, :func:`today_metre`, as ``poeval.poetry.metre.metre`` was) on the same verses, quatrains and folds;
  it had no German.
* ``test``: the shipped constants (``poeval/poetry/data/metre_fit.json``) on the test part, whose poets dev
  does not have.
* ``--dlk N`` (German): agreement with DLK's automatic ``measure`` family on the verses of the first N
  4-verse stanzas of ``../shared/data/de/dlk_poems.jsonl.gz`` (a weaker reference: DLK's labels are a
  tagger's).

``--fit`` fits the constants on all of dev and writes them, with the command, commit, date and the gold's
sha256, to ``poeval/poetry/data/metre_fit.json`` (or ``--fit-out``).

    .venv/bin/python benchmarks/bench_metre.py [--lang en de] [--folds 5] [--fit [--fit-out F]] [--dlk 2000]

Takes about 5 s for English and 30 s for German with ``--dlk 2000`` (espeak-ng and CMUdict lookups are cached
per word).
"""

from __future__ import annotations

import argparse
import collections
import functools
import hashlib
import json
import re
import subprocess
import sys
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from poeval import files, io  # noqa: E402
from poeval.poetry import feet  # noqa: E402
from poeval.poetry.spelling import clean_word, en_candidates  # noqa: E402

GOLD = ROOT / "resources" / "gold"
FIT_PATH = ROOT / "src" / "poeval" / "poetry" / "data" / "metre_fit.json"
DLK = ROOT.parent / "shared" / "data" / "de" / "dlk_poems.jsonl.gz"


# --- the labeller before issue 42 (poeval.poetry.metre.metre up to ecc1360), kept as the baseline ---

_UNITS = {"iambic": "01", "trochaic": "10", "anapaestic": "001", "dactylic": "100", "amphibrachic": "010"}


@functools.lru_cache(maxsize=200_000)
def _today_word_stress(tok: str) -> str:
    """CMUdict stresses of a word (1, 0; x: secondary, one syllable, or not in CMUdict)."""
    import pronouncing

    w = clean_word(tok, "en").strip("'")
    if not w:
        return ""
    for cand in en_candidates(w):
        prons = pronouncing.phones_for_word(cand)
        if prons:
            st = pronouncing.stresses(prons[0]).replace("2", "x")
            return "x" if len(st) == 1 else st
    return "x" * max(1, len(re.findall(r"[aeiouy]+", w.rstrip("e")) or ["a"]))


def _today_fit(stress: str, unit: str) -> tuple[int, int]:
    """(hits, known syllables) of the best offset of ``unit`` over a verse's stresses."""
    best = (0, 0)
    for off in range(len(unit)):
        known = [s for s in stress if s != "x"]
        idx = [k for k, s in enumerate(stress) if s != "x"]
        hit = sum(s == unit[(k + off) % len(unit)] for s, k in zip(known, idx))
        if known and (hit / len(known), len(known)) > (best[0] / max(best[1], 1), best[1]):
            best = (hit, len(known))
    return best


def today_metre(lines: list[str], threshold: float = 0.8) -> str:
    """The English template matcher: the foot (at any offset) that fits most known stresses, binary on ties,
    ``other`` under ``threshold``."""
    scores = {}
    for name, unit in _UNITS.items():
        fits = [_today_fit("".join(_today_word_stress(t) for t in re.findall(r"[A-Za-z']+", line)), unit)
                for line in lines]
        known = sum(t for _, t in fits)
        scores[name] = sum(h for h, _ in fits) / known if known else 0.0
    name = max(_UNITS, key=lambda k: (round(scores[k], 6), -len(_UNITS[k])))
    return name if scores[name] >= threshold else "other"


def dlk_family(measure: str | None) -> str:
    """The family of a DLK ``measure`` (``iambic.tetra``, ``alexandrine.iambic.hexa``, ...)."""
    m = (measure or "").lower()
    for key, family in (("alexandrin", "alexandrine"), ("iamb", "iambic"), ("troch", "trochaic"),
                        ("anap", "anapaestic"), ("dactyl", "dactylic"), ("hexameter", "dactylic"),
                        ("amphibr", "amphibrachic")):
        if key in m:
            return family
    return "other"


# --- the benchmark ------------------------------------------------------------------------------

def load(lang: str, split: str) -> list[dict]:
    rows = [r for r in io.read_jsonl(GOLD / f"metre_{lang}.jsonl") if r["split"] == split]
    for r in rows:
        r["codes"] = feet.codes_of(r["text"], lang)
    return rows


def poet_folds(rows: list[dict], k: int) -> dict[str, int]:
    """Poets dealt to the fold with the fewest verses so far, in the order of their name's sha256."""
    lines = collections.Counter(r["poet"] for r in rows)
    size, fold = [0] * k, {}
    for poet in sorted(lines, key=lambda p: hashlib.sha256(p.encode()).hexdigest()):
        fold[poet] = min(range(k), key=lambda i: (size[i], i))
        size[fold[poet]] += lines[poet]
    return fold


def stanzas(rows: list[dict]) -> dict[str, list[dict]]:
    """The 4-verse stanzas whose gold family is a clear majority of their verses'."""
    by = collections.defaultdict(list)
    for r in rows:
        by[r["stanza"]].append(r)
    out = {}
    for sid, verses in by.items():
        top = collections.Counter(v["label"] for v in verses).most_common(2)
        if len(verses) == 4 and (len(top) == 1 or top[0][1] > top[1][1]):
            out[sid] = verses
    return out


def _majority(verses: list[dict]) -> str:
    return collections.Counter(v["label"] for v in verses).most_common(1)[0][0]


def scores(gold: list[str], pred: list[str]) -> dict:
    per = {}
    for family in feet.LABELS:
        n, npred = gold.count(family), pred.count(family)
        tp = sum(g == p == family for g, p in zip(gold, pred))
        if n or npred:
            per[family] = {"n": n, "predicted": npred, "precision": tp / npred if npred else None,
                           "recall": tp / n if n else None}
    return {"n": len(gold), "accuracy": sum(g == p for g, p in zip(gold, pred)) / max(len(gold), 1), "families": per}


def by_fold(rows: list[dict], pred: list[str], fold: dict, k: int) -> dict:
    """Verse accuracy per fold, and per family its recall (verse accuracy on the family's gold verses) per
    fold (None where the fold has none of it)."""
    def acc(keep) -> float | None:
        hits = [p == r["label"] for r, p in zip(rows, pred) if keep(r)]
        return sum(hits) / len(hits) if hits else None

    return {"folds": [acc(lambda r, i=i: fold[r["poet"]] == i) for i in range(k)],
            "fold_recall": {f: [acc(lambda r, i=i, f=f: fold[r["poet"]] == i and r["label"] == f) for i in range(k)]
                            for f in feet.LABELS if any(r["label"] == f for r in rows)}}


def cross_validate(rows: list[dict], lang: str, k: int) -> dict:
    fold = poet_folds(rows, k)
    pred, consts = {}, {}
    for i in range(k):
        train = [r for r in rows if fold[r["poet"]] != i]
        test = [r for r in rows if fold[r["poet"]] == i]
        consts[i] = {lang: feet.fit([r["codes"] for r in train], [r["label"] for r in train], lang)}
        labels = feet.Candidates([r["codes"] for r in test], lang).labels(consts[i][lang])
        pred.update((r["id"], p) for r, p in zip(test, labels))
    gold = [r["label"] for r in rows]
    out = scores(gold, [pred[r["id"]] for r in rows]) | by_fold(rows, [pred[r["id"]] for r in rows], fold, k)
    quat = stanzas(rows)
    right = sum(feet.stanza_metre([v["text"] for v in vs], lang, consts[fold[vs[0]["poet"]]]) == _majority(vs)
                for vs in quat.values())
    out["quatrains"] = {"n": len(quat), "accuracy": right / max(len(quat), 1)}
    return out


def _labelled(rows: list[dict], line_label, stanza_label, fold: dict | None = None, k: int = 0) -> dict:
    """Scores of a labeller (per verse and per quatrain), and per fold when ``fold`` maps poets to folds."""
    pred = [line_label(r) for r in rows]
    out = scores([r["label"] for r in rows], pred) | (by_fold(rows, pred, fold, k) if fold else {})
    quat = stanzas(rows)
    right = sum(stanza_label([v["text"] for v in vs]) == _majority(vs) for vs in quat.values())
    out["quatrains"] = {"n": len(quat), "accuracy": right / max(len(quat), 1)}
    return out


def today(rows: list[dict], fold: dict | None = None, k: int = 0) -> dict:
    """The labeller before issue 42, on the same verses, quatrains and folds."""
    return _labelled(rows, lambda r: today_metre([r["text"]]), today_metre, fold, k)


def shipped_on(rows: list[dict], lang: str) -> dict:
    return _labelled(rows, lambda r: feet.line_metre(r["text"], lang), lambda lines: feet.stanza_metre(lines, lang))


def dlk_agreement(n_stanzas: int) -> dict:
    """Agreement with DLK's measure family on the verses of the first ``n_stanzas`` 4-verse stanzas."""
    gold, pred = [], []
    for poem in io.read_jsonl(DLK):
        for stanza in poem["stanzas"]:
            if len(stanza) != 4:
                continue
            for line in stanza:
                gold.append(dlk_family(line["measure"]))
                pred.append(feet.line_metre(line["text"], "de"))
            if len(gold) >= 4 * n_stanzas:
                return scores(gold, pred)
    return scores(gold, pred)


def write_fit(path: Path, fitted: dict) -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    meta = {"command": "python benchmarks/bench_metre.py --fit", "commit": commit, "date": date.today().isoformat(),
            "gold": {lang: {"file": f"resources/gold/metre_{lang}.jsonl",
                            "sha256": files.file_sha256(GOLD / f"metre_{lang}.jsonl"), "part": "dev"} for lang in fitted}}
    path.write_text(json.dumps({"_meta": meta, **fitted}, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def _fmt(x) -> str:
    return "  -  " if x is None else f"{100 * x:5.1f}"


def report(name: str, res: dict) -> None:
    folds = res.get("folds")
    spread = f"  folds {min(folds) * 100:.1f}-{max(folds) * 100:.1f}" if folds else ""
    quat = res.get("quatrains")
    qtext = f"  quatrains {quat['accuracy'] * 100:.1f} % of {quat['n']}" if quat else ""
    print(f"  {name:8s} verses {res['accuracy'] * 100:5.1f} % of {res['n']}{spread}{qtext}")
    for family, s in res["families"].items():
        recall = res.get("fold_recall", {}).get(family)
        by = "  R by fold " + " ".join(_fmt(x) for x in recall) if recall else ""
        print(f"    {family:13s} n {s['n']:5d}  predicted {s['predicted']:5d}  P {_fmt(s['precision'])}"
              f"  R {_fmt(s['recall'])}{by}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lang", nargs="+", default=["en", "de"])
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--fit", action="store_true", help="fit on all of dev and write the constants")
    ap.add_argument("--fit-out", default=str(FIT_PATH))
    ap.add_argument("--dlk", type=int, default=0, metavar="N", help="German: agreement with DLK on N stanzas")
    args = ap.parse_args()
    fitted = {}
    for lang in args.lang:
        dev = load(lang, "dev")
        print(f"{lang}: dev {len(dev)} verses of {len({r['poet'] for r in dev})} poets")
        report("cv-poet", cross_validate(dev, lang, args.folds))
        if lang == "en":
            report("today", today(dev, poet_folds(dev, args.folds), args.folds))
        if args.fit:
            fitted[lang] = feet.fit([r["codes"] for r in dev], [r["label"] for r in dev], lang)
        else:
            test = load(lang, "test")
            print(f"{lang}: test {len(test)} verses of {len({r['poet'] for r in test})} poets")
            report("test", shipped_on(test, lang))
            if lang == "en":
                report("today", today(test))
        if lang == "de" and args.dlk:
            report("dlk", dlk_agreement(args.dlk))
    if args.fit:
        write_fit(Path(args.fit_out), fitted)
        print(f"wrote {args.fit_out}")


if __name__ == "__main__":
    main()
