"""Can a pretrained model on PyPI be style-conditioned on CPU? Three probes (docs/results/style-adherence.md).

``capability MODEL``: does the model rhyme at all, untrained? It continues ``--shots`` human quatrains of
``--scheme`` (few-shot, from data/en/train.jsonl) or answers a chat request for that scheme (``--chat``),
``--n`` times; the detected schemes of what it writes are counted (poeval's rhyme detector).

``scheme-gain MODEL``: how much a ``variant --style text`` model's log-likelihood of a dev quatrain gains from
the quatrain's own scheme line over another scheme's (:func:`scheme_gain`).

``variant OUT``: fine-tune smollm2-cond (``--base``: gemma3-cond; LoRA as config/systems/pretrained-cpu.yaml) in a variant and prompt
it with aabb, abab and abba, ``--n`` valid quatrains each, and unprompted 2 x ``--n``: ``--order words``
(poeval's ``verse_order: words``). The other variants are experiments, not poeval switches, hooked into its
training here: ``--plan`` (each training text writes the quatrain's four end words on a line before its
verses, and that line is dropped from samples), ``--init words`` (each style token starts as the mean
embedding of words that name it), ``--emb-lr LR`` (the style tokens' rows learn at LR and the pretrained rows
of the embedding tables are frozen, where poeval trains the tables in full at the LoRA rate), ``--style
text`` (the style as a plain first line, "Rhyme scheme: abab. Metre: iambic.", no new tokens, the embeddings
frozen; the line is dropped from samples), ``--weigh K`` (in training, each verse's last word and the marks after
it count K times in the loss: the tokens a rhyme is made of) and ``--balance`` (training on the split resampled,
seeded, to equal shares of aabb, abab, abba, abcb, abcd and the other schemes together).

    HF_HUB_OFFLINE=1 python scripts/conditioning_probe.py capability models/pretrained/smollm2-135m --scheme aabb
    HF_HUB_OFFLINE=1 python scripts/conditioning_probe.py variant /tmp/words --order words
    HF_HUB_OFFLINE=1 python scripts/conditioning_probe.py scheme-gain /tmp/text/model
    HF_HUB_OFFLINE=1 python scripts/conditioning_probe.py variant /tmp/rows --init words --emb-lr 0.02
    HF_HUB_OFFLINE=1 python scripts/conditioning_probe.py variant /tmp/wb --init words --emb-lr 0.02 --weigh 5 --balance
    HF_HUB_OFFLINE=1 python scripts/conditioning_probe.py variant /tmp/g --base models/pretrained/gemma3-270m \
        --layers 6 --temperature 0.5
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import random
import sys

import torch

from poeval.poetry.schemes import scheme
from poeval.text import end_word

SHOWN = ("aabb", "abab", "abba", "abcb", "abcd")


def shares(samples: list[list[str]]) -> dict:
    counts = collections.Counter(scheme(lines, "en") for lines in samples)
    return {s: round(100 * counts[s] / max(len(samples), 1), 1) for s in SHOWN} | {"n": len(samples)}


def verses(text: str) -> list[str] | None:
    lines = text.split("\n")
    return lines if len(lines) == 4 and all(line.strip() for line in lines) else None


def capability(args) -> dict:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model).eval()
    pool = [r for r in map(json.loads, open(args.train)) if r["scheme"] == args.scheme]
    rng, written, failed = random.Random(0), [], 0
    for _ in range(args.n):
        if args.chat:
            turn = [{"role": "user", "content": f"Write a four-line poem with the rhyme scheme {args.scheme.upper()}."}]
            ids = tok.apply_chat_template(turn, add_generation_prompt=True, return_tensors="pt", return_dict=True)
            ids = ids["input_ids"]
        else:
            shots = "\n\n".join("\n".join(r["lines"]) for r in rng.sample(pool, args.shots)) + "\n\n"
            ids = tok(shots, return_tensors="pt").input_ids
        out = model.generate(ids, do_sample=True, temperature=args.temperature, top_k=0, top_p=1.0,
                             max_new_tokens=90, pad_token_id=tok.eos_token_id)
        text = tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True).strip()
        lines = verses("\n".join(text.split("\n")[:4]))
        failed += lines is None
        written += [lines] if lines else []
    return shares(written) | {"not_four_verses": failed}


def continuation_logprob(model, tok, prompt: str, text: str) -> float:
    """log p(``text`` | ``prompt``), summed over ``text``'s tokens (poeval's ``next_token_logprobs``)."""
    from poeval.generators.lm.logits import next_token_logprobs

    p, t = (tok(x, add_special_tokens=False).input_ids for x in (prompt, text))
    ids = torch.tensor([p + t])
    targets = ids[:, 1:].clone()
    targets[0, : len(p) - 1] = -100   # only the continuation's tokens are scored
    with torch.no_grad():
        return next_token_logprobs(model, ids, torch.ones_like(ids), targets)[1].sum().item()


def scheme_gain(args) -> dict:
    """For a ``--style text`` model: per scheme, over ``--n`` dev quatrains of it, the mean gain in log p(the
    quatrain) from its own scheme line over each other scheme's, and how often its own line scores highest
    (chance: one in five). How much the model has learnt from the line, whatever it then samples."""
    from poeval.generators.checkpoint import load

    model, tok = load(args.model)
    model.eval()
    rows = [json.loads(line) for line in open(args.dev)]
    result = {}
    for own in SHOWN:
        picked = [r for r in rows if r["scheme"] == own][: args.n]
        gains, best = collections.defaultdict(float), 0
        for r in picked:
            text = f" Metre: {r['meter']}.\n" + "\n".join(r["lines"]) + tok.eos_token
            lp = {s: continuation_logprob(model, tok, tok.bos_token + f"Rhyme scheme: {s}.", text) for s in SHOWN}
            best += max(lp, key=lp.get) == own
            for s in SHOWN:
                gains[s] += (lp[own] - lp[s]) / len(picked)
        result[own] = {"n": len(picked), "own_line_best": best,
                       **{f"gain_over_{s}": round(g, 2) for s, g in gains.items() if s != own}}
    return result


def plan_text(lines, bos, eos, style=()):
    """A training text whose first line is the quatrain's four end words (the --plan experiment)."""
    return bos + "".join(style) + " ".join(end_word(v) for v in lines) + "\n" + "\n".join(lines) + eos


def first_line_sample(model, tok, prompt_text: str, want: int, temperature: float, cap: int = 12) -> dict:
    """``want`` valid quatrains of a model whose texts start with a line before the verses (--plan, --style
    text), in at most ``cap`` x ``want`` attempts: ancestral sampling from ``prompt_text``, that first line
    dropped."""
    prompt = tok(prompt_text, add_special_tokens=False, return_tensors="pt").input_ids
    written, attempts = [], 0
    while len(written) < want and attempts < cap * want:
        out = model.generate(prompt.repeat(16, 1), do_sample=True, temperature=temperature, top_k=0, top_p=1.0,
                             max_new_tokens=100, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
        for row in out[:, prompt.shape[1]:].tolist():
            attempts += 1
            if tok.eos_token_id in row and len(written) < want:
                parts = tok.decode(row[:row.index(tok.eos_token_id)], skip_special_tokens=True).split("\n", 1)
                lines = verses(parts[1]) if len(parts) == 2 else None
                written += [lines] if lines else []
    return shares(written) | {"attempts": attempts}


# --init words: each style token starts as the mean embedding of words that name it (Hewitt 2021,
# "Initializing new word embeddings"); the named schemes get their names from poetics, so that aabb, abab
# and abba (equal letter multisets) do not start equal
NAMED = {"aabb": "couplets paired rhyme", "abab": "alternate cross rhyme", "abba": "enclosed envelope rhyme",
         "abcb": "ballad rhyme", "abcd": "unrhymed blank verse"}


def describe(token: str) -> str:
    kind, value = token[1:-1].split("=")
    if kind == "meter":
        return f" {value} metre"
    return " " + NAMED.get(value, "irregular rhyme")


def init_from_words(model, tok) -> None:
    """Set the new style tokens' input (and untied output) embedding rows to their descriptions' means."""
    from poeval.poetry.style import STYLE_TOKENS

    tables = {id(m.weight): m.weight for m in (model.get_input_embeddings(), model.get_output_embeddings())}
    with torch.no_grad():
        for token in STYLE_TOKENS:
            row, words = tok.convert_tokens_to_ids(token), tok(describe(token), add_special_tokens=False).input_ids
            for weight in tables.values():
                weight[row] = weight[words].mean(0)


def new_rows_optimizer(lr: float, first_new: list):
    """An optimiser maker for the engine: AdamW at the run's lr on the LoRA weights, and at ``lr`` on the
    embedding tables, whose pretrained rows (below ``first_new[0]``) get no gradient, so they stay as loaded
    and only the new style rows learn (Adam would normalise a mere gradient scale away)."""
    def make(model, tcfg, no_decay=None):
        emb, rest = [], []
        for p in model.parameters():
            if p.requires_grad:
                (emb if p.dim() == 2 and p.shape[0] > first_new[0] else rest).append(p)
        for p in emb:
            p.register_hook(lambda g: torch.cat([torch.zeros_like(g[:first_new[0]]), g[first_new[0]:]]))
        return torch.optim.AdamW([{"params": rest, "weight_decay": float(tcfg["weight_decay"])},
                                  {"params": emb, "lr": lr, "weight_decay": 0.0}], lr=float(tcfg["lr"]))
    return make


@functools.lru_cache(maxsize=2)
def vocab_pieces(tok) -> tuple[list[str], frozenset]:
    """The tokenizer's pieces by id and the ids that end a verse (newline, end of text), once per tokenizer."""
    return (tok.convert_ids_to_tokens(list(range(len(tok)))),
            frozenset({tok.eos_token_id, *tok("\n", add_special_tokens=False).input_ids}))


def end_word_weights(targets, tok, weight: float):
    """--weigh: per target token, ``weight`` on the tokens of each verse's last word (and the marks after
    it), 1 elsewhere: the tokens a rhyme is made of get ``weight`` times the gradient. Any line counts as a
    verse, so a ``--style text`` line's last word is weighted too."""
    pieces, breaks = vocab_pieces(tok)
    w = torch.ones(targets.shape)
    for r, row in enumerate(targets.tolist()):
        for t in range(len(row) - 1):
            if row[t + 1] not in breaks or row[t] in breaks or row[t] < 0:
                continue
            k = t
            while k > 0 and not any(c.isalpha() for c in pieces[row[k]]):   # marks after the word
                k -= 1
            while k > 0 and pieces[row[k]][:1] not in ("\u0120", "\u2581", " ") and row[k - 1] not in breaks:
                k -= 1   # back to the piece that starts the word (byte-level or SentencePiece space mark)
            w[r, k:t + 1] = weight
    return w


def style_text(scheme_: str, meter: str) -> list[str]:
    """--style text: the style as a plain first line the tokenizer already knows."""
    return [f"Rhyme scheme: {scheme_}. Metre: {meter}.\n"]


def weigh_end_words(lm_training, args) -> None:
    """--weigh: the training loss (not the dev loss: the model is in eval mode there) is the weighted mean
    of :func:`end_word_weights`."""
    from transformers import AutoTokenizer

    from poeval.generators.lm.logits import next_token_logprobs

    tok, plain = AutoTokenizer.from_pretrained(args.base), lm_training._loss_sum

    def weighted(model, input_ids, mask, labels):
        if not model.training:
            return plain(model, input_ids, mask, labels)
        _, logp = next_token_logprobs(model, input_ids, mask, labels[:, 1:])
        w = end_word_weights(labels[:, 1:], tok, args.weigh)[labels[:, 1:] != -100]
        return -(w * logp).sum(), float(w.sum())
    lm_training._loss_sum = weighted


def balanced(path: str, out: str, seed: int = 0) -> str:
    """--balance: the training split resampled (with replacement, seeded) so that aabb, abab, abba, abcb and
    abcd each make a sixth of it and the other schemes together the last sixth."""
    rows = [json.loads(line) for line in open(path)]
    groups = collections.defaultdict(list)
    for r in rows:
        groups[r["scheme"] if r["scheme"] in SHOWN else "other"].append(r)
    rng, each = random.Random(seed), len(rows) // (len(SHOWN) + 1)
    picked = [r for g in sorted(groups) for r in rng.choices(groups[g], k=each)]
    rng.shuffle(picked)
    with open(out, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in picked)
    return out


def patch(args) -> None:
    """Script-only switches, hooked into poeval's training: --plan, --style text, --init words, --emb-lr, --weigh."""
    import poeval.generators.lm.data as lm_data
    import poeval.generators.lm.training as lm_training
    from poeval.generators import engine

    if args.weigh != 1.0:
        weigh_end_words(lm_training, args)
    if args.plan:
        lm_data.quatrain_text = plan_text   # training_texts() builds every training text through it
    if args.style == "text":   # no new tokens, so the embeddings stay frozen (LoRA only)
        lm_data.style_tokens = style_text
        lm_training.add_style_tokens = lambda tok: 0
        apply_lora = lm_training._apply_lora
        lm_training._apply_lora = lambda model, lora, conditioned: apply_lora(model, lora, False)
        return
    first_new = [0]
    sync = lm_training.sync_special_ids   # called right after the embeddings grow by the style tokens

    def grown(model, tok):
        sync(model, tok)
        first_new[0] = min(tok.convert_tokens_to_ids(t) for t in tok.get_added_vocab() if t.startswith("<scheme="))
        if args.init == "words":
            init_from_words(model, tok)
    lm_training.sync_special_ids = grown
    if args.emb_lr is not None:
        engine.optimizer = new_rows_optimizer(args.emb_lr, first_new)


def variant(args) -> dict:
    from poeval.generators import lm
    from poeval.generators.lm.training import train
    from poeval.generators.checkpoint import load

    patch(args)
    if args.balance:
        os.makedirs(args.out, exist_ok=True)
        args.train = balanced(args.train, f"{args.out}/train-balanced.jsonl")
    cfg = {"arch": "llama", "size": "S", "init": "pretrained", "name_or_path": args.base, "conditioned": True,
           "verse_order": args.order, "lora": {"r": 16, "alpha": 16, "dropout": 0.05,
                                               "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"],
                                               "layers": args.layers}}
    tcfg = {"batch_size": 4, "max_steps": args.steps, "lr": 0.002, "warmup_steps": 10, "eval_every": args.steps,
            "eval_quatrains": 50}
    summary = train(args.train, args.dev, f"{args.out}/model", cfg, tcfg, progress=False,
                       name="gemma3-cond" if "gemma" in args.base else "smollm2-cond")
    model, tok = load(f"{args.out}/model")
    model.eval()
    torch.manual_seed(7)
    result = {"best_dev_loss": round(summary["best_dev_loss"], 3), "train_s": round(summary["elapsed_s"])}
    for style in ("aabb", "abab", "abba", None):
        want = args.n * (1 if style else 2)
        if args.plan or args.style == "text":
            cue = f"<scheme={style}>" if args.plan else f"Rhyme scheme: {style}."
            result[style or "none"] = first_line_sample(model, tok, tok.bos_token + (cue if style else ""), want,
                                                        args.temperature, 12 if style else 4)
            print(json.dumps({style or "none": result[style or "none"]}), file=sys.stderr, flush=True)
            continue
        path = f"{args.out}/{style or 'none'}.jsonl"   # poeval's sampler, as the tables' samples
        decoding = {"temperature": args.temperature, "top_p": 1.0, "top_k": 0}
        stats = lm.sample(f"{args.out}/model", decoding, {"n": want, "seed": 7, "max_attempts": 20 * want},
                          path, path.replace(".jsonl", ".stats.json"), progress=False, style=style)
        written = [json.loads(line)["lines"] for line in open(path)]
        result[style or "none"] = shares(written) | {"attempts": stats["attempts"]}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="probe", required=True)
    cap = sub.add_parser("capability")
    cap.add_argument("model")
    cap.add_argument("--scheme", default="aabb")
    cap.add_argument("--chat", action="store_true")
    cap.add_argument("--shots", type=int, default=3)
    cap.add_argument("--temperature", type=float, default=1.0)
    cap.add_argument("--n", type=int, default=20)
    gain = sub.add_parser("scheme-gain")
    gain.add_argument("model")
    gain.add_argument("--n", type=int, default=20)
    gain.add_argument("--dev", default="data/en/dev.jsonl")
    var = sub.add_parser("variant")
    var.add_argument("out")
    var.add_argument("--base", default="models/pretrained/smollm2-135m")
    var.add_argument("--order", choices=["forward", "words"], default="forward")
    var.add_argument("--plan", action="store_true")
    var.add_argument("--style", choices=["tokens", "text"], default="tokens",
                     help="text: the style as a plain first line ('Rhyme scheme: abab. Metre: iambic.')")
    var.add_argument("--init", choices=["random", "words"], default="random",
                     help="words: each style token starts as the mean embedding of words naming it")
    var.add_argument("--emb-lr", type=float, default=None,
                     help="own learning rate for the new style rows; the pretrained rows are then frozen")
    var.add_argument("--weigh", type=float, default=1.0,
                     help="loss weight of each verse's last-word tokens in training (1: unweighted)")
    var.add_argument("--balance", action="store_true",
                     help="train on the split resampled to equal shares of the five shown schemes")
    var.add_argument("--steps", type=int, default=150)
    var.add_argument("--layers", type=int, default=10, help="LoRA on the last N layers (gemma3-cond: 6)")
    var.add_argument("--temperature", type=float, default=1.0, help="of the prompted and unprompted samples")
    var.add_argument("--n", type=int, default=30)
    for p in (cap, var):
        p.add_argument("--train", default="data/en/train.jsonl")
    var.add_argument("--dev", default="data/en/dev.jsonl")
    args = parser.parse_args()
    if args.probe == "variant" and args.style == "text" and (args.init != "random" or args.emb_lr is not None):
        parser.error("--style text adds no style tokens: --init and --emb-lr do not apply")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    probes = {"capability": capability, "scheme-gain": scheme_gain, "variant": variant}
    print(json.dumps(probes[args.probe](args), indent=1))


if __name__ == "__main__":
    main()
