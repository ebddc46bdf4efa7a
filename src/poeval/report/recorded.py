"""The params each stamped artifact records, as the workflow would pass them now (workflow/rules/*.smk;
a stage with a typed job, :mod:`poeval.jobs`: the job rebuilt by the rule's own builder):
what `poeval provenance` (:mod:`poeval.report.provenance`) and `poeval stale` (:mod:`poeval.report.stale`)
compare a stamp's recorded params with, and how (:func:`param_diffs`). A metric cell's are its typed job's
(:meth:`poeval.jobs.cell.CellJob.recorded`), rebuilt with the rule's own builder."""

from __future__ import annotations

from poeval.report.param_diff import dotted


def sample_params(config: dict, lang: str, system: str, decoding: str) -> dict:
    """What a samples file's stats record (:meth:`poeval.jobs.sample.SampleJob.stamp_params`): the job rule
    sample passes, rebuilt by its own builder (:func:`poeval.jobs.sample.sample_job`); a system or decoding
    config no longer in the params records nothing now."""
    from poeval.jobs.sample import sample_job

    if system not in config.get("models", {}) or decoding not in config.get("decoding", {}):
        return {"decoding": None, "sampling": None}
    return sample_job(config, lang, system, decoding).stamp_params()


def supplied_params(config: dict, system: str, lang: str, decoding: str) -> dict:
    """What the stats of an imported sample file record (:func:`poeval.stamps.supplied_stamp`; rule
    import_samples): the file's path as params give it."""
    from poeval.generators.supplied import sample_files

    return {"source": sample_files(config.get("models", {}).get(system) or {}, lang).get(decoding)}


def split_params(config: dict) -> dict:
    """What a split report records (rule split)."""
    return {"split": config.get("split"), "human": config.get("human")}


def corpus_params(config: dict, lang: str) -> dict:
    """What a corpus report records (rule quatrains)."""
    return {"corpus": config.get("corpus", {}).get(lang), "quatrains": config.get("quatrains")}


def training_params(config: dict, system: str, lang: str) -> dict:
    """What a checkpoint's training stamp records (:meth:`poeval.jobs.train.TrainJob.stamp_params`): the job
    rule train passes, rebuilt by its own builder (:func:`poeval.jobs.train.train_job`); a system no longer
    in the params records nothing now."""
    from poeval.jobs.train import train_job

    if system not in config.get("models", {}):
        return {"model": None, "training": None}
    return train_job(config, lang, system).stamp_params()


# --- what the steps without a stamp of their own record (:func:`poeval.stamps.write_stamp_file`, or a
# "provenance" key of their cache's JSON); ``resolved``: params with the schema's defaults filled in


def rhyme_label_params(lang: str) -> dict:
    """What rhyme labels record (rule rhyme_labels: `poeval rhyme --meter`, labels in ``scheme``)."""
    return {"lang": lang, "meter": True, "field": "scheme"}


def sonnets_params(config: dict) -> dict:
    """What the pseudo-sonnets' report records (rule pseudo_sonnets; the section resolved, as
    :func:`poeval.generators.poetic.sonnets.write_sonnets` records it): ``config`` resolved."""
    return {"sonnets": dotted(config, "poetic.sonnets")}


def word2vec_params(config: dict) -> dict:
    """What word2vec vectors record (rule word2vec)."""
    return {"word2vec": dotted(config, "poetic.word2vec"), "sonnets": dotted(config, "poetic.sonnets")}


def embeddings_params(resolved: dict, lang: str) -> dict:
    """What reference embeddings record (rule embed_reference)."""
    from poeval.config import for_lang

    semantic = resolved["metrics"]["semantic"]
    return {"encoder": for_lang(semantic["encoder"], lang), "batch_size": semantic["batch_size"],
            "backend": semantic["backend"]}


def topics_params(config: dict, lang: str) -> dict:
    """What a topic model records (rule topic_model)."""
    return {"lang": lang, "topics": config.get("metrics", {}).get("topics", {})}


def table_caption_metrics(resolved: dict, table: str) -> dict:
    """The ``metrics`` sections a family table's caption names switches of (its rule's ``params``): those of
    the families it reads and of its tests, so that a param of another family does not rerun it."""
    from poeval.report.tables import table_families

    metrics = resolved.get("metrics", {})
    return {name: metrics[name] for name in [*table_families(table), "tests"] if name in metrics}


def table_params(config: dict, table: str) -> dict:
    """What a table records (its rule): a family table its significance tests' params."""
    from poeval.report.tables import FAMILY_OF_TABLE

    return {"tests": config.get("metrics", {}).get("tests", {})} if table in FAMILY_OF_TABLE else {}


def figure_record(resolved: dict, figure: str) -> dict:
    """What a figure records (its rule): the systems' kinds, or its one system and panels."""
    from poeval.report import figures

    return figures.figure_params(*figures.figure_args(resolved, figure))


def adherence_cell_params(resolved: dict) -> dict:
    """What a style-adherence cell records (rule adherence_cell)."""
    return {"repetition": resolved["metrics"]["rhyme"]["repetition"]}


def adherence_table_params(resolved: dict) -> dict:
    """What the style-adherence table and figure record (rules style_adherence_table, _figure)."""
    return {"schemes": resolved["style_adherence"]["schemes"]}
