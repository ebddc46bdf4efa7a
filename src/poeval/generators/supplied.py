"""Systems made of samples the user supplies (params ``models.<system>.arch: samples``).

A researcher's generator need not run here: an API model, or a checkpoint sampled on a cluster, is known
by its sample files, ``samples: {<lang>: {<decoding>: PATH}}``. :func:`import_samples` (rule
import_samples, `poeval import-samples`) reads one file with :func:`poeval.poem_files.read_records` (poeval JSONL,
plain text, a Hugging Face ``save_to_disk`` folder as the paper's code saves samples, Parquet / CSV / TSV
with a ``text`` column), applies the samplers' validity rule to every poem
(:func:`poeval.generators.sampling.check_quatrain`: a poem of five verses is an ``extra_verse``, one of
three a ``wrong_line_count:3``, an empty verse an ``empty_line``; a verse over the readers' bound a
``long_verse``, :func:`poeval.poem_files.long_verse`) and writes the same two files a
sampled system gets, ``results/samples/{lang}/{system}/{decoding}.jsonl`` and its ``.stats.json``. From
there on the system is one more row of every table and figure. ``requested`` and ``attempts`` are the
poems the file held; the stats' stamp records the file's path and the sha256 of the bytes imported, hashed
as they were read (a folder: every file's), so a changed file makes the import stale
(:mod:`poeval.report.stale`) and `poeval provenance` ends at it. Samples that read as another language than
``lang``, all or some of them, are warned about as `poeval evaluate` warns
(:func:`poeval.poetry.spelling.language_warning`).

The import keeps each poem's verses and id only: a ``scheme`` or ``meter`` label the file carries is not
trusted (it may be what the generator was asked for), so the rhyme detector labels the user's samples as
it labels every other system's.
"""

from __future__ import annotations

import collections
import os
import sys
import time
from pathlib import Path

from poeval.errors import PoevalError
from poeval.generators.decoding import Decoding
from poeval.generators.interface import TrainInputs
from poeval.generators.prompting import Prompt
from poeval.generators.sampling import check_quatrain, write_samples
from poeval.io import nothing_usable
from poeval.poem_files import long_verse, read_records_and_sha256
from poeval.poetry.spelling import language_warning
from poeval.stamps import supplied_stamp

# What a ``language`` field may say for each of poeval's languages (the paper's code writes "en" / "de")
LANGUAGE_NAMES = {"en": frozenset({"en", "eng", "english"}), "de": frozenset({"de", "deu", "ger", "german"})}


def param_key(system: str, lang: str, decoding: str) -> str:
    """The params key of one sample file, named in every error about it."""
    return f"models.{system}.samples.{lang}.{decoding}"


def sample_files(model_cfg: dict, lang: str) -> dict[str, str]:
    """``{decoding: path}`` of a samples system in ``lang`` (empty when it supplies none for it)."""
    return dict((model_cfg.get("samples") or {}).get(lang) or {})


def problems(system: str, model_cfg: dict, languages: list[str], root: str | os.PathLike = ".") -> list[str]:
    """Params problems of a samples system, each naming its key: a language the run does not have, none of
    the run's languages, a path that does not exist (relative to the workflow's directory ``root``)."""
    out = [f"key models.{system}.samples.{lang}: '{lang}' is not listed in languages"
           for lang in model_cfg["samples"] if lang not in languages]
    if not any(lang in model_cfg["samples"] for lang in languages):
        out.append(f"key models.{system}.samples: no sample file for any of the languages {', '.join(languages)}")
    for lang in (lang for lang in model_cfg["samples"] if lang in languages):
        for decoding, path in sample_files(model_cfg, lang).items():
            if not (Path(root) / path).exists():
                out.append(f"key {param_key(system, lang, decoding)}: no such file or folder: {path}")
    return out


def _check_language(records: list[dict], lang: str, path: Path, key: str) -> None:
    names = LANGUAGE_NAMES.get(lang, frozenset({lang}))
    for i, record in enumerate(records):
        said = record.get("language")
        if said is not None and said.strip().lower() not in names:
            raise PoevalError(f"{path}: record {i + 1} has language {said!r}, but {key} gives the samples of "
                              f"'{lang}'")


def _quatrain(record: dict) -> tuple[list[str] | None, str | None]:
    """The samplers' validity rule on a record's verses, after the readers' bound on a verse's length."""
    lines = record["lines"]
    if not isinstance(lines, list) or not all(isinstance(v, str) for v in lines):
        return None, "malformed"
    reason = long_verse(lines)
    return (None, reason) if reason else check_quatrain(lines, True)


def import_samples(source: str | os.PathLike, lang: str, out: str | os.PathLike, stats: str | os.PathLike, *,
                   key: str = "samples", id_prefix: str = "", recorded: dict | None = None) -> dict:
    """Import the poems of ``source`` as a sample of ``lang`` into ``out`` (JSONL) and ``stats`` (JSON);
    return the stats. ``key`` (the params key of the file) is named when the file is missing. Every check
    runs before anything is written: a file without a usable quatrain, a ``language`` that is not
    ``lang``, repeated ids or an unreadable file raise PoevalError and leave ``out`` and ``stats`` as they
    were. ``recorded``: the params the stamp records (the rule's: its job's; default: the file's path)."""
    path = Path(source)
    if not path.exists():
        raise PoevalError(f"{key}: no such file or folder: {source}")
    t0 = time.perf_counter()
    records, sha256 = read_records_and_sha256(path)
    _check_language(records, lang, path, key)
    kept, reasons = [], collections.Counter()
    for record in records:
        lines, reason = _quatrain(record)
        if reason:
            reasons[reason] += 1
        else:
            kept.append({"id": f"{id_prefix}{record['id']}", "lines": lines})
    if not kept:
        raise nothing_usable(path, len(records), reasons, "poems")
    warning = language_warning(str(source), (poem["lines"] for poem in kept), lang)
    if warning:
        print(f"poeval import-samples: warning: {warning}", file=sys.stderr)
    return write_samples(kept, reasons, len(records), len(records), out, stats, {
        "source": {"path": str(source), "kind": "folder" if path.is_dir() else path.suffix.lstrip(".") or "text"},
        "elapsed_s": time.perf_counter() - t0, "provenance": supplied_stamp(source, sha256, recorded)})


# The generator interface (poeval.generators.interface): a samples system's checkpoint is its files, which
# rule import_samples imports; there is nothing to train or sample.
NOTHING_TO_RUN = "arch samples is known by its sample files (poeval import-samples): nothing {} it"


def fit(inputs: TrainInputs, out_dir: str, model_cfg: dict, train_cfg: dict | str, *, lang: str | None,
        name: str | None = None, threads: int = 1, progress: bool = True) -> dict:
    raise PoevalError(NOTHING_TO_RUN.format("trains"))


def sample(model_dir: str, decoding: Decoding | dict, sampling: dict, out: str, stats: str, *,
           threads: int = 1, id_prefix: str = "", progress: bool = True, style: str | None = None,
           prompt: Prompt | None = None) -> dict:
    raise PoevalError(NOTHING_TO_RUN.format("samples"))
