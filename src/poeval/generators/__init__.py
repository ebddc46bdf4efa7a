"""Generator machinery shared by every architecture: the one sampling loop (:mod:`.sampling`), the registry of architectures (:mod:`.registry`)
and the one training loop (:mod:`.engine`: seeding, optimiser groups, warmup, clipping, evaluation, early
stopping, resume, atomic checkpoint, provenance). The architecture modules (:mod:`poeval.lm`,
:mod:`poeval.mlm`, :mod:`poeval.poetic.deepspeare`, :mod:`poeval.poetic.adversary`) keep only their
model, their batching and their loss step."""
