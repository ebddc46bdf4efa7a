"""Style vocabulary shared by the generators and the rhyme detector: the 15 rhyme schemes of a quatrain,
the metre families, and the special tokens that condition a model on them (``<scheme=abab>``,
``<meter=iambic>``)."""

from __future__ import annotations

import itertools
import re


def first_appearance(labels: str) -> str:
    """Relabel a scheme by first appearance: ``"baab"`` -> ``"abba"``."""
    seen: dict[str, str] = {}
    return "".join(seen.setdefault(c, "abcd"[len(seen)]) for c in labels)


# the 15 rhyme schemes of four verses (set partitions), labelled by first appearance, in lexicographic order
SCHEMES: tuple[str, ...] = tuple(
    s for s in ("".join(p) for p in itertools.product("abcd", repeat=4)) if first_appearance(s) == s
)
# metre families of the metre labeller (poetry.feet: alexandrine is German iambic hexameter) and of the style tokens
METERS: tuple[str, ...] = ("iambic", "trochaic", "anapaestic", "dactylic", "amphibrachic", "alexandrine", "other")
STYLE_TOKENS: tuple[str, ...] = tuple(f"<scheme={s}>" for s in SCHEMES) + tuple(f"<meter={m}>" for m in METERS)
STYLE_RE = re.compile(r"<(?:scheme|meter)=[^<>\s]*>")


def style_tokens(scheme: str, meter: str) -> list[str]:
    """The special tokens that condition a quatrain on its rhyme scheme and metre."""
    return [f"<scheme={scheme}>", f"<meter={meter}>"]


def strip_style(text: str) -> str:
    """Remove any style tokens from a decoded text."""
    return STYLE_RE.sub("", text)
