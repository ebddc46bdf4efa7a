"""`poeval evaluate`: the metric cells' command (:mod:`poeval.jobs.cell`), from the rule's ``--job`` or a
hand run's options; both build one :class:`poeval.jobs.cell.CellJob` and run it the same way."""

from __future__ import annotations

from poeval.cli_args import (add_lang, io_paths, job_option, json_object, name_path, nonneg_int, pairs, positive_int,
                             seed_int)
from poeval.errors import PoevalError


def _cell_label(text: str) -> dict:
    parts = text.split("/")
    if len(parts) != 3 or not all(parts):
        raise PoevalError(f"--cell {text!r}: expected LANG/SYSTEM/DECODING, e.g. en/gpt2-s/vanilla")
    return dict(zip(("lang", "system", "decoding"), parts))


# `poeval evaluate` options that a --job carries (jobs.cell.CellJob); without them, jobs.cell.given_job's defaults
JOB_ARGS = ("lang", "metrics", "options", "bootstrap_reps", "seed", "exclude_sample_from_reference", "cell",
            "allow_empty")
DEFAULT_METRICS = "length,lexical,memorization,rhyme,semantic"
# the old cache options, kept for hand runs: aliases of --cached NAME=PATH
CACHE_ALIASES = {"reference_embeddings": "embeddings", "memorization_index": "memorization_index",
                 "topic_model": "topic_model"}


def _evaluate_job(args):
    """The metric-cell job: the rule's --job, or one built from a hand run's options (the same type)."""
    from poeval.jobs.cell import given_job

    given = {k: v for k in JOB_ARGS if (v := getattr(args, k)) is not None and v is not False}
    if args.job is not None:
        if given:
            raise PoevalError(f"evaluate: --job carries {', '.join('--' + k.replace('_', '-') for k in given)}; "
                              "give either --job or those options")
        return args.job
    if "lang" not in given:
        raise PoevalError("evaluate: --lang is required (or --job)")
    metrics = [f.strip() for f in given.pop("metrics", DEFAULT_METRICS).split(",") if f.strip()]
    if "cell" in given:
        given["cell"] = _cell_label(given["cell"])
    return given_job(metrics, given.pop("lang"), **given)


def cmd_evaluate(args) -> None:
    from poeval.jobs.cell import run
    from poeval.metrics.evaluate import dumps

    job = _evaluate_job(args)
    cached = {name: getattr(args, alias) for alias, name in CACHE_ALIASES.items() if getattr(args, alias)}
    result = run(job, args.samples, args.reference, args.out, cached | pairs(args.cached), args.threads, progress=True)
    if not (args.quiet or args.job):   # the workflow's log holds the log, not the cell
        print(dumps(result))


def parser_evaluate(sub) -> None:
    p = sub.add_parser("evaluate", help="metrics of a sample of quatrains against a reference (training) set")
    p.add_argument("samples", help="JSONL ({'id','lines'} per line) or plain text with blank lines between poems")
    p.add_argument("--reference", required=True, help="training quatrains (JSONL)")
    job_option(p, _cell_job_type, "poeval.jobs.cell.CellJob (families, lang, options, bootstrap, cell "
               "label...), instead of the options --lang to --allow-empty; the result then goes to --out only")
    add_lang(p)
    p.add_argument("--metrics", help=f"comma-separated metric families (default: {DEFAULT_METRICS}; not in "
                        "the paper: metre, topics, diversity, which embeds with the semantic options); "
                        "rhyme takes a record's `scheme` field as given where present, else detects it")
    p.add_argument("--out", required=True)
    p.add_argument("--options", type=json_object, help="per-family options as JSON, e.g. params metrics")
    p.add_argument("--cached", type=name_path, action="append", metavar="NAME=PATH",
                   help="a cache of the reference, repeatable: embeddings (`poeval embed`), memorization_index "
                        "(`poeval index`), topic_model (`poeval topics`; without it, the topics family trains one)")
    p.add_argument("--reference-embeddings", help="alias of --cached embeddings=PATH")
    p.add_argument("--memorization-index", help="alias of --cached memorization_index=PATH")
    p.add_argument("--topic-model", help="alias of --cached topic_model=PATH")
    p.add_argument("--bootstrap-reps", type=nonneg_int, help="bootstrap resamples for 95%% intervals (default 0)")
    p.add_argument("--seed", type=seed_int, help="bootstrap seed (default 1)")
    p.add_argument("--threads", type=positive_int, help="CPU threads (torch, rapidfuzz)")
    p.add_argument("--exclude-sample-from-reference", action="store_true",
                   help="compare with the reference minus the sample's own quatrains, matched by verses (a human "
                        "sample drawn from it); a sample quatrain not in the reference is an error")
    p.add_argument("--cell", help="LANG/SYSTEM/DECODING label of a workflow table cell")
    p.add_argument("--allow-empty", action="store_true",
                   help="a sample without a usable quatrain gives a cell of n_poems 0 and null metrics "
                        "instead of an error (the workflow: a model may write no valid quatrain)")
    p.add_argument("--quiet", action="store_true", help="do not print the result on stdout")
    io_paths(p, ("--out",),
             ("samples", "--reference", "--cached=", "--reference-embeddings", "--memorization-index", "--topic-model"))
    p.set_defaults(func=cmd_evaluate)


def _cell_job_type():
    from poeval.jobs.cell import CellJob

    return CellJob
