"""The quatrains a transformer LM trains on: a split's records (with their style tokens when the model is
style-conditioned) and the text of each quatrain."""

from __future__ import annotations

import os

from poeval.errors import PoevalError
from poeval.generators.checkpoint import param_key, text_bounds
from poeval.io import read_jsonl
from poeval.poetry.style import METERS, SCHEMES, style_tokens


def read_split(
    path: str | os.PathLike, role: str, conditioned: bool = False, name: str | None = None
) -> tuple[list[list[str]], list[list[str]] | None]:
    """The quatrains of a split (each a list of verses) and, when ``conditioned``, each one's style tokens
    (:func:`style_tokens` of its ``scheme`` and ``meter`` fields), else None. ``role`` (train, dev) and
    ``name`` (the system) name the split and the params key in errors: a record without a ``lines`` list,
    a missing or unknown style field, an empty split."""
    out, styles = [], []
    for i, record in enumerate(read_jsonl(path)):
        lines = record.get("lines") if isinstance(record, dict) else None
        if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
            raise PoevalError(f"{path}: record {i + 1} has no 'lines' list of strings")
        out.append(lines)
        if conditioned:
            for field, allowed in (("scheme", SCHEMES), ("meter", METERS)):
                if field not in record:
                    raise PoevalError(
                        f"{path}: record {i + 1} has no '{field}' field, which style-conditioned training needs"
                        f" ({param_key(name, 'conditioned')} is true)"
                    )
                if record[field] not in allowed:
                    raise PoevalError(
                        f"{path}: record {i + 1}: '{field}' is {record[field]!r}, not one of {', '.join(allowed)}"
                    )
            styles.append(style_tokens(record["scheme"], record["meter"]))
    if not out:
        raise PoevalError(f"{role} split {path} contains no quatrains")
    return out, (styles if conditioned else None)


def read_quatrains(path: str | os.PathLike, role: str) -> list[list[str]]:
    return read_split(path, role)[0]


def quatrain_text(lines: list[str], bos: str, eos: str, style: list[str] | tuple[str, ...] = ()) -> str:
    """The training text of one quatrain (``style``: its style tokens, for conditioned models)."""
    return bos + "".join(style) + "\n".join(lines) + eos


def training_texts(tokenizer, quatrains: list[list[str]], styles: list[list[str]] | None = None) -> list[str]:
    """The texts a model is trained on: one per quatrain, with style tokens when ``styles`` is given."""
    styles = styles or [()] * len(quatrains)
    bos, eos = text_bounds(tokenizer)
    return [quatrain_text(q, bos, eos, st) for q, st in zip(quatrains, styles)]
