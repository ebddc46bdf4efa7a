"""The structured discriminator (the original's ``CNN`` in ``models.py``): each of a quatrain's four
end words is read by a character-level LSTM; the cosine similarities of the four encodings form a 4 x 4
matrix, which two 2 x 2 convolutions (4, then 8 channels, ReLU) and a linear layer score as real or
generated. It sees only the similarity matrix, so it can only judge the rhyme structure. It is trained
with Adam at 1e-4 on one real and one generated quatrain at a time (``update_discriminator``,
``solvers_merged.py`` ``train``).

With ``rhyme_pretrain: pronunciation`` (the default) the character encoder is pretrained on a pronouncing
dictionary (:func:`pretrain_encoder`; the original pretrains it as a spelling autoencoder, which
``rhyme_pretrain: autoencoder`` does: :mod:`.autoencoder`): CMUdict via ``pronouncing`` for English (archaic
spellings looked up under the modern ones poeval's rhyme detector tries), espeak-ng via
``poeval.poetry.phones.phones`` for German. Each word's *rhyme part* is its phones from the last stressed
vowel (primary, or a later secondary one) to the end. The objective is pairwise: for a batch of word pairs
sharing a rhyme part plus random other words, the scaled cosine similarity of every (left, right) pair is
trained with a class-balanced logistic loss to say whether the two words share the rhyme part. Words
without a pronunciation are counted (``pron_missing``) and skipped."""

from __future__ import annotations

import collections
import functools
import random
from typing import Callable, Iterable

from poeval.errors import PoevalError
from poeval.generators.poetic.adversary.settings import ARCH, N_LINES


@functools.lru_cache(maxsize=None)
def _model_classes():
    """The torch modules (defined on first use, so importing this module does not import torch)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class CharEncoder(nn.Module):
        """Reads a word's characters left to right; the last state (after the word's final letter, where
        rhyme lives) is the word's encoding: the hidden state projected to ``out_dim`` (``projected``), or the
        cell state as it is (``cell``, the original's ``Model.encode``). ``dim``: the encoding's size."""

        def __init__(self, n_chars: int, char_emb: int, hidden: int, out_dim: int, encoding: str = "projected"):
            super().__init__()
            self.emb = nn.Embedding(n_chars, char_emb, padding_idx=0)
            self.lstm = nn.LSTM(char_emb, hidden, batch_first=True)
            self.cell = encoding == "cell"
            self.out = None if self.cell else nn.Linear(hidden, out_dim)
            self.dim = hidden if self.cell else out_dim

        def forward(self, chars, lengths):
            packed = nn.utils.rnn.pack_padded_sequence(self.emb(chars), lengths.cpu(), batch_first=True,
                                                       enforce_sorted=False)
            _, (h, c) = self.lstm(packed)
            return c[-1] if self.cell else self.out(h[-1])

    class RhymeDiscriminator(nn.Module):
        """Real-vs-generated logit from the cosine-similarity matrix of the end words only."""

        def __init__(self, n_chars: int, char_emb: int, char_hidden: int, rhyme_dim: int, n_lines: int = N_LINES,
                     encoding: str = "projected"):
            super().__init__()
            self.n_lines = n_lines
            self.encoder = CharEncoder(n_chars, char_emb, char_hidden, rhyme_dim, encoding)
            self.conv1 = nn.Conv2d(1, 4, kernel_size=2)
            self.conv2 = nn.Conv2d(4, 8, kernel_size=2)
            self.scorer = nn.Linear(8 * (n_lines - 2) ** 2, 1)

        def similarity(self, chars, lengths):
            """(B, n, n) cosine similarities; ``chars`` holds B * n words, poem by poem."""
            e = F.normalize(self.encoder(chars, lengths), dim=-1)
            e = e.view(-1, self.n_lines, e.shape[-1])
            return e @ e.transpose(1, 2)

        def forward(self, chars, lengths):
            s = self.similarity(chars, lengths).unsqueeze(1)
            s = torch.relu(self.conv2(torch.relu(self.conv1(s))))
            return self.scorer(s.flatten(1)).squeeze(-1)

    return CharEncoder, RhymeDiscriminator


def build(cfg: dict, n_chars: int):
    return _model_classes()[1](n_chars, cfg["char_emb"], cfg["char_hidden"], cfg["rhyme_dim"],
                               encoding=cfg["rhyme_encoding"])


class CharVocab:
    """Characters of the end words: 0 = padding, 1 = unknown."""

    def __init__(self, chars: Iterable[str], max_len: int):
        self.itos = ["<pad>", "<unk>", *sorted(set(chars) - {"<pad>", "<unk>"})]
        self.stoi = {c: i for i, c in enumerate(self.itos)}
        self.max_len = int(max_len)

    @classmethod
    def from_words(cls, words: Iterable[str], max_len: int) -> "CharVocab":
        return cls({c for w in words for c in w}, max_len)

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, words: list[str]):
        """(N, L) char ids and (N,) lengths; the last ``max_len`` characters of each word, an empty word
        as one unknown character."""
        import torch

        rows = [[self.stoi.get(c, 1) for c in w[-self.max_len:]] or [1] for w in words]
        width = max(len(r) for r in rows)
        chars = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            chars[i, : len(r)] = torch.tensor(r)
        return chars, torch.tensor([len(r) for r in rows], dtype=torch.long)



# --------------------------------------------------------------------------------------------------
# pronouncing dictionary


def _phones_en(word: str):
    """CMUdict phones of a word as (symbol, is_vowel, stress) triples, or None. Archaic and elided
    spellings (``conquer'd``, ``o'er``, ``-eth``) are looked up under the modern spellings that poeval's
    rhyme detector tries (CMUdict only: no grapheme-to-phoneme guessing)."""
    import pronouncing

    from poeval.poetry.spelling import en_candidates

    word = word.replace("’", "'")
    prons: list[str] = []
    for cand in en_candidates(word):
        prons = pronouncing.phones_for_word(cand)
        if prons:
            break
    if not prons:
        return None
    out = []
    for ph in prons[0].split():
        digit = ph[-1] if ph[-1].isdigit() else None
        out.append((ph.rstrip("012"), digit is not None, int(digit) if digit in ("1", "2") else 0))
    return out


def _phones_de(word: str):
    """espeak-ng phones (poeval's rhyme detector) of a German word, or None."""
    from poeval.poetry.phones import phones
    from poeval.poetry.spelling import clean_word

    w = clean_word(word, "de")
    if not w:
        return None
    alts = phones(w, "de")
    return list(alts[0]) if alts and alts[0] else None


def rhyme_part(phones) -> str | None:
    """Phones from the last stressed vowel to the end of the word, space-joined: the last primary stress,
    or a secondary stress after it (compounds: German ``Ábendrö̀te``, English ``níghtingàle``), else the
    last vowel; None without a vowel."""
    if not phones:
        return None
    vowels = [i for i, (_, v, _) in enumerate(phones) if v]
    if not vowels:
        return None
    stressed = [i for i in vowels if phones[i][2] in (1, 2)]
    primary = [i for i in vowels if phones[i][2] == 1]
    if primary:
        start = max(i for i in stressed if i >= primary[-1])
    else:
        start = (stressed or vowels)[-1]
    return " ".join(sym for sym, _, _ in phones[start:])


def pronunciations(words: Iterable[str], lang: str) -> tuple[dict[str, str], list[str]]:
    """Rhyme parts of ``words`` from the language's pronouncing dictionary, and the words it lacks."""
    if lang == "en":
        lookup: Callable = _phones_en
    elif lang == "de":
        from poeval.poetry.espeak import check_phonemizer

        check_phonemizer()
        lookup = _phones_de
    else:
        raise PoevalError(f"unsupported language {lang!r} for {ARCH}; use en or de")
    parts, missing = {}, []
    for w in words:
        rp = rhyme_part(lookup(w)) if w and any(c.isalpha() for c in w) else None
        if rp is None:
            missing.append(w)
        else:
            parts[w] = rp
    return parts, missing


def pretrain_encoder(encoder, chars: CharVocab, words: list[str], lang: str, *, steps: int, pairs: int, lr: float,
                     rng: random.Random, progress: bool = False) -> dict:
    """Pretrain the character encoder so that words sharing a rhyme part (pronouncing dictionary) have
    similar encodings: pairwise logistic loss on the scaled cosine similarity, positives and negatives
    weighted equally. Words without a pronunciation are counted and skipped. Returns a summary."""
    import torch
    import torch.nn.functional as F
    from poeval.progress import progress_bar

    words = sorted(dict.fromkeys(w for w in words if w))
    parts, missing = pronunciations(words, lang)
    groups: dict[str, list[str]] = collections.defaultdict(list)
    for w in words:
        if w in parts:
            groups[parts[w]].append(w)
    multi = [g for _, g in sorted(groups.items()) if len(g) >= 2]
    covered = [w for w in words if w in parts]
    summary = {"pron_words": len(words), "pron_covered": len(covered), "pron_missing": len(missing),
               "pron_missing_examples": missing[:20], "pron_rhyme_parts": len(groups),
               "pron_rhyme_groups": len(multi), "pron_steps": 0, "pron_loss": None,
               "pron_pos_cos": None, "pron_neg_cos": None}
    if not multi or steps == 0:
        return summary

    scale = torch.nn.Parameter(torch.tensor(5.0))
    bias = torch.nn.Parameter(torch.tensor(-2.0))
    opt = torch.optim.Adam([*encoder.parameters(), scale, bias], lr=lr)

    def batch(r: random.Random):
        left, right = [], []
        for _ in range(pairs):
            a, b = r.sample(r.choice(multi), 2)
            left.append(a)
            right.append(b)
        right += [r.choice(covered) for _ in range(pairs)]
        target = torch.tensor([[float(parts[a] == parts[b]) for b in right] for a in left])
        return left, right, target

    def cosines(left, right):
        el = F.normalize(encoder(*chars.encode(left)), dim=-1)
        er = F.normalize(encoder(*chars.encode(right)), dim=-1)
        return el @ er.T

    eval_batch = batch(random.Random(rng.random()))
    encoder.train()
    recent: collections.deque = collections.deque(maxlen=50)
    for _ in progress_bar(range(steps), desc="sa: rhyme encoder", unit="step", progress=progress, leave=False):
        left, right, target = batch(rng)
        logits = scale * cosines(left, right) + bias
        per = F.binary_cross_entropy_with_logits(logits, target, reduction="none")
        pos = target.sum().clamp(min=1)
        loss = (per * target).sum() / pos + (per * (1 - target)).sum() / (1 - target).sum().clamp(min=1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        recent.append(loss.item())
    with torch.no_grad():
        left, right, target = eval_batch
        cos = cosines(left, right)
    summary.update(pron_steps=steps, pron_loss=sum(recent) / len(recent),
                   pron_pos_cos=float(cos[target > 0].mean()), pron_neg_cos=float(cos[target == 0].mean()))
    return summary




def update(disc, optimizer, chars: CharVocab, real: list[tuple[str, ...]], fake: list[tuple[str, ...]]) -> dict:
    """One discriminator step on real and generated endings, loss -log D(real) - log(1 - D(fake)) summed
    (the original's ``update_discriminator``). Returns the loss and D(fake) before the step: the
    generated quatrains' rewards."""
    import torch
    import torch.nn.functional as F

    labels = torch.tensor([1.0] * len(real) + [0.0] * len(fake))
    disc.train()
    logits = disc(*chars.encode([w for p in [*real, *fake] for w in p]))
    loss = F.binary_cross_entropy_with_logits(logits, labels, reduction="sum")
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return {"disc_loss": loss.item(), "reward": torch.sigmoid(logits[len(real):].detach()).tolist(),
            "disc_acc": float(((logits > 0).float() == labels).float().mean())}
