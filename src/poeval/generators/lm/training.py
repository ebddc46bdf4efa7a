"""Training a transformer LM on the quatrains of the train split (through the generators' engine), early
stopping on dev; resumable, bit for bit."""

from __future__ import annotations

from pathlib import Path

from poeval import config, device
from poeval.errors import PoevalError
from poeval.generators import engine
from poeval.generators.checkpoint import VERSE_ORDER, load, max_positions, orient, param_key, sync_special_ids
from poeval.generators.engine import quiet_transformers
from poeval.generators.lm.build import (TRAIN_DEFAULTS, _apply_lora, _base, _build_scratch, add_style_tokens,
                                        resolve_model_cfg, resolve_train_cfg)
from poeval.generators.lm.data import quatrain_text, read_split, training_texts
from poeval.generators.lm.logits import next_token_logprobs
from poeval.stamps import train_stamp




def encode_quatrains(
    tokenizer, quatrains: list[list[str]], max_len: int | None, styles: list[list[str]] | None = None
) -> tuple[list[list[int]], int]:
    """The token ids a model is trained on, one list per quatrain (:func:`training_texts` tokenized with no
    special tokens added), each cut to ``max_len`` tokens when given, and how many were cut."""
    texts = training_texts(tokenizer, quatrains, styles)
    ids = tokenizer(texts, add_special_tokens=False)["input_ids"]
    truncated = 0
    if max_len:
        for i, seq in enumerate(ids):
            if len(seq) > max_len:
                ids[i] = seq[:max_len]
                truncated += 1
    return ids, truncated


def _collate(seqs: list[list[int]], pad_id: int):
    import torch

    width = max(len(s) for s in seqs)
    input_ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        input_ids[i, : len(s)] = torch.tensor(s, dtype=torch.long)
        mask[i, : len(s)] = 1
    labels = input_ids.masked_fill(mask == 0, -100)
    return input_ids, mask, labels


def _loss_sum(model, input_ids, mask, labels):
    """Summed next-token cross-entropy and the number of predicted tokens; the output layer runs on the
    predicted positions only (:func:`~poeval.generators.lm.logits.next_token_logprobs`), not on every one."""
    dev = device.of(model)
    input_ids, mask, labels = input_ids.to(dev), mask.to(dev), labels.to(dev)
    _, logp = next_token_logprobs(model, input_ids, mask, labels[:, 1:])
    return -logp.sum(), len(logp)


def _dev_loss(model, dev_ids: list[list[int]], pad_id: int, batch_size: int) -> float:
    import torch

    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(dev_ids), batch_size):
            loss, n = _loss_sum(model, *_collate(dev_ids[start : start + batch_size], pad_id))
            total += float(loss)
            count += n
    model.train()
    return total / max(count, 1)


def train(
    train: str,
    dev: str,
    out_dir: str,
    model_cfg: dict,
    train_cfg: dict,
    threads: int = 1,
    progress: bool = True,
    *,
    name: str | None = None,
) -> dict:
    """Train a causal LM on the quatrains of ``train`` through :func:`poeval.generators.engine.run`; keep
    the checkpoint with the best dev loss.

    ``out_dir`` receives the best model and its tokenizer (``save_pretrained``) and ``training_log.json``,
    written atomically. ``name`` is the model's key in the config, used in error messages. An interrupted
    run called again with the same arguments resumes (:func:`resume_dir`) and gives the same checkpoint,
    bit for bit. Returns the log's summary.

    ``train_cfg`` ``"none"`` (params ``models.<system>.training: none``) trains nothing: the pretrained
    model is saved as loaded, with the dev loss it has (measured once, with the schema's training defaults
    for the dev quatrains and batch) and 0 steps in the log.
    """
    untrained = train_cfg == config.UNTRAINED
    tcfg = TRAIN_DEFAULTS if untrained else resolve_train_cfg(train_cfg)
    # an untrained model's entry meets the rules of training: none (config.RULES: pretrained, no style, no LoRA)
    cfg = resolve_model_cfg({**model_cfg, "training": train_cfg} if untrained else model_cfg, name)
    # api chat conditions by prompt (poeval.generators.prompting): no style tokens join its vocabulary
    init, conditioned = cfg["init"], cfg["conditioned"] and cfg["api"] != "chat"
    train_q, train_styles = read_split(train, "train", conditioned, name)
    dev_q, dev_styles = read_split(dev, "dev", conditioned, name)
    order = cfg["verse_order"]
    train_q, dev_q = [orient(q, order) for q in train_q], [orient(q, order) for q in dev_q]
    dev_q = dev_q[: tcfg["eval_quatrains"]]
    dev_styles = dev_styles[: tcfg["eval_quatrains"]] if dev_styles is not None else None

    rng = engine.seed(tcfg["seed"], threads)
    base = None
    if init == "pretrained":
        # fail before any training work if the model cannot be loaded
        with quiet_transformers(progress):
            model, tokenizer = load(cfg["name_or_path"], name=name, tokenizer=cfg["tokenizer"])
        if conditioned and add_style_tokens(tokenizer):
            model.resize_token_embeddings(len(tokenizer))
            sync_special_ids(model, tokenizer)
        base = _base(cfg["name_or_path"])
        recorded = getattr(model.config, VERSE_ORDER, None)   # a hub model records none: either order is fine
        if untrained:   # ...to fine-tune; kept as it is, it writes forward
            recorded = recorded or "forward"
        if recorded is not None and recorded != order:
            raise PoevalError(f"{param_key(name, 'verse_order')} is {order!r}, but {cfg['name_or_path']} was "
                              f"trained {recorded!r}")
    else:
        texts = [quatrain_text(q, "", "") for q in train_q]  # tokenizer sees TRAIN text only, no style tokens
        model, tokenizer = _build_scratch(cfg, texts)
    if order != "forward":
        setattr(model.config, VERSE_ORDER, order)   # saved in config.json: the sampler turns verses back
    if cfg["lora"] is not None:   # pretrained only (config.RULES)
        model = _apply_lora(model, cfg["lora"], conditioned)
    model.to(device.resolve())

    max_len = max_positions(model)
    train_ids, n_trunc = encode_quatrains(tokenizer, train_q, max_len, train_styles)
    dev_ids, n_trunc_dev = encode_quatrains(tokenizer, dev_q, max_len, dev_styles)
    pad_id = tokenizer.pad_token_id

    def loss(batch: list[int]):
        input_ids, mask, labels = _collate([train_ids[i] for i in batch], pad_id)
        loss_sum, n_tok = _loss_sum(model, input_ids, mask, labels)
        return loss_sum / max(n_tok, 1), {"loss": loss_sum.item(), "targets": n_tok, "tokens": int(mask.sum())}

    def evaluate() -> dict:
        return {"dev_loss": _dev_loss(model, dev_ids, pad_id, 2 * tcfg["batch_size"])}

    if untrained:
        result = engine.untouched(evaluate)
    else:
        loop = engine.Loop(
            model=model,
            stream=engine.BatchStream([len(s) for s in train_ids], tcfg["batch_size"],
                                      int(tcfg["length_grouping"] or 0), rng),
            loss=loss,
            evaluate=evaluate,
            train_entry=lambda run: {"train_loss": run.get("loss", 0.0) / max(run.get("targets", 0), 1)},
        )
        key = engine.fingerprint({"train": train, "dev": dev}, {"model_cfg": cfg, "train_cfg": tcfg,
                                                                "threads": int(threads)})
        result = engine.run(loop, tcfg, engine.Resume(out_dir, key), progress)

    trainable = 0 if untrained else sum(p.numel() for p in model.parameters() if p.requires_grad)
    if cfg["lora"] is not None and hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()  # a plain checkpoint that load() reads without peft
    summary = {
        "n_params": sum(p.numel() for p in model.parameters()),
        "trainable_params": trainable,
        "n_train": len(train_ids),
        "n_dev_eval": len(dev_ids),
        "mean_tokens_per_quatrain": sum(map(len, train_ids)) / len(train_ids),
        "truncated_train": n_trunc,
        "truncated_dev": n_trunc_dev,
        "vocab_size": len(tokenizer),
        "threads": int(threads),
        **({"base": base} if base else {}),
    }

    def write(tmp: Path) -> None:
        with quiet_transformers(progress):
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)

    log = engine.training_log(result, summary, train_stamp(train, dev, model_cfg, train_cfg,
                                                                 base=base and base["path"]),
                              model_cfg=model_cfg, train_cfg=train_cfg if untrained else tcfg)
    engine.write_checkpoint(out_dir, write, log)
    return log["summary"]
