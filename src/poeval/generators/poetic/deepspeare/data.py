"""DeepSpeare's configuration and data (package docstring: :mod:`poeval.generators.poetic.deepspeare`):
the params, sizes and schema defaults; pseudo-sonnets and dev quatrains read into rows; the word, word-type
and character tables the three models read."""

from __future__ import annotations

import collections
import unicodedata
from typing import Any

import torch

from poeval import config
from poeval.errors import PoevalError
from poeval.generators.poetic import common
from poeval.generators.poetic.common import Vocab, end_word, tokenize
from poeval.io import read_jsonl
from poeval.poetry import style as _style

ARCH = "deepspeare"

# sizes: S fits the 2-core budget (a few minutes on 1,800 pseudo-sonnets); L has the original's dimensions
# (config.py). The language model reads each word's characters with the pentameter model's encoder, so
# pm_enc_dim also sizes the word's character features (2 x pm_enc_dim).
SIZES: dict[str, dict[str, Any]] = {
    "S": {"char_dim": 32, "enc_dim": 64, "dec_dim": 192, "attn_dim": 64,
          "pm_enc_dim": 32, "pm_dec_dim": 64, "pm_attn_dim": 32, "rm_dim": 64},
    "L": {"char_dim": 150, "enc_dim": 200, "dec_dim": 600, "attn_dim": 25,
          "pm_enc_dim": 50, "pm_dec_dim": 200, "pm_attn_dim": 50, "rm_dim": 100},
}

# Defaults come from the params schema ($defs/deepspeare_model; its training default is the port's own
# training block); the size-dependent dimensions above fill in what the size does not leave to the entry.
_SCHEMA_DEFAULTS = config.defaults("#/$defs/deepspeare_model")
TRAIN_DEFAULTS: dict[str, Any] = _SCHEMA_DEFAULTS.pop("training")
MODEL_DEFAULTS: dict[str, Any] = {**_SCHEMA_DEFAULTS, **SIZES["S"]}

_VOWELS = set("aeiouyæœø")
PAD_CHAR, UNK_CHAR, SPECIAL_CHAR = 0, 1, 2


# --- configuration


def _param(name: str | None, key: str) -> str:
    return f"models.{name}.{key}" if name else key


def resolve_model_cfg(model_cfg: dict, name: str | None = None) -> dict:
    """``model_cfg`` with the size's and the schema's defaults filled in, checked against the schema
    (unknown keys rejected) and its rules (:data:`poeval.config.RULES`); PoevalError names the key."""
    if not isinstance(model_cfg, dict):
        raise PoevalError(f"model config {_param(name, '')} must be a mapping")
    model_cfg = {k: v for k, v in model_cfg.items() if k != "training"}   # the caller merges it into train_cfg
    size = model_cfg.get("size", MODEL_DEFAULTS["size"])
    cfg = {**MODEL_DEFAULTS, **SIZES.get(size, {}), **model_cfg}
    config.check(cfg, "#/$defs/deepspeare_model", f"models.{name}" if name else "model")
    return cfg


def resolve_train_cfg(train_cfg: dict) -> dict:
    """``train_cfg`` over the port's training defaults (the schema's), checked against the schema; ``lr``
    is refused (each model has its own: ``lm_lr``, ``pm_lr``, ``rm_lr``)."""
    return common.train_cfg(TRAIN_DEFAULTS, train_cfg, rules="deepspeare_train")


# --- data


def row_order(verse: list[bool], line_order: str) -> list[int]:
    """The indices of a poem's rows in the order the language model reads them (``verse[i]``: row ``i`` is a
    verse, else a style row). ``top_down``: as written. ``bottom_up``: the whole poem reversed, as the
    original's ``load_data`` reverses a sonnet's lines (util.py), except that a style row still comes before
    the (up to four) verses it describes: it is the quatrain's prompt."""
    if line_order == "top_down":
        return list(range(len(verse)))
    blocks, i = [], 0
    while i < len(verse):
        if verse[i]:
            blocks.append([i])
            i += 1
            continue
        j = i + 1
        while j < len(verse) and j <= i + 4 and verse[j]:
            j += 1
        blocks.append([i, *range(j - 1, i, -1)])
        i = j
    return [r for block in reversed(blocks) for r in block]



def _fold(ch: str) -> str:
    base = unicodedata.normalize("NFD", ch)[:1]
    return base or ch


def is_vowel(ch: str) -> bool:
    """Vowel letters of the Latin alphabet, accents and umlauts included (``ä`` -> ``a``)."""
    return _fold(ch.lower()) in _VOWELS


def pm_text(verse: str, max_chars: int) -> str:
    """What the pentameter model reads, as the original's ``remove_punct`` (util.py) makes it: the verse
    lower-cased, letters and single spaces only; a character that is neither is dropped, so ``don't`` reads
    ``dont`` and ``well-known`` ``wellknown`` (a dash between spaces leaves one space)."""
    kept = "".join(ch for ch in verse.lower() if ch.isalpha() or ch.isspace())
    return " ".join(kept.split())[:max_chars]


def _style_of(record: dict, path, i: int, field_s: str, field_m: str, k: int | None, name: str | None) -> list[str]:
    scheme = record.get(field_s)
    meter = record.get(field_m)
    if k is not None:
        scheme = scheme[k] if isinstance(scheme, list) and len(scheme) > k else None
        meter = meter[k] if isinstance(meter, list) and len(meter) > k else None
    where = f"{path}: record {i + 1}"
    if scheme not in _style.SCHEMES or meter not in _style.METERS:
        raise PoevalError(f"{where} lacks a valid '{field_s}'/'{field_m}' (scheme one of the 15 four-line schemes, "
                          f"meter one of {', '.join(_style.METERS)}), which style-conditioned training needs "
                          f"({_param(name, 'conditioned')} is true)")
    return _style.style_tokens(scheme, meter)


def _lines_of(record, path, i: int) -> list[str]:
    lines = record.get("lines") if isinstance(record, dict) else None
    if not isinstance(lines, list) or not lines or not all(isinstance(x, str) for x in lines):
        raise PoevalError(f"{path}: record {i + 1} has no non-empty 'lines' list of strings")
    return lines


def read_sonnets(path, conditioned: bool, name: str | None = None) -> tuple[list[dict], collections.Counter]:
    """Each pseudo-sonnet as ``{"rows": [[tokens] ...], "verse": [bool ...], "quatrains": [[row index x4] ...]}``
    (rows in order; style rows precede each quatrain when ``conditioned``), and the counts of the
    quatrains' rhyme schemes (from the records' ``schemes``)."""
    sonnets, schemes = [], collections.Counter()
    for i, record in enumerate(read_jsonl(path)):
        lines = _lines_of(record, path, i)
        quatrains = record.get("quatrains")
        if isinstance(quatrains, list) and quatrains and all(isinstance(q, list) for q in quatrains):
            parts = [list(q) for q in quatrains]
            rest = record.get("couplet") if isinstance(record.get("couplet"), list) else []
        else:
            parts = [lines[j:j + 4] for j in range(0, len(lines) - len(lines) % 4, 4)]
            rest = lines[len(lines) - len(lines) % 4:]
        if not all(isinstance(x, str) for p in parts for x in p) or not all(isinstance(x, str) for x in rest):
            raise PoevalError(f"{path}: record {i + 1}: 'quatrains' / 'couplet' must hold strings")
        for s in record.get("schemes") or []:
            if s in _style.SCHEMES:
                schemes[s] += 1
        rows, verse, texts, quats = [], [], [], []
        for k, part in enumerate(parts):
            if conditioned:
                rows.append(_style_of(record, path, i, "schemes", "meters", k, name))
                verse.append(False)
                texts.append(None)
            start = len(rows)
            rows.extend(tokenize(x) for x in part)
            verse.extend([True] * len(part))
            texts.extend(part)
            if len(part) == 4:
                quats.append(list(range(start, start + 4)))
        rows.extend(tokenize(x) for x in rest)
        verse.extend([True] * len(rest))
        texts.extend(rest)
        sonnets.append({"rows": rows, "verse": verse, "quatrains": quats, "text": texts})
    if not sonnets:
        raise PoevalError(f"pseudo-sonnet file {path} contains no sonnets")
    return sonnets, schemes


def read_dev(path, conditioned: bool, limit: int, name: str | None = None) -> list[dict]:
    """Dev quatrains in the same form as :func:`read_sonnets` (each its own context)."""
    out = []
    for i, record in enumerate(read_jsonl(path)):
        if len(out) >= limit:
            break
        lines = _lines_of(record, path, i)
        rows, verse, texts = [], [], []
        if conditioned:
            rows.append(_style_of(record, path, i, "scheme", "meter", None, name))
            verse.append(False)
            texts.append(None)
        rows.extend(tokenize(x) for x in lines)
        verse.extend([True] * len(lines))
        texts.extend(lines)
        start = len(rows) - len(lines)
        quats = [list(range(start, start + 4))] if len(lines) == 4 else []
        out.append({"rows": rows, "verse": verse, "quatrains": quats, "text": texts})
    if not out:
        raise PoevalError(f"dev file {path} contains no quatrains")
    return out


class Tables:
    """Word vocabulary, word "types" (vocabulary words, then out-of-vocabulary strings, so that the
    character encoder sees an unknown word's real spelling) and the character vocabulary."""

    def __init__(self, vocab: Vocab, chars: list[str], max_word_chars: int, style: tuple[str, ...] = ()):
        self.vocab = vocab
        self.chars = list(chars)
        self.cstoi = {c: i for i, c in enumerate(self.chars)}
        self.max_word_chars = max_word_chars
        self.specials = set(vocab.itos[:5]) | set(style)
        self.types: list[str] = list(vocab.itos)
        self.tstoi: dict[str, int] = {w: i for i, w in enumerate(self.types)}

    @staticmethod
    def char_list(texts) -> list[str]:
        seen = set()
        for t in texts:
            seen.update(t.lower())
        return ["<pad>", "<unk>", "<special>", *sorted(seen)]

    def char_ids(self, text: str) -> list[int]:
        return [self.cstoi.get(c, UNK_CHAR) for c in text]

    def word_chars(self, token: str) -> list[int]:
        if token in self.specials:
            return [SPECIAL_CHAR]
        return self.char_ids(token.lower()[-self.max_word_chars:]) or [UNK_CHAR]

    def type_id(self, token: str, add: bool = True) -> int:
        tid = self.tstoi.get(token)
        if tid is None:
            if not add:
                return self.vocab.unk
            tid = self.tstoi[token] = len(self.types)
            self.types.append(token)
        return tid

    def type_tensors(self):
        """(n_types, max_word_chars) character ids and lengths of every type."""
        ids = [self.word_chars(t) for t in self.types]
        width = max(len(x) for x in ids)
        mat = torch.zeros(len(ids), width, dtype=torch.long)
        for i, x in enumerate(ids):
            mat[i, : len(x)] = torch.tensor(x)
        return mat, torch.tensor([len(x) for x in ids])


def _encode_poem(poem: dict, tables: Tables, cfg: dict, add_types: bool) -> dict:
    """Type ids per row (and which rows are verses), pentameter character ids per verse, end-word type ids per
    quatrain."""
    rows = [[tables.type_id(t, add_types) for t in row] for row in poem["rows"]]
    pm = []
    for text, is_verse in zip(poem["text"], poem["verse"]):
        if is_verse:
            s = pm_text(text, cfg["pm_max_chars"])
            if any(ch.isalpha() for ch in s):
                pm.append(tables.char_ids(s))
    ends = []
    for q in poem["quatrains"]:
        words = [end_word(poem["rows"][r]) for r in q]
        if all(words):
            ends.append([tables.type_id(w, add_types) for w in words])
    return {"rows": rows, "verse": list(poem["verse"]), "pm": pm, "ends": ends}
