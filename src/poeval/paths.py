"""Every artifact path of the workflow, relative to its working directory: the one definition of the layout.

The rules (workflow/rules/*.smk), the provenance checker and the BPoMP scorer references all read their
paths here. Each function returns a plain string with its arguments inserted verbatim, so passing the
wildcard names gives the Snakemake pattern: ``cell("{lang}", "{system}", "{decoding}", "{family}")``, or
:func:`pattern` for a function whose parameters are all wildcards (its parameter names are the rules'
wildcard names).
"""

from __future__ import annotations

import inspect
from typing import Callable

HUMAN = "HUMAN"          # system of the human reference cells
TRAIN = "train"          # decoding label of the HUMAN cell of the whole training set (the paper's HUMAN row)

# Top-level artifact directories (dvc.yaml's outputs).
DATA, MODELS, RESULTS, LOGS = "data", "models", "results", "logs"
SAMPLES, METRICS, EMBEDDINGS = f"{RESULTS}/samples", f"{RESULTS}/metrics", f"{RESULTS}/embeddings"
INDEX = f"{RESULTS}/index"
TOPICS = f"{RESULTS}/topics"
TABLES, FIGURES, CURVES = f"{RESULTS}/tables", f"{RESULTS}/figures", f"{RESULTS}/curves"
ADHERENCE, BPOMP = f"{RESULTS}/adherence", f"{RESULTS}/bpomp"
SIMILARITY = f"{RESULTS}/similarity"


def pattern(path: Callable[..., str]) -> str:
    """The Snakemake pattern of a path function: each parameter replaced by its ``{name}`` wildcard."""
    return path(*(f"{{{name}}}" for name in inspect.signature(path).parameters))


def stamp_file(output: str) -> str:
    """The provenance stamp beside an output that has no JSON of its own to hold one (a table, a figure,
    rhyme labels, word2vec vectors): ``<output>.stamp.json``."""
    return f"{output}.stamp.json"


def log(*parts: str) -> str:
    """A job's log: ``logs/<part>/.../<part>.log``."""
    return f"{LOGS}/{'/'.join(parts)}.log"


# --- data (rules/data.smk) -----------------------------------------------------------------------

def quatrains(lang: str) -> str:
    return f"{DATA}/{lang}/quatrains.jsonl"


def corpus_report(lang: str) -> str:
    return f"{DATA}/{lang}/corpus_report.json"


def labelled(lang: str) -> str:
    """The corpus' quatrains with their rhyme scheme and metre labels."""
    return f"{DATA}/{lang}/labelled.jsonl"


def train(lang: str) -> str:
    return f"{DATA}/{lang}/train.jsonl"


def dev(lang: str) -> str:
    return f"{DATA}/{lang}/dev.jsonl"


def human_id(k: int) -> str:
    """Name of the ``k``-th human reference sample (its cell's decoding label)."""
    return f"human{k}"


def human(lang: str, hid: str) -> str:
    return f"{DATA}/{lang}/human/{hid}.jsonl"


def split_report(lang: str) -> str:
    return f"{DATA}/{lang}/split_report.json"


def sonnets(lang: str) -> str:
    """Pseudo-sonnets of the train split (training data of the poetry-specific ports)."""
    return f"{DATA}/{lang}/sonnets.jsonl"


def dev_sonnets(lang: str) -> str:
    return f"{DATA}/{lang}/dev_sonnets.jsonl"


def sonnets_report(lang: str) -> str:
    return f"{DATA}/{lang}/sonnets_report.json"


def word2vec(lang: str) -> str:
    return f"{DATA}/{lang}/word2vec.txt"


# --- models and samples (rules/train.smk, sample.smk) --------------------------------------------

def model_dir(lang: str, system: str) -> str:
    """A generator's checkpoint directory."""
    return f"{MODELS}/{lang}/{system}"


def pretrained(release: str) -> str:
    """A pretrained model imported from a GGUF file (:mod:`poeval.generators.pretrained`), by short id."""
    return f"{MODELS}/pretrained/{release}"


def training_log(lang: str, system: str) -> str:
    return f"{model_dir(lang, system)}/training_log.json"


def samples(lang: str, system: str, decoding: str) -> str:
    return f"{SAMPLES}/{lang}/{system}/{decoding}.jsonl"


def stats(lang: str, system: str, decoding: str) -> str:
    """The side file of :func:`samples`: attempts, validity and the sampling stamp."""
    return f"{SAMPLES}/{lang}/{system}/{decoding}.stats.json"


# --- metric cells (rules/metrics.smk) ------------------------------------------------------------

def embeddings(lang: str) -> str:
    """Reference embeddings of the training split (semantic cells)."""
    return f"{EMBEDDINGS}/{lang}/train.npy"


def embeddings_meta(lang: str) -> str:
    return f"{embeddings(lang)}.json"


def memorization_index(lang: str) -> str:
    """Memorization index of the training split (memorization cells): a directory, one per language."""
    return f"{INDEX}/{lang}/train"


def creativity_index(lang: str) -> str:
    """Creativity index of the language's whole corpus (creativity cells): a directory, one per language."""
    return f"{INDEX}/{lang}/creativity"


def topic_model(lang: str) -> str:
    """LDA topic model of the training split (topics cells): a directory, one per language."""
    return f"{TOPICS}/{lang}"


def cell(lang: str, system: str, decoding: str, family: str) -> str:
    """One metric family of one sample; a HUMAN cell's decoding is its sample (``human<k>``, ``train``)."""
    return f"{METRICS}/{lang}/{system}/{decoding}/{family}.json"


def cell_at_n(lang: str, system: str, decoding: str, family: str, n: str) -> str:
    """The cell of a common-n table: ``family`` of ``n`` quatrains drawn from the sample (``tables.common_n``)."""
    return f"{METRICS}/{lang}/{system}/{decoding}/{family}.n{n}.json"


def n_curve(lang: str, family: str) -> str:
    """A family's measures on subsamples of n = 50 ... 1000 quatrains of a HUMAN sample (``tables.n_curve``)."""
    return f"{METRICS}/{lang}/n_curve/{family}.json"


def cell_samples(lang: str, system: str, decoding: str) -> str:
    """The samples a cell reads: the whole training set (HUMAN/train), a human reference sample
    (HUMAN/human<k>) or a model's samples under one decoding config."""
    if system == HUMAN:
        return train(lang) if decoding == TRAIN else human(lang, decoding)
    return samples(lang, system, decoding)


# --- tables, figures, curves (rules/tables.smk) --------------------------------------------------

def table(name: str) -> str:
    return f"{TABLES}/{name}.tsv"


def table_ci(name: str) -> str:
    """The long-form table of intervals next to a metric table."""
    return f"{TABLES}/{name}.ci.tsv"


def table_tests(name: str) -> str:
    """The significance tests of a family table's rows against HUMAN (poeval.report.table_tests)."""
    return f"{TABLES}/{name}_tests.tsv"


def figure(name: str) -> str:
    return f"{FIGURES}/{name}.png"


def curve(lang: str, system: str) -> str:
    """A checkpoint's training curve as a flat TSV (dvc.yaml ``plots``)."""
    return f"{CURVES}/{lang}/{system}.tsv"


# --- similarity between rows (rules/similarity.smk) ---------------------------------------------

def similarity_cell(lang: str, row_a: str, row_b: str) -> str:
    """The similarity of two rows of ``lang`` (HUMAN or a system), ``row_a`` first in table order."""
    return f"{SIMILARITY}/{lang}/{row_a}~{row_b}.json"


# --- style adherence (rules/adherence.smk) -------------------------------------------------------

def adherence_samples(lang: str, system: str, scheme: str) -> str:
    """A conditioned system's sample prompted with ``scheme``."""
    return f"{ADHERENCE}/{lang}/{system}/samples/{scheme}.jsonl"


def adherence_stats(lang: str, system: str, scheme: str) -> str:
    return f"{ADHERENCE}/{lang}/{system}/samples/{scheme}.stats.json"


def adherence_cell(lang: str, system: str, prompting: str) -> str:
    """``prompting``: prompted (one sample per scheme) or unprompted (the system's main sample)."""
    return f"{ADHERENCE}/{lang}/{system}/{prompting}.json"


# --- BPoMP (rules/bpomp.smk) ---------------------------------------------------------------------

def limericks() -> str:
    return f"{BPOMP}/limericks.jsonl"


def limericks_report() -> str:
    return f"{BPOMP}/limericks_report.json"


def bpomp_pairs(task: str) -> str:
    return f"{BPOMP}/pairs/{task}.jsonl"


def bpomp_pairs_report(task: str) -> str:
    return f"{BPOMP}/pairs/{task}.report.json"


def mlm_dir(lang: str, mlm: str) -> str:
    """A scratch masked LM of ``bpomp.mlm``: inside results/bpomp (the tables stage's output), apart from
    the generators."""
    return f"{BPOMP}/models/{lang}/{mlm}"


def bpomp_scores(scorer: str, task: str) -> str:
    return f"{BPOMP}/scores/{scorer}/{task}.jsonl"


def bpomp_score_stats(scorer: str, task: str) -> str:
    return f"{BPOMP}/scores/{scorer}/{task}.stats.json"


def bpomp_accuracy(scorer: str, task: str) -> str:
    return f"{BPOMP}/accuracy/{scorer}/{task}.json"


def bpomp_bigrams() -> str:
    return f"{BPOMP}/bigrams.json"


def bpomp_errors(scorer: str) -> str:
    return f"{BPOMP}/errors/{scorer}.json"
