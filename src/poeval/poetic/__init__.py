"""The poetry-specific generators of the paper, ported to PyTorch: DeepSpeare (Lau et al. 2018) and
Structured Adversary (Jhamtani et al. 2019). Both train on pseudo-sonnets (:mod:`.sonnets`) and write
their own checkpoint format (:mod:`.common`); ``poeval train`` / ``poeval sample`` dispatch here by arch."""

from __future__ import annotations

import importlib

# arch name in params -> module
ARCHS = {"deepspeare": "deepspeare", "sa": "adversary"}


def module(arch: str):
    """The module that trains and samples ``arch`` (``train(...)``, ``sample(...)``)."""
    return importlib.import_module(f".{ARCHS[arch]}", __name__)


def is_poetic(model_cfg: dict) -> bool:
    return model_cfg.get("arch") in ARCHS
