"""Generation (:func:`sample`): the endings model draws each quatrain's four end words (a conditioned
model first its scheme and metre tokens) under the decoding config's temperature, top-k and top-p; the
line LM then writes the verses from them, verse 4 first and each right to left, at temperature 1 without
top-k or top-p (the original's ``solvers_merged.py`` samples: ``GeneratorModel.forward(temperature=...)``,
then ``VanillaLM._sample`` on the reversed end words). The verses are turned back to left to right.

``sampling.procedure``: ``poeval`` (default) puts the verses in their order, verse 1 first; ``paper``
keeps the order in which the original writes them, verse 4 first: the original joins the written verses
with ``<eos>`` without restoring their order (``' <eos> '.join(... for line in quatrain_gen)``), and the
paper's wrapper (hgroener/diversity_in_poetry_generation, ``sampling/process_structured_adversary_sample.py``)
splits that string on ``<eos>`` as it is, so its SA quatrains read bottom up. Rhyme schemes of the
paper's kind are unchanged by that (aabb reads bbaa, abab baba, abba abba: the same pattern), but anything
that reads the verses in order (the first verse, the rhyme of verses 1 and 2) is not."""

from __future__ import annotations

from pathlib import Path

from poeval.errors import PoevalError
from poeval.generators.decoding import Decoding, ancestral_only, parse_decoding
from poeval.generators.interface import refuse_style
from poeval.generators.poetic import common
from poeval.generators.poetic.adversary import endings, linelm
from poeval.generators.poetic.adversary.settings import ARCH, SERIAL_THREADS
from poeval.generators.prompting import Prompt
from poeval.generators.sampling import Attempt, sample_loop
from poeval.generators.sampling import resolve as resolve_sampling


def load(model_dir: str | Path):
    """(line LM, endings model, vocab, config) of a checkpoint written by :func:`.training.train`."""
    if not Path(model_dir).is_dir():
        raise PoevalError(f"model directory not found: {model_dir}")
    arch, config, vocab, states = common.load_checkpoint(model_dir)
    if arch != ARCH:
        raise PoevalError(f"{model_dir} holds a {arch!r} model, not {ARCH!r}")
    if "endings" not in states:
        raise PoevalError(f"{model_dir} holds a Structured Adversary checkpoint of the earlier flat port (no "
                          "endings model); retrain it (poeval train) to sample the original's generator")
    cfg = config["model"]
    lm, ends = linelm.build(cfg, len(vocab)), endings.build(cfg, len(vocab))
    lm.load_state_dict(states["lm"])
    ends.load_state_dict(states["endings"])
    lm.eval()
    ends.eval()
    return lm, ends, vocab, config


def quatrain_texts(vocab, written: list[list[int]], procedure: str) -> list[str]:
    """The verses as text from the verses as written (verse 4 first, each right to left): each read left
    to right, in verse order (``poeval``) or in the order written (``paper``)."""
    texts = [common.detokenize(vocab[t] for t in reversed(v)) for v in written]
    return texts if procedure == "paper" else texts[::-1]


def generate(lm, ends, vocab, n: int, max_tokens: int, *, conditioned: bool, temperature: float = 1.0,
             top_p: float = 1.0, top_k: int = 0,
             banned: dict | None = None) -> tuple[list[list[list[int]]], list[bool]]:
    """``n`` quatrains at once: the end words (decoding config), then the verses (temperature 1); ``banned``
    as :func:`.endings.sample`'s."""
    import torch

    slots = endings.style_slots(vocab, conditioned)
    ids = endings.sample(ends, vocab, n, slots=slots, temperature=temperature, top_p=top_p, top_k=top_k,
                         banned=banned)
    prefix = torch.cat([torch.full((n, 1), vocab.bos, dtype=torch.long), ids[:, :len(slots)]], 1)
    return linelm.write(lm, vocab, prefix, ids[:, len(slots):], max_tokens)


def ban_stats(banned: dict) -> dict:
    """The endings model's mean probability per end-word draw on the ids it may not draw
    (:func:`.endings.banned_mass`): all of them, and those the original would draw (package docstring,
    "Remaining differences from the original")."""
    draws = banned["draws"]
    return {"endings_draws": draws,
            "endings_banned_mass": banned["mass"] / draws if draws else None,
            "endings_banned_mass_beyond_original": banned["mass_beyond_original"] / draws if draws else None}


def sample(model_dir: str, decoding: Decoding | dict, sampling: dict, out: str, stats: str, *,
           threads: int = 1, id_prefix: str = "", progress: bool = True, style: str | None = None,
           prompt: Prompt | None = None) -> dict:
    """Sample until ``n`` valid quatrains or ``max_attempts`` generations; write JSONL + stats JSON
    (:func:`poeval.generators.sampling.sample_loop`, which holds the validity rule and failure reasons).

    ``sampling`` is a params ``sampling`` block (:func:`poeval.generators.sampling.resolve`); its
    ``max_new_tokens`` bounds the line LM's tokens of the four verses together (separators included),
    ``max_new_bytes`` (byte-level models only) does not apply, and ``procedure`` sets the verse order
    (module docstring). Deterministic for equal seed, batch_size, threads."""
    import torch

    refuse_style(model_dir, style, prompt)
    decoding = ancestral_only(parse_decoding(decoding), ARCH)
    sampling = resolve_sampling(sampling)
    max_tokens, procedure = sampling["max_new_tokens"], sampling["procedure"]
    torch.set_num_threads(min(int(threads), SERIAL_THREADS))   # see SERIAL_THREADS
    lm, ends, vocab, config = load(model_dir)
    conditioned = bool(config["model"]["conditioned"])
    banned = endings.ban_tally()

    def batch(size: int) -> list[Attempt]:
        verses, done = generate(lm, ends, vocab, size, max_tokens, conditioned=conditioned,
                                temperature=decoding.temperature, top_p=decoding.top_p, top_k=decoding.top_k,
                                banned=banned)
        return [Attempt(quatrain_texts(vocab, v, procedure), d) for v, d in zip(verses, done)]

    def extra(counted: list[Attempt]) -> dict:
        return {"max_new_tokens": max_tokens, "arch": ARCH, "conditioned": conditioned,
                "decoding_applies_to": "endings model (the line LM samples at temperature 1, unfiltered)",
                "verse_order": "as written (verse 4 first)" if procedure == "paper" else "verse 1 first",
                "threads": int(threads), "threads_used": torch.get_num_threads(), **ban_stats(banned)}

    return sample_loop(batch, out, stats, model_dir=model_dir, decoding=decoding, sampling=sampling,
                       id_prefix=id_prefix, progress=progress, desc="sa: sample", extra=extra)
