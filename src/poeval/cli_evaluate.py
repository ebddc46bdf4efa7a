"""`poeval evaluate`: the metric cells' command (:mod:`poeval.jobs.cell`), from the rule's ``--job`` or a
hand run's options; both build one :class:`poeval.jobs.cell.CellJob` and run it the same way."""

from __future__ import annotations

from poeval import config
from poeval.cli_args import (add_lang, bootstrap_reps_int, io_paths, job_option, json_object, name_path, pairs,
                             positive_int, seed_int)
from poeval.errors import PoevalError
from poeval.metrics.families import DEFAULT_FAMILIES


def _cell_label(text: str) -> dict:
    parts = text.split("/")
    if len(parts) != 3 or not all(parts):
        raise PoevalError(f"--cell {text!r}: expected LANG/SYSTEM/DECODING, e.g. en/gpt2-s/vanilla")
    return dict(zip(("lang", "system", "decoding"), parts))


# `poeval evaluate` options that a --job carries (jobs.cell.CellJob); without them, jobs.cell.given_job's defaults
JOB_ARGS = ("lang", "metrics", "options", "bootstrap_reps", "seed", "exclude_sample_from_reference", "cell",
            "allow_empty", "subsample", "subsample_seed", "n_curve")
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
    metrics = [f.strip() for f in given.pop("metrics", ",".join(DEFAULT_FAMILIES)).split(",") if f.strip()]
    if "cell" in given:
        given["cell"] = _cell_label(given["cell"])
    return given_job(metrics, given.pop("lang"), **given)


# how to build each reference cache once (``--cached NAME=PATH`` then reuses it)
CACHE_COMMANDS = {"embeddings": "poeval embed REFERENCE --out FILE.npy",
                  "memorization_index": "poeval index REFERENCE --out DIR",
                  "topic_model": "poeval topics REFERENCE --lang LANG --out DIR",
                  "creativity_index": "poeval creativity-index --lang LANG --format FORMAT [--input CORPUS] --out DIR"}


def _value(record: dict, key: str):
    for part in key.split("."):
        record = record.get(part) if isinstance(record, dict) else None
    return record


def summary(result: dict) -> str:
    """The headline numbers of a result, one per line, with their 95 % intervals where bootstrapped: each
    family's ``summary`` lines (its record's, :class:`poeval.metrics.present.Present`), in the order of
    :data:`poeval.metrics.families.FAMILIES`; the whole result is in --out."""
    from poeval.metrics.families import FAMILIES

    lines = [f"{result['n_poems']} poems ({result['lang']}) against {result['n_reference']} reference quatrains"]
    for family, record in FAMILIES.items():
        for column in record.present.summary if family in result and record.present else ():
            value, ci = _value(result[family], column.key), (result[family].get("ci") or {}).get(column.key)
            if not isinstance(value, (int, float)):
                lines.append(f"  {column.header:<38} {'-':>9}")
                continue
            scale, unit, digits = column.scale, " %" if column.percent else "", column.decimals
            interval = f"  [{ci[0] * scale:.{digits}f}, {ci[1] * scale:.{digits}f}]" if ci and None not in ci else ""
            lines.append(f"  {column.header:<38} {value * scale:>9.{digits}f}{unit}{interval}")
    return "\n".join(lines)


def _skipped_note(result: dict) -> str | None:
    skipped = result.get("skipped") or {}
    if not skipped:
        return None
    total = sum(skipped.values())
    reasons = ", ".join(f"{reason} {n}" for reason, n in sorted(skipped.items()))
    return (f"poeval evaluate: {total} of {total + result['n_poems']} poems skipped ({reasons}): a poem counts "
            "when it has 4 verses, each with a word")


def cache_hints(families, given: dict) -> list[str]:
    """For each reference cache the families built in this run: the command that builds it once."""
    from poeval.metrics.families import cached_inputs

    return [f"hint: {owner} built its {name} of the reference in this run; build it once with "
            f"`{CACHE_COMMANDS[name]}` and pass --cached {name}=PATH"
            for name, (owner, _) in cached_inputs(families).items() if name not in given]


def workflow_caches(job, reference: str, given: dict) -> dict[str, str]:
    """The workflow's caches (``results/…`` under the current folder) that fit this hand run: built from the
    reference's very bytes (same sha256) with the params the run would use, each checked by its family's
    own loader (:attr:`poeval.metrics.families.Cached.fits`); one line on stderr names each reused one."""
    import sys
    from pathlib import Path

    from poeval.metrics.evaluate import family_options
    from poeval.metrics.families import cached_inputs

    found = {}
    for name, (owner, cached) in cached_inputs(job.families).items():
        options = family_options(owner, job.options.get(owner) or {})
        path = cached.path(job.lang, options)
        if name in given or cached.fits is None or not Path(path).exists():
            continue
        try:
            cached.fits(path, reference, options | {"lang": job.lang})
        except PoevalError:   # another reference, encoder or params: this run builds its own
            continue
        found[name] = path
        print(f"poeval evaluate: reusing {path} ({name} of this very reference, same sha256 and params); "
              "--no-cache recomputes it", file=sys.stderr)
    return found


def cmd_evaluate(args) -> None:
    import sys

    from poeval.jobs.cell import run
    from poeval.metrics.evaluate import dumps

    if args.job and not args.out:
        raise PoevalError("evaluate --job writes its cell to --out: give --out")
    job = _evaluate_job(args)
    if job.n_curve is not None and not args.out:
        raise PoevalError("evaluate --n-curve writes the curve to --out: give --out")
    cached = {name: getattr(args, alias) for alias, name in CACHE_ALIASES.items() if getattr(args, alias)}
    cached |= pairs(args.cached)
    if args.job is None and not args.no_cache:   # a workflow cell reads only the caches its rule declares
        cached |= workflow_caches(job, args.reference, cached)
    result = run(job, args.samples, args.reference, args.out, cached, args.threads, progress=True)
    if job.n_curve is not None:
        return
    if args.job:   # the workflow's log holds the log, not the cell
        return
    for note in filter(None, [_skipped_note(result), *cache_hints(job.families, cached)]):
        print(note, file=sys.stderr)
    if not args.quiet:
        print(dumps(result) if args.json else summary(result))


def parser_evaluate(sub) -> None:
    p = sub.add_parser("evaluate", help="metrics of a sample of quatrains against a reference (training) set")
    p.add_argument("samples", help="JSONL ({'id','lines'} per line), plain text with blank lines between poems, "
                   "a folder written by Hugging Face Dataset.save_to_disk, or Parquet / CSV / TSV with a text column")
    p.add_argument("--reference", required=True, help="training quatrains (JSONL)")
    job_option(p, "poeval.jobs.cell.CellJob (families, lang, options, bootstrap, cell "
               "label...), instead of the options --lang to --allow-empty; the result then goes to --out only")
    add_lang(p)
    p.add_argument("--metrics", help=f"comma-separated metric families (default: {','.join(DEFAULT_FAMILIES)}, "
                        "the paper's; not in the paper: metre, topics, diversity, which embeds with the semantic "
                        "options); "
                        "rhyme takes a record's `scheme` field as given where present, else detects it")
    p.add_argument("--out", help="the whole result as JSON (a workflow cell; required with --job); without it a "
                   "hand run writes no file")
    p.add_argument("--options", type=json_object, help="per-family options as JSON, e.g. params metrics")
    p.add_argument("--cached", type=name_path, action="append", metavar="NAME=PATH",
                   help="a cache of the reference, repeatable: embeddings (`poeval embed`), memorization_index "
                        "(`poeval index`), topic_model (`poeval topics`; without it, the topics family trains one)")
    p.add_argument("--reference-embeddings", help="alias of --cached embeddings=PATH")
    p.add_argument("--memorization-index", help="alias of --cached memorization_index=PATH")
    p.add_argument("--topic-model", help="alias of --cached topic_model=PATH")
    p.add_argument("--no-cache", action="store_true",
                   help="compute every reference cache in this run; without it a hand run reuses the workflow's "
                        "cache under results/ when it was built from this reference (same sha256) with the same params")
    p.add_argument("--bootstrap-reps", type=bootstrap_reps_int, help="bootstrap resamples for 95%% intervals "
                   f"(default 0; at most {config.bootstrap_reps_range()[1]}, the params schema's bound)")
    p.add_argument("--seed", type=seed_int, help="bootstrap seed (default 1)")
    p.add_argument("--threads", type=positive_int, help="CPU threads (torch, rapidfuzz)")
    p.add_argument("--exclude-sample-from-reference", action="store_true",
                   help="compare with the reference minus the sample's own quatrains, matched by verses (a human "
                        "sample drawn from it); a sample quatrain not in the reference is an error")
    p.add_argument("--cell", help="LANG/SYSTEM/DECODING label of a workflow table cell")
    p.add_argument("--allow-empty", action="store_true",
                   help="a sample without a usable quatrain gives a cell of n_poems 0 and null metrics "
                        "instead of an error (the workflow: a model may write no valid quatrain)")
    p.add_argument("--subsample", type=positive_int, help="evaluate N quatrains of the sample, a seeded draw (the "
                   "common-n tables; default: all)")
    p.add_argument("--subsample-seed", type=seed_int, help="seed of the --subsample draw (default 1)")
    p.add_argument("--n-curve", type=json_object, metavar="JSON",
                   help="instead of one result, the n-sensitivity curve to --out: each measure on seeded subsamples "
                        "of each size (params tables.n_curve: sizes, draws, seed; defaults from the schema)")
    p.add_argument("--json", action="store_true", help="print the whole result (what --out holds) on stdout "
                   "instead of the headline numbers")
    p.add_argument("--quiet", action="store_true", help="print nothing on stdout")
    io_paths(p, ("--out",),
             ("samples", "--reference", "--cached=", "--reference-embeddings", "--memorization-index", "--topic-model"))
    p.set_defaults(func=cmd_evaluate)
