"""`poeval evaluate`: read a sample of poems and a reference, compute metric families, write one JSON.

The Snakemake metric cells call exactly this (through the CLI), so a researcher evaluating their own
samples gets the same numbers as the workflow's tables."""

from __future__ import annotations

import inspect
import json
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from poeval import config
from poeval.config import for_lang
from poeval.errors import PoevalError
from poeval.io import PoemSource, is_path, read_poems, source_name, write_json
from poeval.metrics import diversity, length, lexical, memorization, schemes, semantic, significance
from poeval.metrics import metre as metres
from poeval.metrics import topics
from poeval.poetry import espeak
from poeval.poetry import schemes as detector
from poeval.stamps import evaluation_stamp


def _lines(poems: list[dict]) -> list[list[str]]:
    return [p["lines"] for p in poems]


@dataclass
class Reference:
    """The reference (training) quatrains a sample is compared with; ``rows`` index them among the
    ``usable`` quatrains of ``path``, i.e. the rows of its cached embeddings."""

    path: str
    poems: list[dict]
    rows: np.ndarray
    usable: list[dict]
    skipped: dict[str, int]


# Each family adapter returns (result, resample): ``resample(idx)`` recomputes the family's scalars on
# the poems ``idx`` (drawn with replacement) from per-poem quantities computed once, with the same
# function as the point estimate, so bootstrap intervals need no second scan of the data.

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
                                  thresholds=opts, levels=levels, workers=opts.get("workers", -1),
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
    repeating = np.array([schemes.is_repeating_quatrain(p["lines"], s, lang, mode, int(reps))
                          for p, s, reps in zip(poems, labels, pairs[:, 1])], dtype=bool)

    def numbers(idx):
        counts = np.bincount(index[idx], minlength=len(schemes.SCHEMES_4)).astype(float)
        return schemes.from_counts(counts, human, int(pairs[idx, 0].sum()), int(pairs[idx, 1].sum()),
                                 int(repeating[idx].sum()), len(idx), smoothing)

    result = numbers(np.arange(len(poems))) | {"smoothing": smoothing, "repetition": mode,
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
    found = metres.labels(poems, lang, progress)
    human = metres.labels(ref.poems, lang, progress) if found is not None else None
    if found is None or human is None:
        return metres.unlabelled("the sample" if found is None else "the reference"), lambda idx: {}
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


def _diversity(poems, ref, opts):
    # the semantic family's encoder, backend and cached reference embeddings (SHARED_OPTIONS)
    sem, ref_emb, sample_emb = _cached_embeddings(poems, ref, opts["semantic"] | {"lang": opts["lang"],
                                                                                   "progress": opts.get("progress", False)})
    if sample_emb is None:
        sample_emb = _embed(_lines(poems), sem) if poems else np.zeros((0, 1), dtype=np.float32)
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


def _chi2_reference(index: np.ndarray, human: np.ndarray) -> dict | None:
    """The sample's scheme counts against the reference's, tested as they should be (the paper's
    ``chi2_test`` shuffles the training counts across schemes first: docs/paper-vs-poeval.md "poeval vs the paper's code");
    a permutation test's draws follow params ``metrics.tests`` defaults. None for an empty sample."""
    if not len(index):
        return None
    counts = np.bincount(index, minlength=len(schemes.SCHEMES_4))
    test = significance.chi2_homogeneity(counts, human, **config.defaults("#/properties/metrics/properties/tests"))
    return {key: test[key] for key in ("test", "statistic", "dof", "p")}


FAMILIES = {"length": _length, "lexical": _lexical, "memorization": _memorization, "rhyme": _rhyme,
            "semantic": _semantic, "metre": _metre, "topics": _topics, "diversity": _diversity}
# Families that also read another family's options (params metrics.<other>, runtime keys included):
# diversity embeds with the semantic family's encoder and reuses its cached reference embeddings.
SHARED_OPTIONS = {"diversity": ("semantic",)}


def bootstrap(resample, n: int, reps: int, seed: int, progress: bool = False) -> dict[str, list[float]]:
    """Percentile 95 % intervals of every scalar of ``resample`` over ``reps`` resamples of n poems."""
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = defaultdict(list)
    for _ in tqdm(range(reps), desc="bootstrap", disable=not progress, mininterval=1.0):
        for key, value in resample(rng.integers(0, n, n)).items():
            if isinstance(value, float):
                draws[key].append(value)
    return {key: [float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))] for key, v in sorted(draws.items())}


def load_reference(source: PoemSource, sample: list[dict] | None = None, sample_name: str = "<poems>") -> Reference:
    """The reference of a path or of in-memory poems (:func:`poeval.io.read_poems`), less the quatrains of
    ``sample`` (:func:`sample_rows`; ``sample_name`` names it in errors) unless None."""
    poems, skipped = read_poems(source, name="reference")
    name = source_name(source, "reference")
    gone = set() if sample is None else sample_rows(sample, poems, sample_name, name)
    rows = [i for i in range(len(poems)) if i not in gone]
    if not rows:
        raise PoevalError(f"{name}: no usable reference quatrains: all {len(poems)} usable ones are in the sample")
    return Reference(name, [poems[i] for i in rows], np.asarray(rows, dtype=np.int64), poems,
                     dict(sorted(skipped.items())))


def sample_rows(sample: list[dict], reference: list[dict], sample_name: str, reference_name: str) -> set[int]:
    """The rows of ``reference`` that hold the quatrains of ``sample`` (a HUMAN sample drawn from it), matched
    by their verses, since files without ids number both by position: one row per sample quatrain (the row of
    the sample's id where it holds those verses, else the first one left), so a copy at another row stays in
    the rest. A sample quatrain not left in the reference is an error: the sample was not drawn from it."""
    by_verses: dict[tuple, list[int]] = defaultdict(list)
    for i, p in enumerate(reference):
        by_verses[tuple(p["lines"])].append(i)
    rows: set[int] = set()
    for n, p in enumerate(sample, 1):
        free = [i for i in by_verses.get(tuple(p["lines"]), ()) if i not in rows]
        if not free:
            raise PoevalError(f"{sample_name}: poem {n} (id {p['id']!r}) is not a quatrain of the reference "
                              f"{reference_name}{' (or not as often)' if tuple(p['lines']) in by_verses else ''}; "
                              "excluding the sample from the reference (--exclude-sample-from-reference) needs a "
                              "sample drawn from it")
        rows.add(next((i for i in free if reference[i]["id"] == p["id"]), free[0]))
    return rows


# Option keys that name a cache built from the reference file (checked against that file's bytes), by
# family: --memorization-index, --reference-embeddings and --topic-model.
CACHE_OPTIONS = {"memorization": "index", "semantic": "reference_embeddings", "topics": "topic_model"}
# Option keys the CLI sets besides params metrics.<family>: the caches, and its --threads.
RUNTIME_OPTIONS = {family: {key} for family, key in CACHE_OPTIONS.items()}
RUNTIME_OPTIONS["memorization"].add("workers")


def family_options(family: str, given: dict) -> dict:
    """params ``metrics.<family>`` as given, checked and filled by the params schema (a misspelt key is
    named rather than ignored), plus the runtime keys of :data:`RUNTIME_OPTIONS`."""
    if family not in FAMILIES:
        raise PoevalError(f"options: unknown metric family {family!r} (available: {', '.join(FAMILIES)})")
    if not isinstance(given, dict):
        raise PoevalError(f"options.{family}: expected an object of options, got {given!r}")
    runtime = {key: given[key] for key in RUNTIME_OPTIONS.get(family, ()) if key in given}
    params = {key: value for key, value in given.items() if key not in runtime}
    return config.resolve_section(params, f"#/properties/metrics/properties/{family}", f"options.{family}") | runtime


def _check_caches(reference: PoemSource, resolved: dict) -> None:
    """A cache is checked against the bytes of the reference file it was built from: in-memory poems have none."""
    if is_path(reference):
        return
    for family, key in CACHE_OPTIONS.items():
        if resolved.get(family, {}).get(key):
            raise PoevalError(f"options.{family}.{key}: a cache of the reference needs the reference as a file, "
                              "not in-memory poems")


def evaluate(samples: PoemSource, reference: PoemSource, lang: str, families: list[str],
             options: dict | None = None, bootstrap_reps: int = 0, seed: int = 1, progress: bool = False,
             exclude_sample_from_reference: bool = False, allow_empty: bool = False) -> dict:
    """Metric families of ``samples`` against ``reference``, each a path or in-memory poems (anything
    :func:`poeval.io.read_poems` reads); ``options[family]`` overrides defaults.
    With ``bootstrap_reps`` > 0 each family also gets ``ci``: 95 % intervals from resampling poems.
    ``exclude_sample_from_reference`` drops the reference quatrains the sample was drawn from
    (:func:`sample_rows`, by verses): a HUMAN sample drawn from train is compared with the rest of train, not
    with itself. A sample without a usable quatrain is an error unless ``allow_empty`` (then every metric is
    null)."""
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise PoevalError(f"unknown metric family {', '.join(map(str, unknown))} (available: {', '.join(FAMILIES)})")
    resolved = {family: family_options(family, opts) for family, opts in (options or {}).items()}
    _check_caches(reference, resolved)
    poems, skipped = read_poems(samples, allow_empty=allow_empty)
    ref = load_reference(reference, poems if exclude_sample_from_reference else None, source_name(samples, "poems"))
    result = {"lang": lang, "samples": source_name(samples, "poems"), "reference": ref.path,
              "n_reference": len(ref.poems), "n_poems": len(poems), "skipped": dict(sorted(skipped.items())),
              "reference_skipped": ref.skipped}
    for family in families:
        opts = resolved.get(family) or family_options(family, {})
        opts = opts | {"progress": progress, "lang": lang} | {
            other: resolved.get(other) or family_options(other, {}) for other in SHARED_OPTIONS.get(family, ())}
        result[family], resample = FAMILIES[family](poems, ref, opts)
        if bootstrap_reps and poems:
            result[family]["ci"] = bootstrap(resample, len(poems), bootstrap_reps, seed, progress)
    return result


def write_evaluation(samples: str, reference: str, lang: str, families: list[str], out: str,
                     cell: dict | None = None, **kwargs) -> dict:
    """Evaluate and write atomically; ``cell`` (lang/system/decoding) labels a workflow table cell."""
    result = evaluate(samples, reference, lang, families, **kwargs)
    if cell:
        result["cell"] = cell
    used = inspect.signature(evaluate).bind(samples, reference, lang, families, **kwargs)
    used.apply_defaults()   # the stamp records what evaluate used, its own defaults included
    result["provenance"] = evaluation_stamp(samples, reference, families, used.arguments)  # poeval provenance reads it
    write_json(out, result)
    return result


def dumps(result: dict) -> str:
    return json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False)
