"""Scratch-trained masked language models (BERT-style) on the quatrain train split, for BPoMP's masked
scorer.

* Tokenizer: WordPiece trained on the train split only (``tokenizers``), lower-cased BERT normalisation,
  saved as a ``PreTrainedTokenizerFast`` with ``[PAD] [UNK] [CLS] [SEP] [MASK]``. A line break becomes
  the token ``¶`` (the normaliser maps ``"\\n"`` to it, offsets still point at the ``"\\n"``), so the model
  sees where lines, and thus rhyme positions, end; plain BERT pre-tokenisation would drop it. Pieces
  inside a word carry no ``##`` marker: with one, the ``tokenizers`` trainer numbers the initial
  word-inner pieces in hash-map order, ties between merges then break differently from run to run and
  the vocabulary is not reproducible. Word boundaries (``word_ids``) come from the pre-tokeniser.
* Model: ``BertForMaskedLM`` sized by the config (default 2 layers x 128, about 1.5M parameters).
* Objective: 15 % of the non-special tokens of each quatrain (lines joined with ``"\\n"``) are selected;
  80 % of those become ``[MASK]``, 10 % a random token, 10 % stay. Only the selected positions go through
  the output layer. The dev loss uses one fixed masking of the dev quatrains, so evaluations compare.
* Seeded (weights, batch order, masking): the same inputs, config and thread count give the same weights.
* Trained by the generators' engine (:mod:`poeval.generators.engine`), like :func:`poeval.generators.lm.training.train`:
  early stopping on the dev MLM loss (``patience`` evaluations without improvement; the best weights
  are kept), resumable after an interruption (bit-identical), the checkpoint directory (model, tokenizer,
  ``training_log.json`` with losses, tokens/s and the provenance stamp) written atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from poeval import config, device
from poeval.errors import PoevalError
from poeval.generators import engine
from poeval.generators.engine import quiet_transformers
from poeval.generators.lm.data import read_quatrains
from poeval.stamps import stamp

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
NEWLINE = "¶"

# the schema's bpomp.mlm entry ($defs/mlm) holds the defaults: 2 layers x 128, 800 steps; patience 0: no
# early stopping
MLM_DEFAULTS: dict[str, Any] = config.defaults("#/$defs/mlm")


def resolve_config(cfg: dict | None, name: str | None = None) -> dict:
    """``cfg`` over :data:`MLM_DEFAULTS` (a null value takes the default, except intermediate_size),
    checked against the schema (unknown keys rejected) and its rules."""
    where = f"bpomp.mlm.{name}" if name else "mlm config"
    cfg = dict(cfg or {})
    out = {**MLM_DEFAULTS, **{k: v for k, v in cfg.items() if v is not None or k == "intermediate_size"}}
    config.check(out, "#/$defs/mlm", where)
    return out


def quatrain_text(lines: list[str]) -> str:
    return "\n".join(lines)


def train_tokenizer(texts: list[str], vocab_size: int):
    """A WordPiece tokenizer (BERT-style, lower-cased) trained on ``texts``; line breaks become ``¶``."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", continuing_subword_prefix=""))
    tok.normalizer = normalizers.Sequence([
        normalizers.Replace("\n", f" {NEWLINE} "),
        normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True),
    ])
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=int(vocab_size), min_frequency=2, special_tokens=list(SPECIALS),
                                        initial_alphabet=[NEWLINE], continuing_subword_prefix="",
                                        show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")


def build_model(cfg: dict, tokenizer):
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(
        vocab_size=len(tokenizer), hidden_size=cfg["n_embd"], num_hidden_layers=cfg["n_layer"],
        num_attention_heads=cfg["n_head"], intermediate_size=cfg["intermediate_size"] or 4 * cfg["n_embd"],
        max_position_embeddings=cfg["n_positions"], hidden_dropout_prob=float(cfg["dropout"]),
        attention_probs_dropout_prob=float(cfg["dropout"]), pad_token_id=tokenizer.pad_token_id,
        type_vocab_size=1,
    )
    return BertForMaskedLM(config)


def _encode(tokenizer, quatrains: list[list[str]], max_len: int) -> tuple[list[list[int]], int]:
    ids = tokenizer([quatrain_text(q) for q in quatrains])["input_ids"]
    truncated = 0
    for i, seq in enumerate(ids):
        if len(seq) > max_len:  # keep [SEP] at the end
            ids[i] = seq[: max_len - 1] + seq[-1:]
            truncated += 1
    return ids, truncated


def mask_batch(seqs: list[list[int]], tokenizer, mask_prob: float, generator):
    """Padded ``(input_ids, attention_mask, labels)`` with BERT's 80/10/10 masking of ``mask_prob`` of the
    non-special tokens (at least one per sequence); ``labels`` is -100 where nothing is predicted."""
    import torch

    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), tokenizer.pad_token_id, dtype=torch.long)
    att = torch.zeros((len(seqs), width), dtype=torch.long)
    for r, s in enumerate(seqs):
        ids[r, : len(s)] = torch.tensor(s, dtype=torch.long)
        att[r, : len(s)] = 1
    special = torch.zeros_like(ids, dtype=torch.bool)
    for sid in tokenizer.all_special_ids:
        special |= ids == sid
    candidates = (att == 1) & ~special
    u = torch.rand(ids.shape, generator=generator)
    selected = candidates & (u < mask_prob)
    # a sequence with nothing selected gets its candidate with the smallest draw
    none = ~selected.any(dim=1) & candidates.any(dim=1)
    if none.any():
        first = torch.where(candidates, u, torch.full_like(u, 2.0)).argmin(dim=1)
        selected[none, first[none]] = True
    labels = torch.where(selected, ids, torch.full_like(ids, -100))
    action = torch.rand(ids.shape, generator=generator)
    randoms = torch.randint(len(tokenizer), ids.shape, generator=generator)
    inputs = ids.clone()
    inputs[selected & (action < 0.8)] = tokenizer.mask_token_id
    swap = selected & (action >= 0.8) & (action < 0.9)
    inputs[swap] = randoms[swap]
    return inputs, att, labels


def _loss_sum(model, inputs, att, labels):
    """Summed cross-entropy over the selected positions (only they go through the output layer)."""
    import torch.nn.functional as F

    dev = device.of(model)
    inputs, att, labels = inputs.to(dev), att.to(dev), labels.to(dev)
    hidden = model.bert(input_ids=inputs, attention_mask=att).last_hidden_state
    sel = labels != -100
    logits = model.cls(hidden[sel])
    target = labels[sel]
    return F.cross_entropy(logits.float(), target, reduction="sum"), int(target.numel())


def _dev_loss(model, dev_batches) -> float:
    import torch

    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for batch in dev_batches:
            loss, n = _loss_sum(model, *batch)
            total += float(loss)
            count += n
    model.train()
    return total / max(count, 1)


def train_mlm(train: str, dev: str, out_dir: str, cfg: dict | None = None, threads: int = 1, progress: bool = True,
              *, name: str | None = None) -> dict:
    """Train a masked LM from scratch on the quatrains of ``train`` (early stopping on ``dev``) through the
    engine; write the best checkpoint, its tokenizer and ``training_log.json`` to ``out_dir`` atomically.
    Returns the summary."""
    import torch

    c = resolve_config(cfg, name)
    if not isinstance(threads, int) or threads < 1:
        raise PoevalError(f"threads must be a positive integer, got {threads!r}")
    train_q = read_quatrains(train, "train")
    dev_q = read_quatrains(dev, "dev")[: c["eval_quatrains"]]

    rng = engine.seed(c["seed"], threads)
    gen = torch.Generator().manual_seed(int(c["seed"]))   # the masking of training batches
    with quiet_transformers(progress):
        tokenizer = train_tokenizer([quatrain_text(q) for q in train_q], c["vocab_size"])
        model = build_model(c, tokenizer)
    model.to(device.resolve())
    train_ids, n_trunc = _encode(tokenizer, train_q, c["n_positions"])
    dev_ids, n_trunc_dev = _encode(tokenizer, dev_q, c["n_positions"])
    dev_gen = torch.Generator().manual_seed(int(c["seed"]) + 1)
    bs = c["batch_size"]
    dev_batches = [mask_batch(dev_ids[s : s + 2 * bs], tokenizer, c["mask_prob"], dev_gen)
                   for s in range(0, len(dev_ids), 2 * bs)]

    def loss(batch: list[int]):
        inputs, att, labels = mask_batch([train_ids[i] for i in batch], tokenizer, c["mask_prob"], gen)
        loss_sum, n = _loss_sum(model, inputs, att, labels)
        return loss_sum / max(n, 1), {"loss": loss_sum.item(), "targets": n, "tokens": int(att.sum())}

    loop = engine.Loop(
        model=model, stream=engine.BatchStream([len(s) for s in train_ids], bs, 0, rng), loss=loss,
        evaluate=lambda: {"dev_loss": _dev_loss(model, dev_batches)},
        train_entry=lambda run: {"train_loss": run.get("loss", 0.0) / max(run.get("targets", 0), 1)},
        rngs={"masking": gen}, desc="train-mlm",
    )
    key = engine.fingerprint({"train": train, "dev": dev}, {"config": c, "threads": threads})
    result = engine.run(loop, c, engine.Resume(out_dir, key), progress)
    model.eval()
    summary = {
        "n_params": sum(p.numel() for p in model.parameters()), "n_train": len(train_ids),
        "n_dev_eval": len(dev_ids), "mean_tokens_per_quatrain": sum(map(len, train_ids)) / len(train_ids),
        "truncated_train": n_trunc, "truncated_dev": n_trunc_dev, "vocab_size": len(tokenizer),
        "threads": threads,
    }

    def write(tmp: Path) -> None:
        with quiet_transformers(progress):
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)

    log = engine.training_log(result, summary, stamp({"train": train, "dev": dev}, {"mlm": cfg}),
                              config=c, name=name, objective="masked")
    engine.write_checkpoint(out_dir, write, log)
    return log["summary"]
