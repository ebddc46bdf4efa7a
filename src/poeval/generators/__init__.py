"""Generator machinery shared by every architecture: the one sampling loop (:mod:`.sampling`), the registry of architectures (:mod:`.registry`)
and the one training loop (:mod:`.engine`: seeding, optimiser groups, warmup, clipping, evaluation, early
stopping, resume, atomic checkpoint, provenance). The architecture modules (:mod:`poeval.generators.lm`,
:mod:`poeval.generators.mlm`, :mod:`poeval.generators.poetic.deepspeare`, :mod:`poeval.generators.poetic.adversary`) keep only their
model, their batching and their loss step; each implements the one generator interface (:mod:`.interface`)
and samples under a typed decoding (:mod:`.decoding`)."""
