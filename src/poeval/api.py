"""The notebook entry point: ``poeval.evaluate``, the Python face of ``poeval evaluate``.

It runs the very function the CLI runs (:func:`poeval.metrics.evaluate.evaluate`) on paths or on in-memory
poems, which pass the same reader and checks as files (:func:`poeval.poem_files.read_poems`), and returns what the
CLI writes, without its provenance stamp."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from poeval.errors import PoevalError
from poeval.metrics import evaluate as evaluation
from poeval.metrics.families import DEFAULT_FAMILIES
from poeval.poem_files import PoemSource


def evaluate(poems: PoemSource, *, reference: PoemSource, lang: str = "en",
             metrics: Sequence[str] = DEFAULT_FAMILIES, options: dict[str, dict[str, Any]] | None = None,
             bootstrap_reps: int = 0, seed: int = 1, progress: bool = False) -> dict[str, Any]:
    """Metric families of a sample of quatrains against a reference (training) set, as ``poeval evaluate``.

    Args:
        poems: the sample: a path (JSON lines, plain text with a blank line between poems, a folder
            written by Hugging Face ``Dataset.save_to_disk``, or Parquet / CSV / TSV with a ``text``
            column), or a list of poems, each a list of verse
            strings or a dict as a JSON-lines record holds it (``lines``, optional ``id`` and ``scheme``).
            Poems that are not 4 verses, each with a word, are skipped and counted under ``skipped``, as
            in a file.
        reference: the reference quatrains, a path or a list as ``poems``.
        lang: the language of both (``en``, ``de``).
        metrics: the metric families: ``length``, ``lexical``, ``memorization``, ``rhyme``, ``semantic``
            and, not in the paper, ``metre``, ``topics``, ``diversity``, ``distinct_k``, ``creativity`` and
            ``quality`` (:data:`poeval.metrics.families.FAMILIES`); by default those that need no model
            (:data:`poeval.metrics.families.DEFAULT_FAMILIES`, the default of ``poeval evaluate --metrics`` too).
        options: per-family options, the keys of params ``metrics.<family>`` (``poeval evaluate
            --options``); a cache of the reference (``memorization.index``, ``semantic.reference_embeddings``,
            ``topics.topic_model``) needs the reference as a file.
        bootstrap_reps: resamples of poems for each family's 95 % intervals (``ci``); 0 for none.
        seed: the bootstrap's seed.
        progress: show progress bars.

    Returns:
        The dict ``poeval evaluate`` writes, less its ``provenance`` stamp: plain JSON types (lists, floats,
        ints, None), each family's result under its name, besides ``n_poems``, ``skipped``,
        ``n_reference`` and ``reference_skipped``. In-memory inputs are named ``<poems>`` and
        ``<reference>`` under ``samples`` and ``reference``.

    Raises:
        PoevalError: an unknown family or option, an empty list, a poem that is not a list of strings, an
            id that occurs twice, or nothing usable (a one-line message naming the input).

    Examples:
        Two quatrains of 16 and 13 tokens, the first of them in the reference:

        >>> from poeval import evaluate
        >>> sun = ["The sun is warm,", "the sea is blue;", "I walk the shore", "and think of you."]
        >>> roses = ["Roses are red,", "violets are blue,", "sugar is sweet", "and so are you."]
        >>> night = ["The night is long,", "the stars are bright,", "we sing a song", "until the light."]
        >>> result = evaluate([sun, roses], reference=[sun, night], metrics=["length", "lexical", "memorization"])
        >>> result["n_poems"], result["length"]["per_poem"], result["length"]["mean"]
        (2, [16, 13], 14.5)

        Reference lengths 16 and 15: the sorted lengths differ by 2 and 0 tokens, and one of the two
        sample lengths has its one-token bin in the reference:

        >>> result["length"]["wasserstein"], result["length"]["hist_intersection"]
        (1.0, 0.5)

        13 of the sun's 16 tokens are distinct ("the" thrice, "is" twice), 11 of the roses' 13 ("are"
        thrice); ATTR is the mean of the two ratios:

        >>> result["lexical"]["per_poem"]["ttr"], round(result["lexical"]["attr"], 4)
        ([0.8125, 0.846154], 0.8293)
        >>> result["memorization"]["quatrain"]
        0.5
    """
    families = _families(metrics)
    result = evaluation.evaluate(poems, reference, lang, families, options=options,
                                 bootstrap_reps=bootstrap_reps, seed=seed, progress=progress)
    # the CLI's JSON as a dict: numpy scalars, tuples and non-string keys come back as json.dump writes them
    return json.loads(evaluation.dumps(result))


def _families(metrics: Sequence[str]) -> list[str]:
    """``metrics`` as a list of family names; a bare string is refused (it would read as one family per letter)."""
    if isinstance(metrics, str) or not isinstance(metrics, Sequence):
        raise PoevalError(f"metrics: expected a list of family names such as ['length', 'lexical'], "
                          f"got {metrics!r}")
    if not metrics:
        raise PoevalError("metrics: no metric family given")
    return list(metrics)

