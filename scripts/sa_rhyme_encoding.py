"""Structured Adversary's rhyme encoder pretrained as the original's spelling autoencoder on CMUdict's words,
with poeval's encoding (``projected``) or the original's (``cell``): how well it ranks rhyming pairs of
held-out words before and after the pretraining. Measured in
docs/results/generators.md "The ports' remaining switches: DeepSpeare's update order and chunk attention, SA's rhyme encoding".

400 triples from the autoencoder's test words (the split ``pretrain`` draws with seed 1), drawn with seed 0: a
word, a word with the same CMUdict rhyme part and a word with another; accuracy is the share where the rhyming
word's cosine similarity is the higher. Prints one JSON line.

    python scripts/sa_rhyme_encoding.py cell          # or projected; --epochs 41 is the schema's ae_epochs
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import time

import torch

from poeval.generators.poetic import adversary as sa
from poeval.generators.poetic.adversary import autoencoder, discriminator


def triples(test: list[str], n: int, seed: int) -> list[tuple[str, str, str]]:
    """``n`` (word, rhyming word, non-rhyming word) triples of ``test`` words that CMUdict covers."""
    parts, _ = discriminator.pronunciations(test, "en")
    groups = collections.defaultdict(list)
    for word, part in parts.items():
        groups[part].append(word)
    multi = [g for _, g in sorted(groups.items()) if len(g) >= 2]
    covered, rng, out = sorted(parts), random.Random(seed), []
    while len(out) < n:
        word, rhyming = rng.sample(rng.choice(multi), 2)
        other = rng.choice(covered)
        if parts[other] != parts[word]:
            out.append((word, rhyming, other))
    return out


def accuracy(encoder, chars, rows: list[tuple[str, str, str]]) -> float:
    encoder.eval()
    with torch.no_grad():
        codes = encoder(*chars.encode([w for row in rows for w in row]))
        e = torch.nn.functional.normalize(codes, dim=-1).view(-1, 3, encoder.dim)
    return float(((e[:, 0] * e[:, 1]).sum(-1) > (e[:, 0] * e[:, 2]).sum(-1)).float().mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("encoding", choices=["projected", "cell"])
    parser.add_argument("--epochs", type=int, default=None, help="autoencoder epochs (default: the schema's)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    words = list(autoencoder.cmudict_words())
    src = {"source": "cmudict", "version": None, "words": words, "val": None, "note": None}
    cfg = sa.resolve_model_cfg({"rhyme_encoding": args.encoding})
    chars = discriminator.CharVocab.from_words(words, cfg["max_word_chars"])
    rows = triples(autoencoder.splits(src, random.Random(1))["test"], 400, 0)
    torch.manual_seed(1)
    encoder = discriminator.build(cfg, len(chars)).encoder
    out = {"encoding": args.encoding, "dim": encoder.dim, "acc_untrained": accuracy(encoder, chars, rows)}
    t0 = time.perf_counter()
    summary = autoencoder.pretrain(encoder, chars, src, char_emb=cfg["char_emb"],
                                   epochs=cfg["ae_epochs"] if args.epochs is None else args.epochs, steps=None,
                                   batch_size=cfg["ae_batch_size"], lr=float(cfg["ae_lr"]), rng=random.Random(1))
    out.update(time_s=round(time.perf_counter() - t0, 1), acc_pretrained=accuracy(encoder, chars, rows),
               **{k: summary[k] for k in ("ae_steps", "ae_val_loss", "ae_val_exact", "ae_test_loss", "ae_test_exact")})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
