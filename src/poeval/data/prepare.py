"""The data stage in one call, for ``poeval prepare`` outside the workflow: the three steps the workflow's
rules run (quatrains, rhyme_labels, split), one after the other, with the same library functions, into one
directory laid out as the workflow's ``data/<lang>/`` (:mod:`poeval.paths`)."""

from __future__ import annotations

from pathlib import Path

from poeval import paths
from poeval.data.quatrains import write_quatrains
from poeval.data.split import write_split
from poeval.poetry.annotate import write_annotated


def prepare(lang: str, corpus_cfg: dict, quatrain_cfg: dict, split_cfg: dict, human_cfg: dict, out_dir: str | Path,
            *, path_key: str | None = None) -> dict:
    """Corpus -> deduplicated quatrains -> rhyme and metre labels -> train/dev split and human samples, from
    the params sections ``corpus.<lang>``, ``quatrains``, ``split`` and ``human`` (``human.n_samples``
    given); returns ``{"corpus": report, "split": report}``. ``path_key`` names the corpus path in errors."""
    def at(path: str) -> str:   # the workflow's data/<lang>/... path, under out_dir
        return str(Path(out_dir) / Path(path).relative_to(Path(paths.DATA) / lang))

    corpus = write_quatrains(lang, corpus_cfg, quatrain_cfg, at(paths.quatrains(lang)), at(paths.corpus_report(lang)),
                             path_key=path_key)
    write_annotated(at(paths.quatrains(lang)), lang, at(paths.labelled(lang)), meter=True)
    human = [at(paths.human(lang, paths.human_id(i))) for i in range(human_cfg["n_samples"])]
    split = write_split(at(paths.labelled(lang)), split_cfg, human_cfg, at(paths.train(lang)), at(paths.dev(lang)),
                        human, at(paths.split_report(lang)))
    return {"corpus": corpus, "split": split}
