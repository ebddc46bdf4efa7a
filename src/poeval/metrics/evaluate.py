"""`poeval evaluate`: read a sample of poems and a reference, compute metric families, write one JSON.

The Snakemake metric cells call exactly this (through the CLI and their typed job, :mod:`poeval.jobs.cell`),
so a researcher evaluating their own samples gets the same numbers as the workflow's tables. What each family
computes and reads is its record in :mod:`poeval.metrics.families`."""

from __future__ import annotations

import functools
import json
import sys
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from poeval.progress import progress_bar

from poeval import config
from poeval.errors import PoevalError, quote
from poeval.io import write_json
from poeval.poem_files import PoemSource, is_path, read_poems, source_name
from poeval.metrics.families import FAMILIES, cached_inputs, family, read_sections
from poeval.poetry.spelling import check_lang, language_warning
from poeval.sections import Section, of_schema
from poeval.stamps import stamp


@dataclass
class Reference:
    """The reference (training) quatrains a sample is compared with; ``rows`` index them among the
    ``usable`` quatrains of ``path``, i.e. the rows of its cached embeddings."""

    path: str
    poems: list[dict]
    rows: np.ndarray
    usable: list[dict]
    skipped: dict[str, int]


def bootstrap(resample, n: int, reps: int, seed: int, progress: bool = False) -> dict[str, list[float]]:
    """Percentile 95 % intervals of every scalar of ``resample`` over ``reps`` resamples of n poems."""
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = defaultdict(list)
    for _ in progress_bar(range(reps), desc="bootstrap", progress=progress):
        for key, value in resample(rng.integers(0, n, n)).items():
            if isinstance(value, float):
                draws[key].append(value)
    return {key: [float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))] for key, v in sorted(draws.items())}


def check_subsample(subsample, where: str = "subsample") -> None:
    """A subsample size is a number of quatrains >= 1, or None (the whole sample)."""
    if subsample is not None and (type(subsample) is not int or subsample < 1):
        raise PoevalError(f"{where}: expected a number of quatrains >= 1 or null, got {subsample!r}")


def check_bootstrap(reps, seed, where: str = "") -> None:
    """The bootstrap's resamples and seed as integers within the params schema's bounds
    (:func:`poeval.config.bootstrap_reps_range`, :func:`poeval.config.seed_range`), for `poeval evaluate`'s job and
    :func:`poeval.evaluate` alike; a float, a string or a bool is refused, not rounded."""
    config.check_int(reps, "bootstrap_reps", config.bootstrap_reps_range(), where)
    config.check_int(seed, "seed", config.seed_range(), where)


def draw_subsample(poems: list[dict], n: int, seed: int) -> list[dict]:
    """``n`` of ``poems`` drawn without replacement (seeded), in their order; all of them when there are no more
    than ``n``. A row of a common-n table (:mod:`poeval.report.tables`) draws the same quatrains for every family."""
    if len(poems) <= n:
        return list(poems)
    keep = np.sort(np.random.default_rng(seed).choice(len(poems), size=n, replace=False))
    return [poems[i] for i in keep]


def load_reference(source: PoemSource, sample: list[dict] | None = None, sample_name: str = "<poems>") -> Reference:
    """The reference of a path or of in-memory poems (:func:`poeval.poem_files.read_poems`), less the quatrains of
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


@functools.cache
def options_record(name: str) -> type[Section]:
    """The typed record of params ``metrics.<name>``: one field per key of its schema section."""
    return of_schema(f"{name.title()}Options", f"#/properties/metrics/properties/{name}", f"options.{name}")


def family_record(name: str, given: dict) -> Section:
    """params ``metrics.<name>`` as given, checked and filled by the params schema (a misspelt key is named
    rather than ignored), without the runtime keys of its record (:meth:`Family.runtime_keys`, which travel
    beside), as its typed record (:func:`options_record`)."""
    if name not in FAMILIES:
        raise PoevalError(f"options: unknown metric family {name!r} (available: {', '.join(FAMILIES)})")
    if not isinstance(given, dict):
        raise PoevalError(f"options.{name}: expected an object of options, got {given!r}")
    try:
        return options_record(name).from_dict({k: v for k, v in given.items() if k not in family(name).runtime_keys()})
    except RecursionError:   # a library caller's dict, never parsed from JSON with its depth limit
        raise PoevalError(f"options.{name}: nested too deeply; give a section of plain keys and values") from None


def family_options(name: str, given: dict | Section) -> dict:
    """A family's options as its compute function reads them: its record's keys (a record, as a job holds it,
    is taken as it is; a dict is checked and filled, :func:`family_record`) and the runtime keys ``given`` holds."""
    if isinstance(given, Section):
        return given.to_dict()
    runtime = {key: given[key] for key in family(name).runtime_keys() if key in given} if isinstance(given, dict) else {}
    return family_record(name, given).to_dict() | runtime


def _warn_language(lang: str, sources: dict[str, list[dict]]) -> None:
    """A warning on stderr where a sample or the reference reads as another language than ``lang``, whole or
    in part (:func:`poeval.poetry.spelling.language_warning`; rhyme, metre and the encoder's coverage depend
    on ``lang``); nothing stops."""
    for name, poems in sources.items():
        warning = language_warning(name, (p["lines"] for p in poems), lang)
        if warning:
            print(f"poeval evaluate: warning: {warning}", file=sys.stderr)


def _check_caches(reference: PoemSource, resolved: dict) -> None:
    """A cache is checked against the bytes of the reference file it was built from: in-memory poems have none."""
    if is_path(reference):
        return
    for owner, c in cached_inputs(list(resolved)).values():
        if resolved.get(owner, {}).get(c.option):
            raise PoevalError(f"options.{owner}.{c.option}: a cache of the reference needs the reference as a file, "
                              "not in-memory poems")


def evaluate(samples: PoemSource, reference: PoemSource, lang: str, families: list[str],
             options: dict | None = None, bootstrap_reps: int = 0, seed: int = 1, progress: bool = False,
             exclude_sample_from_reference: bool = False, allow_empty: bool = False,
             subsample: int | None = None, subsample_seed: int = 1, runtime: dict | None = None) -> dict:
    """Metric families of ``samples`` against ``reference``, each a path or in-memory poems (anything
    :func:`poeval.poem_files.read_poems` reads); ``options[family]`` overrides defaults; ``runtime[family]``:
    the keys a run adds beside the params (a cache's path, workers: :func:`poeval.metrics.families.runtime_options`).
    With ``bootstrap_reps`` > 0 each family also gets ``ci``: 95 % intervals from resampling poems.
    ``exclude_sample_from_reference`` drops the reference quatrains the sample was drawn from
    (:func:`sample_rows`, by verses): a HUMAN sample drawn from train is compared with the rest of train, not
    with itself. A sample without a usable quatrain is an error unless ``allow_empty`` (then every metric is
    null). ``subsample``: evaluate ``subsample`` quatrains of the sample (:func:`draw_subsample` with
    ``subsample_seed``) against the same reference as the whole sample (a HUMAN sample's quatrains all stay out
    of it): the set-level measures at a common n."""
    check_lang(lang)
    check_subsample(subsample)
    check_bootstrap(bootstrap_reps, seed)
    if options is not None and not isinstance(options, dict):
        raise PoevalError(f"options: expected an object of family options, e.g. {{'length': {{}}}}; "
                          f"got {quote(options)}")
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise PoevalError(f"unknown metric family {', '.join(map(str, unknown))} (available: {', '.join(FAMILIES)})")
    resolved = {family: family_options(family, opts) for family, opts in (options or {}).items()}
    for family, keys in (runtime or {}).items():
        resolved[family] = resolved.get(family) or family_options(family, {})
        resolved[family] = resolved[family] | keys
    _check_caches(reference, resolved)
    poems, skipped = read_poems(samples, allow_empty=allow_empty)
    ref = load_reference(reference, poems if exclude_sample_from_reference else None, source_name(samples, "poems"))
    _warn_language(lang, {source_name(samples, "poems"): poems, ref.path or "the reference": ref.poems})
    drawn = {}
    if subsample is not None:
        drawn = {"subsample": {"n": subsample, "seed": subsample_seed, "of": len(poems)}}
        poems = draw_subsample(poems, subsample, subsample_seed)
    result = {"lang": lang, "samples": source_name(samples, "poems"), "reference": ref.path,
              "n_reference": len(ref.poems), "n_poems": len(poems), "skipped": dict(sorted(skipped.items())),
              "reference_skipped": ref.skipped} | drawn
    for family in families:
        opts = resolved.get(family) or family_options(family, {})
        opts = opts | {"progress": progress, "lang": lang} | {
            other: resolved.get(other) or family_options(other, {}) for other in FAMILIES[family].shares}
        result[family], resample = FAMILIES[family].compute(poems, ref, opts)
        if bootstrap_reps and poems:
            result[family]["ci"] = bootstrap(resample, len(poems), bootstrap_reps, seed, progress)
    return result


def curve_sizes(sizes: list[int], whole: int) -> list[int]:
    """The subsample sizes of an n-sensitivity curve: those of ``sizes`` below the whole sample's ``whole``
    quatrains, then the whole sample."""
    return sorted({n for n in sizes if n < whole}) + [whole]


def _numbers(section: dict) -> dict:
    """The numbers of a family's result (nested dicts kept), without its per-poem values and intervals."""
    out = {}
    for key, value in section.items():
        if isinstance(value, dict) and key not in ("per_poem", "ci"):
            out[key] = _numbers(value)
        elif value is None or isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = value
    return out


def n_curve(samples: str, reference: str, lang: str, families: list[str], sizes: list[int], draws: int, seed: int,
            progress: bool = False, **kwargs) -> dict:
    """The n-sensitivity curve of ``families`` on one sample: each measure on subsamples of each of
    :func:`curve_sizes` quatrains, ``draws`` seeded draws (seeds ``seed`` ... ``seed + draws - 1``) per size below
    the whole sample, which is one point; ``kwargs`` go to :func:`evaluate` (options, the reference exclusion).
    How far a pooled measure moves along it is what a comparison of rows of different n is worth."""
    whole = len(read_poems(samples)[0])
    points = []
    grid = [(n, draw) for n in curve_sizes(sizes, whole) for draw in range(draws if n < whole else 1)]
    for n, draw in progress_bar(grid, desc="n curve", progress=progress):
        result = evaluate(samples, reference, lang, families, subsample=n, subsample_seed=seed + draw, **kwargs)
        points.append({"n": result["n_poems"], "draw": draw, "seed": seed + draw}
                      | {family: _numbers(result[family]) for family in families})
    return {"lang": lang, "samples": source_name(samples, "poems"), "n_whole": whole, "families": list(families),
            "sizes": list(sizes), "draws": draws, "seed": seed, "points": points}


def write_evaluation(samples: str, reference: str, lang: str, families: list[str], out: str | None,
                     cell: dict | None = None, *, recorded: dict, **kwargs) -> dict:
    """Evaluate (``kwargs``: :func:`evaluate`'s) and write atomically to ``out`` (None: the result only), stamped
    with ``recorded``, what the cell's job records (:meth:`poeval.jobs.cell.CellJob.recorded`); ``cell``
    (lang/system/decoding) labels a workflow table cell."""
    result = evaluate(samples, reference, lang, families, **kwargs)
    if cell:
        result["cell"] = cell
    result["provenance"] = evaluation_stamp(samples, reference, families, kwargs.get("runtime") or {}, recorded)
    if out is not None:
        write_json(out, result)
    return result


def stamp_params(families: list[str], options: dict, bootstrap_reps: int, seed: int,
                 exclude_sample_from_reference: bool, subsample: int | None = None, subsample_seed: int = 1) -> dict:
    """The params a metric cell's stamp records: the sections its families read (:func:`read_sections`)
    and the run's settings; the subsample only where one is drawn, so a whole-sample cell records what it
    always did. Its one caller is :meth:`poeval.jobs.cell.CellJob.recorded`."""
    metrics = {f: options.get(f) or {} for f in read_sections(families)}
    drawn = {} if subsample is None else {"subsample": subsample, "subsample_seed": subsample_seed}
    return {"metrics": metrics, "bootstrap_reps": bootstrap_reps, "seed": seed,
            "exclude_sample_from_reference": bool(exclude_sample_from_reference)} | drawn


def evaluation_stamp(samples: str, reference: str, families: list[str], runtime: dict, recorded: dict) -> dict:
    """Stamp for a metric cell: the samples, the reference and the caches its records mark ``stamped`` (the
    reference embeddings; their paths are ``runtime`` keys) as inputs, and ``recorded`` as its params."""
    inputs = {"samples": samples, "reference": reference}
    inputs |= {name: runtime.get(owner, {}).get(c.option) for name, (owner, c) in cached_inputs(families).items()
               if c.stamped}
    return stamp(inputs, recorded)


def dumps(result: dict) -> str:
    return json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False)
