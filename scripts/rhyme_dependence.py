"""Does a trained quatrain LM use verse 1 to write verse 2 where they rhyme?

For the first --n dev quatrains of each scheme, the log-probability of verse 2 after its own verse 1 minus
after another quatrain's verse 1 (the next one of the same scheme), in nats, averaged. Verse 1 tells
about verse 2's topic in every scheme; in aabb it also fixes verse 2's rhyme, so a model that has learnt
to rhyme shows a larger gain for aabb than for abab or abcd. A conditioned model gets each quatrain's
own style tokens first; a model trained with reversed verses sees the verses reversed, as in training.

    python scripts/rhyme_dependence.py models/en/gpt2-l-cond data/en/dev.jsonl
"""

from __future__ import annotations

import argparse

import torch

from poeval.generators.checkpoint import load, orient, verse_order
from poeval.generators.lm.build import has_style_tokens
from poeval.io import read_jsonl
from poeval.poetry.style import style_tokens


def verse2_logp(model, tok, context: str, verse: str) -> float:
    """log p(verse + newline | BOS + context) under ``model``, summed over the verse's tokens."""
    head = [tok.bos_token_id] + tok(context, add_special_tokens=False)["input_ids"]
    tail = tok(verse + "\n", add_special_tokens=False)["input_ids"]
    ids = torch.tensor([head + tail])
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=ids).logits[0, :-1].float(), dim=-1)
    return float(logp[len(head) - 1:].gather(-1, ids[0, len(head):, None]).sum())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir")
    ap.add_argument("dev", help="a labelled split (records with lines, scheme, meter)")
    ap.add_argument("--n", type=int, default=150, help="quatrains per scheme")
    ap.add_argument("--schemes", default="aabb,abab,abcd")
    args = ap.parse_args()
    model, tok = load(args.model_dir)
    model.eval()
    order, styled = verse_order(model), has_style_tokens(tok)
    records = list(read_jsonl(args.dev))
    for scheme in args.schemes.split(","):
        recs = [r for r in records if r["scheme"] == scheme][: args.n]
        gains = []
        for rec, other in zip(recs, recs[1:] + recs[:1]):
            style = "".join(style_tokens(rec["scheme"], rec["meter"])) if styled else ""
            own, alien = orient(rec["lines"][:2], order), orient(other["lines"][:1], order)
            gains.append(verse2_logp(model, tok, style + own[0] + "\n", own[1])
                         - verse2_logp(model, tok, style + alien[0] + "\n", own[1]))
        print(f"{args.model_dir}\t{scheme}\t{len(gains)}\t{sum(gains) / max(len(gains), 1):.3f}")


if __name__ == "__main__":
    main()
