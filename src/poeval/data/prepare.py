"""The data stage in one call, for ``poeval prepare`` outside the workflow: the three steps the workflow's
rules run (quatrains, rhyme_labels, split), one after the other, with the same library functions, into one
directory laid out as the workflow's ``data/<lang>/`` (:mod:`poeval.paths`)."""

from __future__ import annotations

from pathlib import Path

from poeval import paths
from poeval.data.quatrains import Corpus, QuatrainRules, write_quatrains
from poeval.data.split import Human, Split, write_split
from poeval.poetry.annotate import write_annotated


def prepare(lang: str, corpus: Corpus, rules: QuatrainRules, split: Split, human: Human, out_dir: str | Path,
            *, path_key: str | None = None) -> dict:
    """Corpus -> deduplicated quatrains -> rhyme and metre labels -> train/dev split and human samples, from
    the params sections ``corpus.<lang>``, ``quatrains``, ``split`` and ``human``; returns
    ``{"corpus": report, "split": report}``. ``path_key`` names the corpus path in errors."""
    def at(path: str) -> str:   # the workflow's data/<lang>/... path, under out_dir
        return str(Path(out_dir) / Path(path).relative_to(Path(paths.DATA) / lang))

    corpus_report = write_quatrains(lang, corpus, rules, at(paths.quatrains(lang)), at(paths.corpus_report(lang)),
                                    path_key=path_key)
    write_annotated(at(paths.quatrains(lang)), lang, at(paths.labelled(lang)), meter=True)
    samples = [at(paths.human(lang, paths.human_id(i))) for i in range(human.n_samples)]
    split_report = write_split(at(paths.labelled(lang)), split, human, at(paths.train(lang)), at(paths.dev(lang)),
                               samples, at(paths.split_report(lang)))
    return {"corpus": corpus_report, "split": split_report}
