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

import os
import pickle
from pathlib import Path

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
# ``pytorch_model.bin`` that torch's weights_only loader refuses (it would run code), not a crash.
LOAD_ERRORS = (OSError, ValueError, KeyError, ImportError, RuntimeError, pickle.UnpicklingError)


def load_problem(err: BaseException, ref: object) -> str:
    """One line saying why ``from_pretrained`` (or ``torch.load``) failed; a refused pickle names the
    checkpoint's pickled files (``ref`` a folder) or the file (``ref`` a file)."""
    if not isinstance(err, pickle.UnpicklingError):
        return first_line(err)
    path = Path(str(ref))
    pickles = sorted(p.name for p in path.glob("*.bin")) if path.is_dir() else [path.name] if path.is_file() else []
    return (f"{', '.join(pickles) or 'its weights'}: a pickle that torch's safe loader (weights_only) refuses, "
            "so it is not loaded; give the weights as model.safetensors")
