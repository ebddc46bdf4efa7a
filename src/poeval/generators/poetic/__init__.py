"""The poetry-specific generators of the paper, ported to PyTorch: DeepSpeare (Lau et al. 2018) and
Structured Adversary (Jhamtani et al. 2019). Both train on pseudo-sonnets (:mod:`.sonnets`) and write
their own checkpoint format (:mod:`.common`); ``poeval train`` / ``poeval sample`` reach them through
:mod:`poeval.generators.registry`."""

from __future__ import annotations

from poeval.generators import registry

ARCHS = registry.names("poetic")
