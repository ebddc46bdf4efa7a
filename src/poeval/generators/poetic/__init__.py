"""The poetry-specific generators of the paper, ported to PyTorch: DeepSpeare (Lau et al. 2018) and
Structured Adversary (Jhamtani et al. 2019). Both train on pseudo-sonnets (:mod:`.sonnets`) and write
their own checkpoint format (:mod:`.common`); ``poeval train`` / ``poeval sample`` dispatch here by arch."""

from __future__ import annotations

from poeval.generators import registry
from poeval.generators.registry import is_poetic, module  # noqa: F401 - the arch's train(...) and sample(...)

ARCHS = registry.names("poetic")
