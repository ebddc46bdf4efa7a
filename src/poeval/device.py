"""Where models run: ``POEVAL_DEVICE`` (``auto`` by default: the first CUDA GPU when torch sees one,
else the CPU; or any torch device string such as ``cpu``, ``cuda``, ``cuda:1``, ``mps``). Cluster jobs
get their GPU through the scheduler (CUDA_VISIBLE_DEVICES), so ``auto`` picks it up without params."""

from __future__ import annotations

import os

from poeval.errors import PoevalError

ENV = "POEVAL_DEVICE"


def resolve(name: str | None = None):
    """The ``torch.device`` to use: ``name``, else ``$POEVAL_DEVICE``, else ``auto``."""
    import torch

    name = (name or os.environ.get(ENV) or "auto").strip()
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(name)
    except (RuntimeError, ValueError):
        raise PoevalError(f"{ENV}={name!r} is not a torch device (use auto, cpu, cuda, cuda:N or mps)") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise PoevalError(f"{ENV}={name!r} asks for a GPU, but torch sees no CUDA device on this machine "
                          f"(torch {torch.__version__}; the CPU wheel has no CUDA)")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise PoevalError(f"{ENV}={name!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    return dev


def of(model):
    """The device a model's parameters live on."""
    return next(model.parameters()).device
