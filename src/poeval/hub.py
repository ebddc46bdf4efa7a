"""Where a model named in params or on the command line comes from: this machine, unless the user asks.

poeval is offline by default. A model reference (``models.<system>.name_or_path``, ``bpomp.scorers.<i>.model``,
``metrics.semantic.encoder``, ``--model``, ...) is resolved locally first (:func:`resolve`): an existing
folder, else a hub id already in the local Hugging Face cache. Anything else fails at once with an error
naming the key that gave it, where Hugging Face would retry the hub for about a minute and then blame its
own argument name.

The network is reached only when the user sets the environment variable ``POEVAL_ONLINE=1``
(:data:`ONLINE_ENV`); a hub id missing from the cache is then downloaded by ``from_pretrained``. Offline,
``poeval`` sets ``HF_HUB_OFFLINE=1`` for its process and the processes it starts (:func:`apply`), and every
``from_pretrained`` gets ``local_files_only=True`` (:func:`local_files_only`), so that a library call made
outside the CLI stays offline too.
"""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

from safetensors import SafetensorError

from poeval.errors import PoevalError, first_line

ONLINE_ENV = "POEVAL_ONLINE"


def online() -> bool:
    """Whether the user allowed downloads (``POEVAL_ONLINE=1``)."""
    return os.environ.get(ONLINE_ENV, "").strip() == "1"


def local_files_only() -> bool:
    """``from_pretrained``'s ``local_files_only``: true unless :func:`online`."""
    return not online()


def apply() -> None:
    """Offline, set ``HF_HUB_OFFLINE=1`` for this process and its children. Hugging Face reads it when it
    is first imported, so the CLI calls this first."""
    if not online():
        os.environ["HF_HUB_OFFLINE"] = "1"


def _looks_local(ref: str) -> bool:
    """A path rather than a hub id (``name`` or ``org/name``)."""
    return ref.startswith(("/", "./", "../", "~", ".\\")) or ref.count("/") > 1 or (os.sep != "/" and os.sep in ref)


def _cached(repo_id: str) -> bool:
    """Whether the local Hugging Face cache holds a snapshot of ``repo_id`` (nothing is asked of the hub)."""
    from huggingface_hub import snapshot_download

    try:
        snapshot_download(repo_id, local_files_only=True)
    except (OSError, ValueError):   # not cached (LocalEntryNotFoundError) or not a valid id (HFValidationError)
        return False
    return True


def resolve(ref: object, key: str, what: str = "model") -> str:
    """``ref`` as ``from_pretrained`` should get it: an existing folder (``~`` expanded), else a hub id,
    which must be in the local cache unless :func:`online`. Else one PoevalError naming ``key``."""
    if not isinstance(ref, str) or not ref.strip():
        raise PoevalError(f"{key} must be a hub id or a local path, got {ref!r}")
    path = Path(ref).expanduser()
    if path.is_dir():
        return str(path)
    if _looks_local(ref):
        raise PoevalError(f"cannot load {what} {ref!r} given by {key}: no such directory")
    if online() or _cached(ref):
        return ref
    raise PoevalError(f"cannot load {what} {ref!r} given by {key}: it is neither a local folder nor in the "
                      f"local Hugging Face cache, and poeval downloads nothing unless {ONLINE_ENV}=1 is set")


# What ``from_pretrained`` raises for a folder or file it cannot load; an UnpicklingError is a pickled
# ``pytorch_model.bin`` that torch's weights_only loader refuses (it would run code), not a crash; a
# SafetensorError a damaged or truncated ``model.safetensors``.
LOAD_ERRORS = (OSError, ValueError, KeyError, ImportError, RuntimeError, pickle.UnpicklingError, SafetensorError)
# The files where a checkpoint names code of its own for transformers to import (``auto_map``)
OWN_CODE_FILES = ("config.json", "tokenizer_config.json")


def load_problem(err: BaseException, ref: object) -> str:
    """One line saying why ``from_pretrained`` (or ``torch.load``) failed, naming the file at fault where
    it can: a refused pickle (the checkpoint's pickled files, or the file ``ref``), a damaged safetensors
    file, or a folder that names its own code, which is never run (every call passes
    ``trust_remote_code=False``), so a model that needs it cannot load."""
    path = Path(str(ref))
    if isinstance(err, pickle.UnpicklingError):
        pickles = [p.name for p in _weights(path, "*.bin")]
        return (f"{', '.join(pickles) or 'its weights'}: a pickle that torch's safe loader (weights_only) refuses, "
                "so it is not loaded; give the weights as model.safetensors")
    if isinstance(err, SafetensorError):
        files = [str(p) for p in _weights(path, "*.safetensors")]
        return (f"{', '.join(files) or 'its weights'}: not a readable safetensors file ({first_line(err)}); "
                "it is damaged or incomplete: copy or save it again")
    own = _own_code(path) if path.is_dir() else None
    if own:
        return (f"{own}, which poeval never runs (trust_remote_code=False); use a checkpoint whose architecture "
                f"transformers has built in (transformers: {first_line(err)})")
    return first_line(err)


def _weights(path: Path, pattern: str) -> list[Path]:
    """The files of a folder ``path`` that match ``pattern``, the file ``path`` itself, or none (a hub id)."""
    return sorted(path.glob(pattern)) if path.is_dir() else [path] if path.is_file() else []


def _own_code(folder: Path) -> str | None:
    """Where ``folder`` names code of its own (``FILE: auto_map names ...``), None when it names none. An
    unreadable file names none here: the error it causes is reported as it is."""
    for name in OWN_CODE_FILES:
        try:
            auto_map = json.loads((folder / name).read_bytes()).get("auto_map")
        except (OSError, ValueError, AttributeError, RecursionError):
            continue
        if auto_map:
            refs = _class_refs(auto_map)
            more = f", … ({len(refs) - 4} more)" if len(refs) > 4 else ""
            return f"{folder / name}: auto_map names the folder's own code ({', '.join(refs[:4])}{more})"
    return None


def _class_refs(auto_map) -> list[str]:
    """The ``module.Class`` references of an ``auto_map`` (a dict of references or of [slow, fast] pairs)."""
    items = auto_map.values() if isinstance(auto_map, dict) else auto_map if isinstance(auto_map, list) else [auto_map]
    refs = [r for item in items for r in (item if isinstance(item, list) else [item]) if r is not None]
    return [str(r) for r in refs] or [str(auto_map)]
