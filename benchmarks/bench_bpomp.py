"""Benchmark of the BPoMP scorers on tiny random models: seconds per 1000 minimal pairs.

For each scorer (causal log-likelihood, masked PLL ``original`` and ``within_word_l2r``) it times the
batched poeval scorer on --pairs word-swap pairs (both texts of every pair; nothing de-duplicated) and
the unbatched step-by-step reference (one forward per scored token, no padding) on the first
--ref-pairs of them, checks that both agree there (exit 1 otherwise), and prints seconds per 1000 pairs
and the speed-up of the batched scorer over the reference in the same run.

Limericks come from ../shared/data/limericks/fortune_limericks.jsonl when present, else from a few
made-up ones repeated. Models: GPT-2 and BERT with --hidden units and --layers layers, untrained.

Example::

    python benchmarks/bench_bpomp.py --pairs 200 --ref-pairs 10 --threads 2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")   # never reach a model hub

import torch  # noqa: E402

from poeval import bpomp  # noqa: E402
from poeval.bpomp.scoring import causal_ids, pair_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FORTUNE = ROOT.parent / "shared" / "data" / "limericks" / "fortune_limericks.jsonl"
MADE_UP = [
    ["There once was a cat on a mat", "Who grew quite remarkably fat.", "She ate all the cream,",
     "Then dozed in a dream,", "And woke in a very round hat."],
    ["A baker who lived by the sea", "Made muffins and biscuits for tea.", "He baked them with care,",
     "Then left them out there,", "And seagulls would eat them for free."],
    ["A sailor went out in a boat", "With nothing to wear but a coat.", "The wind blew so cold",
     "That he quickly grew old,", "And wrote his last will on a note."],
]


def limerick_pairs(n: int) -> list[dict]:
    if FORTUNE.exists():
        lims, _ = bpomp.build_corpus("fortune", str(FORTUNE))
    else:
        lims = [{"id": f"m{k}", "lines": lines} for k, lines in enumerate(MADE_UP * (n // 3 + 1))]
    made, _ = bpomp.make_pairs(lims, "word_swap", check_scheme=False)
    return (made * (n // max(len(made), 1) + 1))[:n]


def tiny_models(texts: list[str], hidden: int, layers: int):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import (BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel,
                              PreTrainedTokenizerFast)

    from poeval.generators.lm import train_tokenizer

    torch.manual_seed(0)
    wp = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    wp.normalizer = normalizers.BertNormalizer(lowercase=True)
    wp.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    wp.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=2000, special_tokens=specials, show_progress=False))
    wp.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[(t, wp.token_to_id(t)) for t in ("[CLS]", "[SEP]")])
    mtok = PreTrainedTokenizerFast(tokenizer_object=wp, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")
    bert = BertForMaskedLM(BertConfig(vocab_size=len(mtok), hidden_size=hidden, num_hidden_layers=layers,
                                      num_attention_heads=2, intermediate_size=4 * hidden,
                                      pad_token_id=mtok.pad_token_id)).eval()
    ctok = train_tokenizer(texts, vocab_size=2000)
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=len(ctok), n_embd=hidden, n_layer=layers, n_head=2,
                                      bos_token_id=ctok.bos_token_id, eos_token_id=ctok.eos_token_id)).eval()
    return (gpt2, ctok), (bert, mtok)


def ref_causal(model, tok, text: str) -> float:
    ids = causal_ids(tok, text)
    total = 0.0
    for k in range(1, len(ids)):
        logits = model(torch.tensor([ids[:k]])).logits[0, -1]
        total += torch.log_softmax(logits, -1)[ids[k]].item()
    return total


def ref_pll(model, tok, text: str, l2r: bool) -> float:
    enc = tok(text, return_special_tokens_mask=True)
    ids, special, words = enc["input_ids"], enc["special_tokens_mask"], enc.word_ids()
    total = 0.0
    for p in range(len(ids)):
        if special[p]:
            continue
        masked = list(ids)
        masked[p] = tok.mask_token_id
        q = p + 1
        while l2r and q < len(ids) and words[q] == words[p] and not special[q]:
            masked[q] = tok.mask_token_id
            q += 1
        total += torch.log_softmax(model(torch.tensor([masked])).logits[0, p], -1)[ids[p]].item()
    return total


def timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def run(args) -> int:
    torch.set_num_threads(args.threads)
    pairs = limerick_pairs(args.pairs)
    texts = [pair_text(p[f]) for p in pairs for f in ("original", "corrupted")]
    (gpt2, ctok), (bert, mtok) = tiny_models(texts, args.hidden, args.layers)
    n_ref = min(args.ref_pairs, len(pairs))
    ref_texts = texts[: 2 * n_ref]
    scorers = {
        "causal": (lambda ts: bpomp.causal_scores(gpt2, ctok, ts, batch_size=args.causal_batch),
                   lambda t: ref_causal(gpt2, ctok, t)),
        "pll_original": (lambda ts: bpomp.masked_scores(bert, mtok, ts, "original", batch_size=args.masked_batch),
                         lambda t: ref_pll(bert, mtok, t, False)),
        "pll_within_word_l2r": (lambda ts: bpomp.masked_scores(bert, mtok, ts, "within_word_l2r", batch_size=args.masked_batch),
                                lambda t: ref_pll(bert, mtok, t, True)),
    }
    ok = True
    print(f"{len(pairs)} pairs ({n_ref} for the reference), hidden={args.hidden}, layers={args.layers}, "
          f"threads={args.threads}")
    with torch.inference_mode():
        for name, (batched, ref) in scorers.items():
            got, wall, cpu = timed(lambda: batched(texts))
            want, rwall, rcpu = timed(lambda: [ref(t) for t in ref_texts])
            diff = max(abs(a - b) for a, b in zip(got[: len(want)], want))
            ok &= diff < 1e-3
            per = 1000 / len(pairs)
            rper = 1000 / n_ref
            print(json.dumps({"scorer": name, "batched_s_per_1000_pairs": round(wall * per, 2),
                              "batched_cpu_s_per_1000_pairs": round(cpu * per, 2),
                              "reference_s_per_1000_pairs": round(rwall * rper, 2),
                              "speedup": round((rwall * rper) / (wall * per), 1), "max_abs_diff": diff}))
    return 0 if ok else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--ref-pairs", type=int, default=10)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--causal-batch", type=int, default=16)
    ap.add_argument("--masked-batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    if min(args.pairs, args.ref_pairs, args.hidden, args.layers, args.threads) < 1:
        ap.error("all sizes must be positive")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
