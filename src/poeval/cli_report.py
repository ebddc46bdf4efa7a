"""`poeval table`, `poeval figure`, `poeval n-sensitivity` and `poeval adherence`: the report's commands. Each
takes its rule's typed job as ``--job`` (:mod:`poeval.report.table_jobs`, :mod:`poeval.jobs.adherence`) beside
its input and output paths, or by hand the options that build the same job; :mod:`poeval.cli` adds them."""

from __future__ import annotations

from poeval.cli_args import add_lang, io_paths, job_of, job_option, json_object, require_options
from poeval.errors import PoevalError
from poeval.report.tables import FAMILY_OF_TABLE
from poeval.stamps import numbered, write_stamp_file


def cmd_table(args) -> None:
    from poeval.jobs.base import parse
    from poeval.report import table_jobs

    if args.tests_out and args.name not in FAMILY_OF_TABLE:
        raise PoevalError(f"--tests-out: {args.name} is not a family table")
    if args.job is None:
        job, inputs = table_jobs.table_from_options(args.name, args.inputs, args.tests, args.tests_out)
    elif args.tests is not None:
        raise PoevalError("--job holds --tests: give it alone, not with --tests")
    else:
        job, inputs = parse(table_jobs.table_job_type(args.name), args.job), args.inputs
    table_jobs.write_table(args.name, job, inputs, args.out, args.ci_out, args.tests_out)


def _parser_table(sub) -> None:
    p = sub.add_parser("table", help="(workflow) assemble a table from its cells")
    p.add_argument("name", choices=["table1", "table4", "sampling", *FAMILY_OF_TABLE])
    p.add_argument("inputs", nargs="+", help="cell files, or with --job the files of its rows in order; by hand "
                                             "table1: LANG:SPLIT:PATH; table4: LANG:SYSTEM:MODEL_DIR; "
                                             "sampling: LANG:SYSTEM:DECODING:STATS_JSON")
    p.add_argument("--job", metavar="JSON", help="(workflow) the typed job its rule passes, as one JSON value: "
                   "poeval.report.table_jobs (table1: SizesTableJob, table4: ModelsTableJob, sampling: "
                   "SamplingTableJob, a family table: FamilyTableJob)")
    p.add_argument("--out", required=True)
    p.add_argument("--ci-out", help="long-form table of intervals and HUMAN spread")
    p.add_argument("--tests-out", help="family tables: significance tests of every row against HUMAN")
    p.add_argument("--tests", type=json_object,
                   help="by hand, without --job: params metrics.tests as JSON (permutations, seed; defaults from "
                        "the schema)")
    io_paths(p, ("--out", "--ci-out", "--tests-out"), ("inputs:",))
    p.set_defaults(func=cmd_table)


def cmd_n_sensitivity(args) -> None:
    from poeval.report import sample_size
    from poeval.report.table_jobs import NSensitivityJob

    job = args.job or NSensitivityJob()
    sample_size.n_sensitivity(args.inputs, args.out, args.figure)
    _stamp_table_and_figure(args, job)


def _stamp_table_and_figure(args, job) -> None:
    """The stamp beside ``--out`` and ``--figure`` (where given): the inputs and the job's params."""
    for out in (args.out, args.figure):
        if out:
            write_stamp_file(out, numbered(args.inputs), job.recorded())


def _parser_n_sensitivity(sub) -> None:
    p = sub.add_parser("n-sensitivity", help="(workflow) the n-sensitivity table and figure from the curves of "
                                             "`poeval evaluate --n-curve`")
    p.add_argument("inputs", nargs="+", help="curve JSON files, one per language and metric family")
    job_option(p, "poeval.report.table_jobs.NSensitivityJob (no fields: the curves hold everything)")
    p.add_argument("--out", required=True, help="TSV: each measure's mean, min and max over the draws per n")
    p.add_argument("--figure", help="PNG: one panel per pooled measure against n")
    io_paths(p, ("--out", "--figure"), ("inputs:",))
    p.set_defaults(func=cmd_n_sensitivity)


def cmd_frontier(args) -> None:
    from poeval import config
    from poeval.report import frontier
    from poeval.report.table_jobs import FrontierJob

    default = config.defaults("#/properties/metrics/properties/quality")["frontier_diversity"]
    job = args.job or FrontierJob(args.measure or default)
    frontier.frontier(args.inputs, job.measure, args.out, args.figure)
    _stamp_table_and_figure(args, job)


def _parser_frontier(sub) -> None:
    from poeval.report.frontier import MEASURES

    p = sub.add_parser("frontier", help="(workflow) the quality frontier of each system's decoding configs: "
                                        "diversity against quality, from quality and diversity cells")
    p.add_argument("inputs", nargs="+", help="the quality and diversity cells of every row")
    job_option(p, "poeval.report.table_jobs.FrontierJob (measure: the diversity measure on the x axis)")
    p.add_argument("--measure", choices=sorted(MEASURES), help="by hand, without --job: the diversity measure "
                                                              "(params metrics.quality.frontier_diversity)")
    p.add_argument("--out", required=True, help="TSV: each row's point and whether it is on its system's frontier")
    p.add_argument("--figure", help="PNG: fluency and the share that rhymes and scans against diversity")
    io_paths(p, ("--out", "--figure"), ("inputs:",))
    p.set_defaults(func=cmd_frontier)


def cmd_figure(args) -> None:
    from poeval.report import table_jobs

    job = job_of(args, ("models", "system", "lang", "decodings", "same_as"),
                 lambda: table_jobs.figure_from_options(args.models, args.system, args.lang, args.decodings or [],
                                                        args.same_as))
    table_jobs.draw_figure(args.name, job, args.inputs, args.out)


def _parser_figure(sub) -> None:
    from poeval.report.figures import FIGURES

    p = sub.add_parser("figure", help="(workflow) draw a figure from its cells")
    p.add_argument("name", choices=list(FIGURES))
    # none: a language-specific figure of a language not in the run still builds (a labelled empty panel)
    p.add_argument("inputs", nargs="*", help="cell files of the figure's metric family (figures.FIGURES)")
    job_option(p, "poeval.report.table_jobs.FigureJob (models, selection, same_as)")
    p.add_argument("--models", type=json_object,
                   help="by hand: JSON {system: {arch, conditioned}}, for the figures of one kind of system (5-9)")
    p.add_argument("--system", help="by hand: the one system of figures 10-15 (params figures.<name>.system)")
    add_lang(p, help="by hand: its language (params figures.<name>.lang)")
    p.add_argument("--decodings", nargs="*",
                   help="by hand: its panels' decoding configs, in order (none: every one it has cells of)")
    p.add_argument("--same-as", help="by hand: the earlier figure that this one repeats in the run: a note naming it "
                                     "instead")
    p.add_argument("--out", required=True, help="PNG file")
    io_paths(p, ("--out",), ("inputs",))
    p.set_defaults(func=cmd_figure)


def cmd_adherence_cell(args) -> None:
    from poeval.jobs import adherence as jobs
    from poeval.metrics import adherence

    def by_hand():
        require_options(args, "lang", "system")
        return jobs.cell_from_options(items, args.lang, args.system, args.repetition or adherence.DEFAULT_REPETITION)

    items = [] if args.job is not None else adherence.parse_items(args.samples, "PROMPT=SAMPLES")
    job = job_of(args, ("lang", "system", "repetition"), by_hand)
    files = [path for _, path in items] if items else args.samples
    if len(files) != len(job.prompts):
        raise PoevalError(f"adherence cell: the job names {len(job.prompts)} prompts but {len(files)} sample files "
                          "are given; give one per prompt")
    adherence.write_cell(dict(zip(job.prompts, files)), job.lang, job.system, args.out, job.repetition)
    write_stamp_file(args.out, numbered(files), job.recorded())


def cmd_adherence_table(args) -> None:
    from poeval.jobs import adherence as jobs
    from poeval.metrics import adherence

    def by_hand():
        require_options(args, "schemes")
        return jobs.StyleAdherenceJob(list(args.schemes))

    job = job_of(args, ("schemes",), by_hand)
    write = adherence.write_figure if args.action == "figure" else adherence.write_table
    items = adherence.parse_items(args.pairs, "CONDITIONED_CELL=BASELINE_CELL")
    write(items, job.schemes, args.out)
    write_stamp_file(args.out, numbered([path for item in items for path in item]), job.recorded())


def _parser_adherence(sub) -> None:
    from poeval.metrics.schemes import REPETITION_MODES

    p = sub.add_parser("adherence", help="style adherence of prompted conditioned models (cells, table, figure)")
    asub = p.add_subparsers(dest="action", required=True)
    p = asub.add_parser("cell", help="(workflow) label a system's samples, per prompt")
    p.add_argument("samples", nargs="+", help="the JSONL of each prompt of the job, in order; by hand PROMPT=SAMPLES "
                                              "items: a scheme (or none: unprompted) and its JSONL")
    job_option(p, "poeval.jobs.adherence.AdherenceCellJob (lang, system, prompts, repetition)")
    add_lang(p, help="by hand, without --job: the samples' language")
    p.add_argument("--system", help="by hand, without --job: the system the samples are of")
    p.add_argument("--repetition", choices=REPETITION_MODES,
                   help="by hand, without --job: what counts as a repetition (params metrics.rhyme.repetition)")
    p.add_argument("--out", required=True, help="cell JSON")
    io_paths(p, ("--out",), ("samples=",))
    p.set_defaults(func=cmd_adherence_cell)
    for action, what in (("table", "TSV"), ("figure", "PNG")):
        p = asub.add_parser(action, help=f"(workflow) the style adherence {action}")
        p.add_argument("pairs", nargs="*", help="CONDITIONED_CELL=BASELINE_CELL items, in row order")
        job_option(p, "poeval.jobs.adherence.StyleAdherenceJob (schemes)")
        p.add_argument("--schemes", nargs="+", help="by hand, without --job: the prompted schemes, in order")
        p.add_argument("--out", required=True, help=f"{what} file")
        io_paths(p, ("--out",), ("pairs=",))
        p.set_defaults(func=cmd_adherence_table)
