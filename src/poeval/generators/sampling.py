"""The one "sample until n valid or max_attempts" loop shared by every generator.

A generator hands :func:`sample_loop` a callable that produces one batch of attempts; the loop seeds,
counts, applies the validity rule, shows the progress bar and writes the samples and their stats (with
the provenance stamp), so every architecture reports the same numbers under the same names.

Validity rule: an attempt gives a quatrain iff it ended (EOS, or the fourth verse's end marker) within
its token budget and has exactly four verses, each with a word. Failure reasons, the keys
of ``reasons`` in the stats:

* ``extra_verse``: a fifth verse began (the transformers stop such a row there: it cannot become a
  quatrain, and running it to the budget would hold up its whole batch);
* ``truncated``: the budget ran out before the end (the text is never written, never repaired);
* ``wrong_line_count:<k>``: it ended with k < 4 verses (an early EOS);
* ``empty_line``: a verse is empty or has no word (no letter: a verse of ``"``, ``--`` or ``1914`` is no
  verse). :func:`poeval.text.verse_problem` is the rule, the one evaluate's reader applies too, so that the
  metrics never drop a quatrain the sampler counted as valid;
* ``special_token``: a transformer emitted a special token other than its EOS (e.g. ``<|endoftext|>``
  where ``<|im_end|>`` ends a text); the row stops there.

Invalid attempts are dropped and generation goes on until ``n`` valid quatrains or ``max_attempts``
attempts; attempts are counted in order, up to the one that gives the n-th valid quatrain, so
``validity_rate = valid / attempts``. A sample of no valid quatrain is an error (:func:`no_quatrain`), under
either procedure, with the reasons counted: nothing is written. A sample with none yet is given up early, at
the end of a batch, once ``give_up_after`` attempts are made and :func:`out_of_reach` says ``n`` is.

The paper's procedure (params ``sampling.procedure: paper``; hgroener/diversity_in_poetry_generation,
``sampling/sample_generation_llm.py``, ``generate_quatrains``) is the other rule, for the transformer LMs:
``max_attempts`` generations are drawn in batches of ``batch_size`` (the paper: 500 batches of 10), each is
cut on blank lines into chunks, and every chunk of exactly four lines is kept, whatever ended the
generation (:func:`paper_keep`; :func:`paper_loop`). ``n`` plays no part there; ``validity_rate`` is then
kept chunks per generation and can exceed 1. The poetry ports keep this module's rule under either
procedure: the paper took the first 500 quatrains their scripts wrote, so ``config/scale/paper.yaml`` sets ``n``.
"""

from __future__ import annotations

import collections
import time
from dataclasses import dataclass, field
from typing import Callable

from poeval import config
from poeval.errors import PoevalError
from poeval.generators.decoding import Decoding
from poeval.io import write_json, write_jsonl
from poeval.stamps import sample_stamp
from poeval.text import verses_problem

N_VERSES = 4
# The paper's pipeline call: min_length=20 and max_length=150, each raised by the one-token prefix (transformers'
# TextGenerationPipeline adds the prefix's length to both), so EOS is barred for the first 20 new tokens.
PAPER_MIN_NEW_TOKENS = 20
REASONS = ("extra_verse", "truncated", "wrong_line_count:<k>", "empty_line", "special_token")
# the one-sided confidence of the early stop's bound (:func:`out_of_reach`): a model whose valid share could give
# n within max_attempts is given up by mistake in at most 5 % of samples
CONFIDENCE = 0.95
# what to change when no attempt is valid, by the commonest reason (its part before ':')
HINTS = {
    "truncated": "raise sampling.max_new_tokens (max_new_bytes for a byte-level model)",
    "extra_verse": "the model does not end a text after four verses: fine-tune it on quatrains (a training block)",
    "wrong_line_count": "the model ends a text before four verses: fine-tune it on quatrains (a training block)",
    "empty_line": "the model writes empty verses: fine-tune it on quatrains (a training block)",
    "special_token": "the model emits a special token other than its tokenizer's EOS: check the tokenizer's eos_token",
}


@dataclass
class Attempt:
    """One generation: its verses (as the generator split them) and whether it ended within budget.
    ``reason`` lets a generator report a failure it found itself (one of :data:`REASONS`); ``info`` holds
    per-attempt counts the generator tallies for its stats. After the loop has counted an attempt,
    ``reason`` is None iff it gave a valid quatrain."""

    verses: list[str]
    finished: bool
    reason: str | None = None
    info: dict = field(default_factory=dict)


def check_quatrain(verses: list[str], finished: bool) -> tuple[list[str] | None, str | None]:
    """``(stripped verses, None)`` for a valid quatrain, else ``(None, reason)``: the validity rule."""
    if len(verses) > N_VERSES:
        return None, "extra_verse"
    if not finished:
        return None, "truncated"
    lines = [verse.strip() for verse in verses]
    if len(lines) != N_VERSES:
        return None, f"wrong_line_count:{len(lines)}"
    if verses_problem(lines):
        return None, "empty_line"
    return lines, None


def distinct_share(records: list[dict]) -> float | None:
    """Share of distinct quatrains (the four verses joined) among the valid ones; None without any."""
    if not records:
        return None
    return len({"\n".join(r["lines"]) for r in records}) / len(records)


class NoQuatrain(PoevalError):
    """A sample without a valid quatrain (:func:`no_quatrain`); ``stats`` holds what its stats file would have
    held (None for a sample given up early), for a caller that diagnoses the model."""

    def __init__(self, message: str, stats: dict | None = None):
        super().__init__(message)
        self.stats = stats


def write_samples(records: list[dict], reasons: dict, attempts: int, n: int | None, out, stats, extra: dict,
                  where: str | None = None) -> dict:
    """Write the samples JSONL and its stats JSON (the counts every generator reports, then ``extra``). With
    ``where`` (the model), no record is :func:`no_quatrain`, and nothing is written."""
    result = {
        "attempts": attempts,
        "valid": len(records),
        "requested": n,
        "validity_rate": len(records) / attempts if attempts else 0.0,
        "distinct_share": distinct_share(records),
        "reasons": dict(sorted(reasons.items())),
        **extra,
    }
    if where is not None and not records:
        raise no_quatrain(where, attempts, reasons, stats=result)
    write_jsonl(out, records)
    write_json(stats, result)
    return result


def out_of_reach(attempts: int, n: int, max_attempts: int) -> bool:
    """Whether ``n`` valid quatrains are out of reach after ``attempts`` attempts without a valid one: even the
    one-sided :data:`CONFIDENCE` upper bound of the valid share that zero of ``attempts`` allows (the exact
    binomial bound, ``1 - (1 - CONFIDENCE) ** (1 / attempts)``, about ``3 / attempts``) gives fewer than ``n``
    expected in the ``max_attempts - attempts`` attempts left. A model whose share would give ``n`` in them
    shows no valid quatrain in that many attempts with probability under ``1 - CONFIDENCE``, however often
    this is asked, since a sample with a valid quatrain is never asked again."""
    share = 1.0 - (1.0 - CONFIDENCE) ** (1.0 / attempts)
    return share * (max_attempts - attempts) < n


def _counted(reasons: dict) -> str:
    return ", ".join(f"{reason} {count}" for reason, count in sorted(reasons.items(), key=lambda rc: (-rc[1], rc[0])))


def no_quatrain(where: str, attempts: int, reasons: dict, gave_up: str = "", stats: dict | None = None) -> NoQuatrain:
    """The error of a sample without a valid quatrain: the attempts, the reasons counted (commonest first), what
    ``gave_up`` early (else nothing) and what to change for the commonest reason (:data:`HINTS`); ``stats``: what
    the stats file would have held."""
    top = max(reasons.items(), key=lambda rc: (rc[1], rc[0]))[0].split(":")[0] if reasons else ""
    hint = HINTS.get(top, "see docs/own-generator.md \"Sizing the sampling\"")
    return NoQuatrain(f"{where}: 0 of {attempts} attempts gave a valid quatrain ({_counted(reasons) or 'no reason'})"
                      f"{gave_up}; {hint}", stats)


# The top-level params node: its defaults fill what a block leaves out, so a library call without
# params.yaml meets the same rules as the workflow (a system's own block only overrides some keys).
NODE = "#/properties/sampling"


def resolve(sampling: dict) -> dict:
    """The params ``sampling`` block a generator samples with (n, batch_size, max_new_tokens, optional
    max_new_bytes, max_attempts, seed): the schema's defaults under it, checked against the schema. Each
    generator's ``sample`` resolves its block once, with this, and reads every count from it."""
    return config.resolve_section(sampling, NODE, "sampling")


def sample_loop(generate: Callable[[int], list[Attempt]], out, stats, *, model_dir: str, decoding: Decoding,
                sampling: dict, id_prefix: str = "", progress: bool = True, desc: str = "sample",
                extra: Callable[[list[Attempt]], dict] | None = None, prompt: dict | None = None) -> dict:
    """Call ``generate(size)`` (one batch of ``size`` attempts) until ``n`` valid quatrains or
    ``max_attempts`` attempts, or until a sample with no valid quatrain yet is given up (:func:`out_of_reach`,
    from ``give_up_after`` attempts on); write JSONL + stats JSON and return the stats, or, without a valid
    quatrain, raise :func:`no_quatrain` and write nothing. The progress bar counts the valid quatrains and
    shows the attempts beside them. ``sampling`` is the block
    :func:`resolve` returned (its counts are not checked again); it goes into the provenance stamp. The
    global torch RNG is seeded with its ``seed`` first, so equal seed, batch_size and threads give equal
    samples. ``extra`` maps the counted attempts to generator-specific stats; ``prompt``: what a prompted
    generator was asked (:class:`poeval.generators.prompting.Prompt`), recorded in the stamp."""
    import torch
    from poeval.progress import progress_bar

    n, batch_size, max_attempts, seed = (sampling[k] for k in ("n", "batch_size", "max_attempts", "seed"))
    torch.manual_seed(seed)
    records: list[dict] = []
    reasons: collections.Counter = collections.Counter()
    counted: list[Attempt] = []
    t0 = time.perf_counter()
    bar = progress_bar(total=n, desc=desc, unit="quatrain", progress=progress, leave=False)
    try:
        while len(records) < n and len(counted) < max_attempts:
            for attempt in generate(min(batch_size, max_attempts - len(counted))):
                counted.append(attempt)
                lines, reason = check_quatrain(attempt.verses, attempt.finished)
                attempt.reason = attempt.reason or reason   # None: valid (``extra`` reads it)
                if attempt.reason is not None:
                    reasons[attempt.reason] += 1
                else:
                    records.append({"id": f"{id_prefix}{len(records):05d}", "lines": lines})
                    bar.update(1)
                if len(records) >= n:
                    break
            bar.set_postfix_str(f"{len(counted)} attempts", refresh=False)   # shown at the next redraw
            _give_up_check(records, counted, reasons, sampling, model_dir)
    finally:
        bar.close()
    return write_samples(records, reasons, len(counted), n, out, stats, {
        "decoding": decoding.to_dict(), "seed": seed, "batch_size": batch_size, "max_attempts": max_attempts,
        "elapsed_s": time.perf_counter() - t0, **(extra(counted) if extra else {}),
        "provenance": sample_stamp(model_dir, decoding.to_dict(), sampling, prompt)}, where=model_dir)


def _give_up_check(records: list, counted: list, reasons: dict, sampling: dict, where: str) -> None:
    """At the end of a batch: give a sample with no valid quatrain yet up (:func:`out_of_reach`)."""
    n, max_attempts, after = sampling["n"], sampling["max_attempts"], sampling["give_up_after"]
    attempts = len(counted)
    if records or attempts < after or attempts >= max_attempts or not out_of_reach(attempts, n, max_attempts):
        return
    raise no_quatrain(where, attempts, reasons, f": n = {n} is out of reach within sampling.max_attempts "
                      f"{max_attempts}, so the sample stops (sampling.give_up_after {after})")


# --------------------------------------------------------------------------------------------------
# the paper's procedure (params sampling.procedure: paper)


def paper_chunks(text: str) -> list[list[str]]:
    """The chunks of one generation as the paper's code cut them: split on blank lines (``"\\n\\n"``), each
    chunk split on newlines; nothing stripped, so a chunk may begin with an empty line."""
    return [chunk.split("\n") for chunk in text.split("\n\n")]


def _has_empty_line(chunk: list[str]) -> bool:
    return any(len(line) == 0 for line in chunk)   # the paper's test: a zero-length line, not a blank one


def paper_keep(chunks: list[list[str]]) -> list[list[str]]:
    """The chunks of one batch that the paper's code kept: those of exactly four lines, then a walk over them
    that removes a chunk with a zero-length line. Its loop removed from the list it was iterating over
    (``list.remove``, the first equal chunk), so the chunk that moved into the removed one's place was never
    looked at: after every removal the next chunk is kept unchecked, empty line or not. The walk below
    keeps that: index ``i`` advances after a removal as a list iterator's does."""
    kept = [chunk for chunk in chunks if len(chunk) == N_VERSES]
    i = 0
    while i < len(kept):
        if _has_empty_line(kept[i]):
            del kept[kept.index(kept[i])]   # list.remove: the first equal chunk, which may lie before i
        i += 1
    return kept


def _paper_tally(chunks: list[list[str]], kept: list[list[str]], reasons: collections.Counter) -> int:
    """Count one batch's dropped chunks under ``reasons``; return how many kept chunks have an empty line
    (the ones the removal loop skipped)."""
    for chunk in chunks:
        if len(chunk) != N_VERSES:
            reasons[f"chunk_lines:{len(chunk)}"] += 1
    reasons["empty_line"] += sum(len(chunk) == N_VERSES for chunk in chunks) - len(kept)
    return sum(_has_empty_line(chunk) for chunk in kept)


def paper_loop(generate: Callable[[int], list[tuple[str, bool]]], out, stats, *, model_dir: str, decoding: Decoding,
               sampling: dict, id_prefix: str = "", progress: bool = True, desc: str = "sample",
               extra: dict | None = None) -> dict:
    """The paper's procedure: call ``generate(size)`` (one batch: each generation's text and whether it
    ended with EOS) until ``max_attempts`` generations, keep every chunk :func:`paper_keep` keeps, batch by
    batch as the paper's loop did, and write JSONL + stats JSON as :func:`sample_loop` does. The records'
    lines are the chunk's lines as written (not stripped)."""
    import torch
    from poeval.progress import progress_bar

    batch_size, generations, seed = (sampling[k] for k in ("batch_size", "max_attempts", "seed"))
    torch.manual_seed(seed)
    records: list[dict] = []
    reasons: collections.Counter = collections.Counter()
    tally = collections.Counter()
    t0 = time.perf_counter()
    with progress_bar(total=generations, desc=desc, unit="generation", progress=progress, leave=False) as bar:
        for start in range(0, generations, batch_size):
            batch = generate(min(batch_size, generations - start))
            chunks = [chunk for text, _ in batch for chunk in paper_chunks(text)]
            kept = paper_keep(chunks)
            tally["chunks"] += len(chunks)
            tally["kept_with_empty_line"] += _paper_tally(chunks, kept, reasons)
            tally["ended_with_eos"] += sum(ended for _, ended in batch)
            records += [{"id": f"{id_prefix}{len(records) + k:05d}", "lines": chunk} for k, chunk in enumerate(kept)]
            bar.update(len(batch))
    return write_samples(records, {k: v for k, v in reasons.items() if v}, generations, None, out, stats, {
        "procedure": "paper", **dict(sorted(tally.items())), "decoding": decoding.to_dict(), "seed": seed,
        "batch_size": batch_size, "min_new_tokens": PAPER_MIN_NEW_TOKENS,
        "elapsed_s": time.perf_counter() - t0, **(extra or {}),
        "provenance": sample_stamp(model_dir, decoding.to_dict(), sampling)}, where=model_dir)
