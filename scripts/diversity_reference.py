#!/usr/bin/env python3
"""Expected numbers of tests/unit/test_diversity.py from Shaib et al.'s package `diversity` (PyPI), which needs
transformers < 5 and so cannot share poeval's environment. Not run by the tests; run it in a venv of its own:

    python3 -m venv /tmp/venv-div && /tmp/venv-div/bin/pip install diversity spacy openai
    /tmp/venv-div/bin/python scripts/diversity_reference.py tests/fixtures/diversity_quatrains.jsonl

The package imports spacy and openai without requiring them, hence both in the install (version 0.3.1
gave the test's numbers). It prints, as JSON, the package's version and its numbers on the fixture's
quatrains (each quatrain: its verses stripped and joined with one space, as
poeval.metrics.semantic.quatrain_text), for the whole fixture and for its first 5 quatrains:
ngram_diversity_score (rounded to 3 digits by the package) with the distinct-n it sums (nltk.ngrams over
the package's tokens, as its code), compression_ratio (gzip; also the two sizes it prints with
verbose=True) and homogenization_score(..., 'rougel') over all pairs. Copy them into the test's EXPECTED."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from importlib.metadata import version

import nltk
from diversity import compression_ratio, homogenization_score, ngram_diversity_score


def distinct_n(texts: list[str], n: int) -> float:
    """One term of ngram_diversity_score, unrounded, with the package's own tokens (its code, inlined)."""
    words = " ".join(texts).split(" ")
    grams = list(nltk.ngrams(words, n))
    return len(set(grams)) / len(grams)


def compression_sizes(texts: list[str]) -> list[int]:
    """The original and compressed sizes that compression_ratio(verbose=True) prints (it rounds the ratio)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        compression_ratio(texts, "gzip", verbose=True)
    return [int(line.rsplit(" ", 1)[1]) for line in out.getvalue().splitlines()]


def numbers(texts: list[str]) -> dict:
    return {"ngram_diversity": ngram_diversity_score(texts, 4),
            "distinct": [distinct_n(texts, n) for n in range(1, 5)],
            "compression_ratio": compression_ratio(texts, "gzip"),
            "compression_sizes": compression_sizes(texts),
            "homogenization_rougel": homogenization_score(texts, "rougel", verbose=False)}


def main(path: str) -> None:
    with open(path, encoding="utf-8") as handle:
        texts = [" ".join(v.strip() for v in json.loads(line)["lines"]) for line in handle if line.strip()]
    print(json.dumps({"package": f"diversity {version('diversity')}", "all": numbers(texts),
                      "first5": numbers(texts[:5])}, indent=2))


if __name__ == "__main__":
    main(sys.argv[1])
