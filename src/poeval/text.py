"""Tokenisation shared by every metric: punctuation removed, whitespace split."""

from __future__ import annotations

import unicodedata


def strip_punctuation(text: str) -> str:
    """Delete every Unicode punctuation character (categories P*), keeping letters, digits and spaces."""
    return "".join(ch for ch in text if not unicodedata.category(ch).startswith("P"))


def tokens(text: str, lower: bool = False) -> list[str]:
    """Whitespace tokens after removing punctuation; tokens that were pure punctuation disappear."""
    text = strip_punctuation(text)
    return (text.lower() if lower else text).split()


def has_letter(text: str) -> bool:
    return any(ch.isalpha() for ch in text)
