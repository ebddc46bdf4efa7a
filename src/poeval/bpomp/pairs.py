"""Minimal pairs from AABBA limericks: the original and a copy with one rhyme-breaking change.

Tasks (each pair records what changed in ``changed``):

* ``word_swap``: the line-final words of two rhyming lines trade places; everything else, trailing
  punctuation included, stays. ``changed = {"lines": [i, j], "words": [word_i, word_j]}``.
* ``line_swap``: two rhyming lines trade places. Each line's trailing punctuation (all that follows its end
  word, :func:`poeval.text.verse_end`: a line number or footnote mark too) stays at its
  position, so a moved line does not carry a sentence-final full stop into the middle of the
  limerick (a cue unrelated to rhyme). ``changed = {"lines": [i, j], "texts": [body_i, body_j]}``.
* ``synonym``: one line-final word becomes a WordNet synonym that neither rhymes with nor repeats the
  end words of that line's rhyme partners (see :mod:`.synonyms`), of the part of speech the word has
  in its line (``synonym_pos="context"``; ``"any"``: every reading) and, with ``synonym_choice=
  "context"`` (the paper's procedure), the candidate closest to the word in a contextual encoder
  (:mod:`.context`); ``first`` / ``random`` / ``mlm`` are the alternatives. ``changed = {"lines": [i], "words":
  [old, new], "pos", "synset", "lemma", "synonym_lemma"}``.

The rhyming line pairs are (1, 2), (1, 5), (2, 5) and (3, 4) (0-based below). Which pair or line is
tried first is drawn from ``random.Random(f"{seed}/{task}/{id}")``, so pairs are reproducible and do
not depend on the other limericks; if the first choice gives no pair (identical words or lines, no
usable synonym) the others are tried in the drawn order. A pair whose two texts are identical is
never emitted. Pair ids are ``<limerick id>/<task>``.
"""

from __future__ import annotations

import random
import re
from typing import Callable

from poeval import io, poem_files
from poeval.bpomp import synonyms as syn
from poeval.bpomp.context import NO_SYNONYM
from poeval.errors import PoevalError
from poeval.poetry.schemes import scheme
from poeval.text import end_word, verse_end

TASKS = ("word_swap", "line_swap", "synonym")
SYNONYM_CHOICES = ("context", "first", "random", "mlm")
SYNONYM_POS = ("context", "any")
RHYME_PAIRS = ((0, 1), (0, 4), (1, 4), (2, 3))
PARTNERS = {0: (1, 4), 1: (0, 4), 4: (0, 1), 2: (3,), 3: (2,)}
_TAIL = re.compile(r"[\W_]*$")


# --- line surgery --------------------------------------------------------------------------------

def end_word_span(line: str) -> tuple[int, int] | None:
    """Character span of the line's end word (:func:`poeval.text.verse_end`) in ``line`` (None when there
    is no end word); what follows the word (punctuation, quotes, a footnote mark, a line number) stays."""
    return verse_end(line).span


def replace_end_word(line: str, new: str) -> str:
    start, end = end_word_span(line)
    return line[:start] + new + line[end:]


def split_tail(line: str) -> tuple[str, str]:
    """``(body, tail)``: the body ends with the end word (:func:`poeval.text.verse_end`), the tail is what
    follows it (punctuation, spaces, and a line number, footnote mark, dash run, bracket or quote); a line
    without an end word is ``(text before its trailing punctuation and spaces, those)``."""
    span = verse_end(line).span
    if span is not None:
        return line[:span[1]], line[span[1]:]
    m = _TAIL.search(line)
    return line[: m.start()], line[m.start():]


# --- tasks ---------------------------------------------------------------------------------------

def _order(rng: random.Random, items) -> list:
    items = list(items)
    rng.shuffle(items)
    return items


def word_swap(lines: list[str], rng: random.Random, **_) -> tuple[list[str], dict] | str:
    spans = [end_word_span(line) for line in lines]
    for i, j in _order(rng, RHYME_PAIRS):
        if spans[i] is None or spans[j] is None:
            continue
        wi, wj = (lines[k][spans[k][0]:spans[k][1]] for k in (i, j))
        if wi.lower() == wj.lower():
            continue
        out = list(lines)
        out[i], out[j] = replace_end_word(lines[i], wj), replace_end_word(lines[j], wi)
        return out, {"lines": [i, j], "words": [wi, wj]}
    return "identical_words" if all(s is not None for s in spans) else "no_end_word"


def line_swap(lines: list[str], rng: random.Random, **_) -> tuple[list[str], dict] | str:
    parts = [split_tail(line) for line in lines]
    for i, j in _order(rng, RHYME_PAIRS):
        (bi, ti), (bj, tj) = parts[i], parts[j]
        if bi == bj:
            continue
        out = list(lines)
        out[i], out[j] = bj + ti, bi + tj
        return out, {"lines": [i, j], "texts": [bi, bj]}
    return "identical_lines"


def _pos_in_line(wn, line: str, word: str) -> str | None:
    from poeval.bpomp.context import end_word_pos

    return end_word_pos(line, {pos for pos, _ in syn.readings(wn, word.lower())})


def synonym(lines: list[str], rng: random.Random, *, wn, choose: Callable, tally: dict, pos_in_context: bool = True,
            **_) -> tuple[list[str], dict] | str:
    ends = [end_word(line) for line in lines]
    worst = -1
    for i in _order(rng, range(5)):
        pos = _pos_in_line(wn, lines[i], ends[i]) if pos_in_context and ends[i] else None
        if pos == NO_SYNONYM:
            worst = max(worst, syn.SKIP_STAGES.index("proper_or_function_word"))
            continue
        cands, stage = syn.candidates(wn, ends[i], [ends[p] for p in PARTNERS[i]], tally, pos)
        if not cands:
            worst = max(worst, syn.SKIP_STAGES.index(stage))
            continue
        c = choose(lines, i, cands, rng)
        out = list(lines)
        out[i] = replace_end_word(lines[i], c.form)
        old = lines[i][slice(*end_word_span(lines[i]))]
        return out, {"lines": [i], "words": [old, c.form], "pos": c.pos, "synset": c.synset,
                     "lemma": c.base, "synonym_lemma": c.lemma}
    return syn.SKIP_STAGES[worst]


_MAKERS = {"word_swap": word_swap, "line_swap": line_swap, "synonym": synonym}


# --- synonym choice ------------------------------------------------------------------------------

def _choose_first(lines, i, cands, rng):
    return cands[0]


def _choose_random(lines, i, cands, rng):
    return rng.choice(cands)


def context_chooser(encoder: str = "default", wn=None) -> Callable:
    """Choose the candidate whose word vector in the line is closest to the original word's
    (:func:`.context.closest`), among the preferred candidates (:func:`.context.preferred`)."""
    from poeval.bpomp import context

    model, tok = context.load(encoder)

    def choose(lines, i, cands, rng):
        common = context.preferred(wn, cands)
        line = lines[i]
        variants = []
        for c in common:
            new = replace_end_word(line, c.form)
            variants.append((new, end_word_span(new)))
        sims = context.closest(model, tok, line, end_word_span(line), variants)
        return common[max(range(len(common)), key=lambda k: (sims[k], -k))]

    return choose


def mlm_chooser(model, tokenizer, variant: str = "within_word_l2r", batch_size: int = 64) -> Callable:
    """Choose the candidate whose own tokens the masked LM finds most likely in the limerick (PLL of
    the candidate word's tokens only, the rest of the text is the same for all candidates)."""
    from poeval.bpomp.scoring import masked_scores

    def choose(lines, i, cands, rng):
        texts, spans = [], []
        offset = sum(len(line) + 1 for line in lines[:i])
        for c in cands:
            new = replace_end_word(lines[i], c.form)
            start = offset + end_word_span(new)[0]
            texts.append("\n".join(lines[:i] + [new] + lines[i + 1:]))
            spans.append((start, start + len(c.form)))
        scores = masked_scores(model, tokenizer, texts, variant=variant, batch_size=batch_size, spans=spans)
        return cands[max(range(len(cands)), key=lambda k: (scores[k], -k))]

    return choose


def _chooser(choice: str, model, encoder: str, wn, model_key: str) -> Callable:
    if choice not in SYNONYM_CHOICES:
        raise PoevalError(f"synonym_choice must be one of {', '.join(SYNONYM_CHOICES)}, got {choice!r}")
    if choice == "context":
        return context_chooser(encoder, wn)
    if choice == "first":
        return _choose_first
    if choice == "random":
        return _choose_random
    if model is None:
        raise PoevalError("synonym_choice 'mlm' needs a masked language model (a path or a (model, tokenizer) pair)")
    from poeval.bpomp.scoring import resolve_model

    return mlm_chooser(*resolve_model(model, "masked", model_key))


# --- driver --------------------------------------------------------------------------------------

def _check_record(rec, n: int) -> tuple[str, list[str]]:
    if not isinstance(rec, dict) or not isinstance(rec.get("lines"), list) \
            or not all(isinstance(x, str) for x in rec["lines"]) or rec.get("id") is None:
        raise PoevalError(f"limerick record {n}: expected an object with 'id' and 'lines' (a list of strings)")
    return str(rec["id"]), rec["lines"]


def make_pairs(limericks: list[dict], task: str, *, n: int | None = None, seed: int = 1,
               synonym_choice: str = "context", model=None, wordnet=None, check_scheme: bool = True,
               progress: bool = False, synonym_pos: str = "context",
               synonym_encoder: str = "default", where: str = "limericks",
               model_key: str = "model") -> tuple[list[dict], dict]:
    """Up to ``n`` pairs (None: all) for ``task``; returns ``(pairs, report)``. With ``n``, limericks are
    visited in a seeded order until ``n`` pairs exist; pairs come back in corpus order. Limericks that
    are not 5 lines or (``check_scheme``) not AABBA are skipped and counted; no pair at all is an error
    (``where`` names the input). Each limerick's corruption is seeded by its id, so ids must be unique.
    ``model_key`` names the parameter that gave ``model`` in errors (the workflow's:
    ``bpomp.pairs.synonym_model``)."""
    from poeval.progress import progress_bar

    if task not in TASKS:
        raise PoevalError(f"unknown BPoMP task {task!r}; use one of {', '.join(TASKS)}")
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 0):
        raise PoevalError(f"the number of pairs must be a non-negative integer or null, got {n!r}")
    records = [_check_record(rec, k) for k, rec in enumerate(limericks, 1)]
    poem_files.check_unique_ids((rid for rid, _ in records), where)
    extra: dict = {}
    tally: dict[str, int] = {}
    if synonym_pos not in SYNONYM_POS:
        raise PoevalError(f"synonym_pos must be one of {', '.join(SYNONYM_POS)}, got {synonym_pos!r}")
    if task == "synonym":
        from poeval.bpomp.wordnet import default

        wn = wordnet or default()
        extra = {"wn": wn, "choose": _chooser(synonym_choice, model, synonym_encoder, wn, model_key), "tally": tally,
                 "pos_in_context": synonym_pos == "context"}
    order = list(range(len(records)))
    if n is not None:
        random.Random(f"{seed}/{task}/order").shuffle(order)
    skipped: dict[str, int] = {}
    made: list[tuple[int, dict]] = []
    considered = 0
    for k in progress_bar(order, progress=progress, desc=task):
        if n is not None and len(made) >= n:
            break
        considered += 1
        rid, lines = records[k]
        result = _one_pair(rid, lines, task, seed, check_scheme, extra)
        if isinstance(result, str):
            skipped[result] = skipped.get(result, 0) + 1
        else:
            made.append((k, result))
    if not made and n != 0:
        raise io.nothing_usable(where, len(records), skipped, "limericks")
    made.sort(key=lambda t: t[0])
    report = {"task": task, "limericks": len(records), "considered": considered, "pairs": len(made),
              "skipped": dict(sorted(skipped.items())), "seed": seed}
    if task == "synonym":
        report["synonym_choice"] = synonym_choice
        report["synonym_pos"] = synonym_pos
        if synonym_choice == "context":
            report["synonym_encoder"] = synonym_encoder
        report["candidates_dropped"] = dict(sorted(tally.items()))
    return [p for _, p in made], report


def _one_pair(rid: str, lines: list[str], task: str, seed: int, check_scheme: bool, extra: dict) -> dict | str:
    if len(lines) != 5:
        return "not_5_lines"
    if check_scheme and scheme(lines, "en") != "aabba":
        return "not_aabba"
    rng = random.Random(f"{seed}/{task}/{rid}")
    result = _MAKERS[task](lines, rng, **extra)
    if isinstance(result, str):
        return result
    corrupted, changed = result
    if corrupted == lines:  # guard: a pair must differ
        return "identical_texts"
    return {"id": f"{rid}/{task}", "task": task, "original": list(lines), "corrupted": corrupted, "changed": changed}


def write_pairs(input_jsonl: str, task: str, out: str, n: int | None = None, seed: int = 1,
                synonym_choice: str = "context", model=None, report_out: str | None = None,
                progress: bool = True, synonym_pos: str = "context", synonym_encoder: str = "default",
                model_key: str = "model") -> dict:
    """Pairs for ``task`` from a limerick JSONL (:func:`.limericks.write_corpus` output) into ``out``."""
    pairs, report = make_pairs(list(io.read_jsonl(input_jsonl)), task, n=n, seed=seed,
                               synonym_choice=synonym_choice, model=model, progress=progress,
                               synonym_pos=synonym_pos, synonym_encoder=synonym_encoder, where=input_jsonl,
                               model_key=model_key)
    io.write_jsonl(out, pairs)
    if report_out:
        io.write_json(report_out, report)
    return report
