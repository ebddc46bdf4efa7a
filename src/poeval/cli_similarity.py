"""`poeval similarity cell|table|figure`: the similarity between rows (:mod:`poeval.metrics.similarity`), as
the workflow runs it (rules similarity_cell, similarity_table, similarity_figure), each with its rule's typed
job (:mod:`poeval.jobs.similarity`); by hand, :func:`poeval.metrics.similarity.compare` takes two sets of
quatrains and their embeddings directly. :mod:`poeval.cli` adds the command."""

from __future__ import annotations

from poeval.cli_args import io_paths, job_option
from poeval.errors import PoevalError
from poeval.stamps import numbered, write_stamp_file


def _need_job(args) -> None:
    if args.job is None:
        raise PoevalError(f"similarity {args.action}: give --job (the rule's; by hand, call "
                          "poeval.metrics.similarity.compare)")


def cmd_similarity_cell(args) -> None:
    from poeval.jobs import similarity as jobs

    _need_job(args)
    if (args.reference is None) != (args.embeddings is None):
        raise PoevalError("--reference and --embeddings go together (the training split and its cached embeddings)")
    jobs.run(args.job, args.a, args.b, args.reference, args.embeddings, args.out, args.threads)


def cmd_similarity_report(args) -> None:
    from poeval.report import similarity

    _need_job(args)
    if args.action == "figure":
        similarity.write_figure(args.cells, args.job.rows, args.out)
    else:
        similarity.write_table(args.cells, args.job.rows, args.out, args.ci_out)
    write_stamp_file(args.out, numbered(args.cells), args.job.recorded())


def parser_similarity(sub) -> None:
    p = sub.add_parser("similarity", help="similarity between rows: cells of every pair, table, heatmap (not in "
                                          "the paper)")
    ssub = p.add_subparsers(dest="action", required=True)
    p = ssub.add_parser("cell", help="(workflow) compare two rows' samples")
    p.add_argument("a", help="the first row's samples (JSONL)")
    p.add_argument("b", help="the second row's samples (JSONL)")
    job_option(p, "poeval.jobs.similarity.SimilarityCellJob (lang, a, b, baseline, ngram, seed, tokens, threshold, "
                  "autojunk, encoder, backend, batch_size, bootstrap_reps, bootstrap_seed)")
    p.add_argument("--reference", help="the training split, whose cached --embeddings give a HUMAN quatrain's")
    p.add_argument("--embeddings", help="the training split's cached embeddings (poeval embed)")
    p.add_argument("--threads", type=int, help="CPU threads of the encoder and the matcher")
    p.add_argument("--out", required=True, help="cell JSON")
    io_paths(p, ("--out",), ("a", "b", "--reference", "--embeddings"))
    p.set_defaults(func=cmd_similarity_cell)
    for action, what in (("table", "TSV"), ("figure", "PNG")):
        p = ssub.add_parser(action, help=f"(workflow) the similarity {action} from the cells")
        p.add_argument("cells", nargs="*", help="the cells, in table order")
        job_option(p, "poeval.jobs.similarity.SimilarityTableJob (rows)")
        p.add_argument("--out", required=True, help=f"{what} file")
        if action == "table":
            p.add_argument("--ci-out", help="long-form table of the intervals")
        io_paths(p, ("--out", "--ci-out") if action == "table" else ("--out",), ("cells",))
        p.set_defaults(func=cmd_similarity_report)
