"""What the two poetry-specific generators (DeepSpeare, Structured Adversary) share: the word vocabulary
and tokenisation, word2vec initialisation, ancestral sampling filters, quatrain assembly and the
checkpoint format.

A checkpoint directory holds ``poeval_model.json`` (``{"arch", "config", "vocab"}``), ``weights.pt``
(a dict of named state dicts, e.g. ``{"lm": ..., "rhyme": ...}``) and ``training_log.json`` (same keys
as the transformer generators': ``evals``, ``summary``, ``model_cfg``, ``train_cfg``). It is written to a
temporary sibling directory and renamed into place, like every poeval checkpoint.
"""

from __future__ import annotations

import collections
import dataclasses
import importlib
import math
import re
import zlib
from pathlib import Path
from typing import Any, Callable, Iterable

from poeval import config, hub
from poeval.errors import PoevalError
from poeval.generators.checkpoint import MANIFEST   # the registry tells a port's checkpoint by it too
from poeval.generators.interface import TrainInputs
from poeval.io import read_json_object, read_jsonl, write_json
from poeval.sections import Section
from poeval.text import verse_end, verse_problem

WEIGHTS = "weights.pt"

PAD, UNK, BOS, EOS, EOL = "<pad>", "<unk>", "<bos>", "<eos>", "<eol>"
SPECIALS = (PAD, UNK, BOS, EOS, EOL)

# words keep inner apostrophes and hyphens ("e'er", "well-known"); every other non-space character
# is a token of its own, so punctuation is modelled and rejoined without losing it
_TOKEN_RE = re.compile(r"\w+(?:['’\-]\w+)*|[^\w\s]", re.UNICODE)
_NO_SPACE_BEFORE = set(",.;:!?)]}’”'»")
_NO_SPACE_AFTER = set("([{“‘„«¿¡")


def train_cfg(defaults: dict, overrides: dict | None, rules: str | None = None) -> dict:
    """A port's training params: ``overrides`` over its ``defaults`` (the schema's), checked against the
    schema. The LM-only keys are refused: a port batches whole poems, so they would be silently ignored."""
    problems = config.rule_problems("port_train", overrides or {}, "training")
    if problems:
        raise PoevalError("invalid training:\n  - " + "\n  - ".join(problems))
    tcfg = {**defaults, **(overrides or {})}
    config.check(tcfg, "#/$defs/train", "training", rules=rules)
    return tcfg


def port_fit(package: str, arch: str) -> Callable[..., dict]:
    """A port's ``fit`` (the generator interface, :mod:`poeval.generators.interface`): the ``train`` of its
    ``package`` (looked up at each call, as any module attribute) on
    the split's pseudo-sonnets in ``lang`` (its pronouncing dictionary), with word2vec vectors when given;
    without either, a one-line error naming the options."""

    def fit(inputs: TrainInputs, out_dir: str, model_cfg: dict, train_cfg: dict | str, *, lang: str | None,
            name: str | None = None, threads: int = 1, progress: bool = True) -> dict:
        if not inputs.sonnets or not lang:
            raise PoevalError(f"arch {arch} trains on pseudo-sonnets: give --sonnets and --lang")
        train = importlib.import_module(package).train
        return train(inputs.sonnets, inputs.dev, out_dir, model_cfg, train_cfg, lang=lang, word2vec=inputs.word2vec,
                     threads=threads, name=name, progress=progress)

    return fit


def draw(probs, k: int = 1):
    """``k`` independent draws (with replacement) per row of next-token probabilities ``probs`` (B, V), rows
    summing to > 0: inverse-CDF sampling with one uniform per draw, equivalent to
    ``torch.multinomial(probs, k, replacement=True)`` but about ten times faster on CPU for large
    vocabularies. A zero-probability token is never drawn: its cumulative sum equals its predecessor's, and a
    uniform that rounds up to the row's total (so ``searchsorted`` overflows) takes the row's last token of
    positive probability, not the last column. The one sampler of both ports."""
    import torch

    cdf = probs.cumsum(-1)
    u = torch.rand(probs.shape[0], k, dtype=cdf.dtype) * cdf[:, -1:]
    idx = torch.searchsorted(cdf, u, right=True)
    over = idx >= probs.shape[-1]
    if bool(over.any()):
        last = probs.shape[-1] - 1 - (probs > 0).flip(-1).float().argmax(-1, keepdim=True)
        idx = torch.where(over, last.expand_as(idx), idx)
    return idx


def tokenize(line: str) -> list[str]:
    """The word-level tokens of one verse (case kept: the metrics compare text as written)."""
    return _TOKEN_RE.findall(line)


def detokenize(tokens: Iterable[str]) -> str:
    """Join tokens into a verse: no space before closing punctuation or after opening punctuation."""
    return _detokenize(tokens)[0]


def _detokenize(tokens: Iterable[str]) -> tuple[str, list[int]]:
    """:func:`detokenize`'s verse and the offset at which each token starts in it."""
    out, starts = "", []
    for tok in tokens:
        if out and tok not in _NO_SPACE_BEFORE and out[-1] not in _NO_SPACE_AFTER:
            out += " "
        starts.append(len(out))
        out += tok
    return out, starts


def is_word(token: str) -> bool:
    return any(ch.isalpha() for ch in token)


def end_word(tokens: list[str]) -> str | None:
    """The end word of a tokenised verse, the one rhyme is judged on: :func:`poeval.text.verse_end` of the
    verse as :func:`detokenize` writes it (its last word; a line number, a dash run, a bracket, a quote or a
    footnote mark after it skipped), spelled as written (apostrophes kept as they are, so that it is the
    verse's own token), None when the verse has no word."""
    verse = detokenize(tokens)
    span = verse_end(verse).span
    return verse[span[0]:span[1]].replace("[", "").replace("]", "") if span else None


def end_token_index(tokens: list[str]) -> int | None:
    """Index in ``tokens`` of the token that ends the verse's end word (:func:`end_word`), None without one."""
    verse, starts = _detokenize(tokens)
    span = verse_end(verse).span
    if span is None:
        return None
    return max(i for i, start in enumerate(starts) if start < span[1])


# --------------------------------------------------------------------------------------------------
# vocabulary


class Vocab:
    """Word vocabulary: the specials, then words of the training split by falling count (ties
    alphabetical, so the ids never depend on file order beyond the counts)."""

    def __init__(self, itos: list[str]):
        self.itos = list(itos)
        self.stoi = {w: i for i, w in enumerate(self.itos)}
        missing = [s for s in SPECIALS if s not in self.stoi]
        if missing:
            raise PoevalError(f"vocabulary lacks the special tokens {missing}")

    @classmethod
    def build(cls, lines: Iterable[list[str]], min_count: int = 2, max_size: int | None = None,
              extra: Iterable[str] = ()) -> "Vocab":
        counts = collections.Counter(tok for toks in lines for tok in toks)
        words = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
        if max_size is not None:
            words = words[: max(0, max_size - len(SPECIALS) - len(tuple(extra)))]
        return cls([*SPECIALS, *extra, *words])

    def __len__(self) -> int:
        return len(self.itos)

    def id(self, token: str) -> int:
        return self.stoi.get(token, self.stoi[UNK])

    def ids(self, tokens: Iterable[str]) -> list[int]:
        return [self.id(t) for t in tokens]

    def __getitem__(self, i: int) -> str:
        return self.itos[i]

    @property
    def pad(self) -> int:
        return self.stoi[PAD]

    @property
    def unk(self) -> int:
        return self.stoi[UNK]

    @property
    def bos(self) -> int:
        return self.stoi[BOS]

    @property
    def eos(self) -> int:
        return self.stoi[EOS]

    @property
    def eol(self) -> int:
        return self.stoi[EOL]


# --------------------------------------------------------------------------------------------------
# data


def read_poems(path: str | Path, role: str) -> list[list[str]]:
    """The poems (lists of verses) of a JSONL file: pseudo-sonnets or quatrains, each ``{"lines": [...]}``."""
    poems = []
    for i, record in enumerate(read_jsonl(path)):
        lines = record.get("lines") if isinstance(record, dict) else None
        if not isinstance(lines, list) or not lines or not all(isinstance(x, str) for x in lines):
            raise PoevalError(f"{path}: record {i + 1} has no non-empty 'lines' list of strings")
        poems.append(lines)
    if not poems:
        raise PoevalError(f"{role} file {path} contains no poems")
    return poems


# --------------------------------------------------------------------------------------------------
# word2vec


def _stable_hash(text: str) -> int:
    # gensim seeds each word's initial vector with hash(word + seed); Python's str hash changes per
    # process (PYTHONHASHSEED), which would make the vectors differ between identical runs
    return zlib.crc32(text.encode("utf-8"))


@dataclasses.dataclass(frozen=True)
class Word2Vec(Section):
    """Params ``poetic.word2vec``: the vectors the poetry-specific generators start their embeddings from."""

    POINTER, WHERE = "#/properties/poetic/properties/word2vec", "poetic.word2vec"
    impl: str
    dim: int
    window: int
    min_count: int
    sg: bool
    sample: float
    epochs: int
    seed: int


def train_word2vec(sentences: list[list[str]], out: str | Path, cfg: Word2Vec) -> dict:
    """Train skip-gram/CBOW word2vec (gensim) on tokenised verses and save the vectors in word2vec text
    format. One worker thread: gensim is deterministic only single-threaded. Returns a summary."""
    from gensim.models import Word2Vec as Gensim

    if not sentences:
        raise PoevalError("word2vec needs at least one tokenised verse")
    model = Gensim(
        sentences=sentences, vector_size=cfg.dim, window=cfg.window, min_count=cfg.min_count,
        sg=int(cfg.sg), sample=cfg.sample, epochs=cfg.epochs, seed=cfg.seed, workers=1,
        hashfxn=_stable_hash,
    )
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    model.wv.save_word2vec_format(str(tmp), binary=False)
    tmp.replace(out)
    return {"words": len(model.wv), "dim": model.wv.vector_size, "sentences": len(sentences)}


def read_word2vec(path: str | Path) -> dict[str, list[float]]:
    """Vectors of a word2vec text file (first line: count and dimension)."""
    path = Path(path)
    if not path.exists():
        raise PoevalError(f"word2vec file not found: {path}")
    vectors: dict[str, list[float]] = {}
    with open(path, encoding="utf-8") as handle:
        header = handle.readline().split()
        if len(header) != 2:
            raise PoevalError(f"{path}: not a word2vec text file (first line must be '<count> <dim>')")
        dim = int(header[1])
        for lineno, line in enumerate(handle, 2):
            parts = line.rstrip("\n").split(" ")
            if len(parts) != dim + 1:
                raise PoevalError(f"{path}: line {lineno} has {len(parts) - 1} values, expected {dim}")
            vectors[parts[0]] = [float(x) for x in parts[1:]]
    return vectors


def init_embedding(embedding, vocab: Vocab, path: str | Path | None) -> dict:
    """Copy word2vec vectors into the rows of ``embedding`` (an ``nn.Embedding``) for the words they
    cover; other rows keep their random init. Returns how many words were covered."""
    import torch

    if path is None:
        return {"word2vec_covered": 0, "vocab": len(vocab)}
    vectors = read_word2vec(path)
    dim = embedding.weight.shape[1]
    some = next(iter(vectors.values()), None)
    if some is not None and len(some) != dim:
        raise PoevalError(f"word2vec {path} has dimension {len(some)}, the model's embedding {dim}")
    covered = 0
    with torch.no_grad():
        for word, vec in vectors.items():
            if word in vocab.stoi:
                embedding.weight[vocab.stoi[word]] = torch.tensor(vec)
                covered += 1
    return {"word2vec_covered": covered, "vocab": len(vocab)}


# --------------------------------------------------------------------------------------------------
# sampling


def filtered_probs(logits, temperature: float = 1.0, top_p: float = 1.0, top_k: int = 0, banned=()):
    """Next-token probabilities after temperature, top-k and nucleus filtering (Holtzman et al. 2020);
    ``banned`` ids (e.g. ``<unk>``, ``<pad>``) get probability zero."""
    import torch

    logits = logits.float() / temperature
    if banned:
        logits[..., list(banned)] = -math.inf
    if top_k and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, -math.inf)
    if top_p < 1.0:
        sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
        cum = torch.softmax(sorted_logits, dim=-1).cumsum(-1)
        drop = cum - torch.softmax(sorted_logits, dim=-1) >= top_p   # keep the smallest set reaching top_p
        sorted_logits = sorted_logits.masked_fill(drop, -math.inf)
        logits = torch.full_like(logits, -math.inf).scatter(-1, order, sorted_logits)
    return torch.softmax(logits, dim=-1)


# --------------------------------------------------------------------------------------------------
# checkpoints


def is_checkpoint(model_dir: str | Path) -> bool:
    """Whether ``model_dir`` holds a poetry-specific generator (rather than a transformers checkpoint)."""
    return (Path(model_dir) / MANIFEST).is_file()


def save_checkpoint(out_dir: str | Path, arch: str, config: dict, vocab: Vocab, states: dict[str, Any],
                    log: dict) -> None:
    """Write a checkpoint directory atomically (:func:`poeval.generators.engine.write_checkpoint`)."""
    import torch

    from poeval.generators import engine

    def write(tmp: Path) -> None:
        write_json(tmp / MANIFEST, {"arch": arch, "config": config, "vocab": vocab.itos})
        torch.save(states, tmp / WEIGHTS)

    engine.write_checkpoint(out_dir, write, log)


def load_manifest(model_dir: str | Path) -> dict:
    """``{"arch", "config", "vocab"}`` of a checkpoint directory."""
    model_dir = Path(model_dir)
    if not is_checkpoint(model_dir):
        raise PoevalError(f"{model_dir} is not a poetry-generator checkpoint (no {MANIFEST})")
    manifest = read_json_object(model_dir / MANIFEST)
    missing = [key for key in ("arch", "config", "vocab") if key not in manifest]
    if missing:
        raise PoevalError(f"{model_dir / MANIFEST}: no {', '.join(map(repr, missing))}; retrain the model")
    return manifest


def load_checkpoint(model_dir: str | Path) -> tuple[str, dict, Vocab, dict[str, Any]]:
    """(arch, config, vocab, named state dicts) of a checkpoint directory."""
    import torch

    manifest = load_manifest(model_dir)
    path = Path(model_dir) / WEIGHTS
    try:
        states = torch.load(path, map_location="cpu", weights_only=True)
    except hub.LOAD_ERRORS as err:   # also a pickle that the safe loader refuses: it is never run
        raise PoevalError(f"{path}: cannot load the weights: {hub.load_problem(err, path)}") from None
    return manifest["arch"], manifest["config"], Vocab(manifest["vocab"]), states


# --------------------------------------------------------------------------------------------------
# training and sampling bookkeeping shared by both generators


def verse_ok(tokens: list[str]) -> bool:
    """A generated verse counts only if it has at least one word (not just punctuation): the rule of
    :func:`poeval.text.verse_problem`, which the shared sampling loop and evaluate's reader apply too."""
    return verse_problem(" ".join(tokens)) is None
