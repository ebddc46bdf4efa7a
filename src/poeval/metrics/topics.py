"""Topical diversity of a sample of quatrains (not in the paper): an LDA topic model trained once per language
on the training split, each quatrain's topic distribution, the sample's topic distribution, its entropy
and its KL divergence from the human one.

The paper names topical diversity as future work; its code trains an LDA model and reads dominant topics
without reporting them (``analysis/train_topic_model.py``, ``analysis/topic_modeling.py`` of
hgroener/diversity_in_poetry_generation). poeval follows it where it can:

* a document is one quatrain, its four verses joined by a space (the paper's ``join``);
* tokens are lower-cased alphabetic words longer than ``min_chars`` (3, the paper's ``len(w) > 3``) that are
  not stopwords (:data:`STOPWORDS`), as in its ``flemmatize``. poeval does not lemmatise: the paper's spaCy
  models (``en_core_web_sm``, ``de_core_news_sm``) are no dependency, and NLTK's stopword corpus is not
  installed with NLTK, so the stopwords are gensim's English list, the paper's archaic additions and a German
  list of poeval's own. ``no_below`` / ``no_above`` (gensim's ``filter_extremes``) drop rare and ubiquitous
  words, which the paper's dictionary kept;
* gensim's LDA with a symmetric prior (the paper: ``LdaMulticore`` with its defaults), but single-process
  ``LdaModel`` with ``random_state`` = ``seed``, so the same params give the same model, and a fixed
  ``num_topics`` (params) instead of the paper's search over 50-250 topics by c_v coherence, which on a
  corpus of a few thousand quatrains would cost far more than the model and pick near-empty topics.

A quatrain's topic distribution is gensim's variational posterior mean (``inference``, normalised gamma, as
``get_document_topics`` with ``minimum_probability=0``), started from the same gamma for every document
(drawn once from ``seed``), so that it depends on the quatrain only, not on the sample around it. A quatrain
with no word of the vocabulary has no topic: it is counted (``n_empty``) and left out.

The **sample's topic distribution** Q is the mean of its quatrains' distributions: the topic mixture of a
quatrain drawn from the sample. The mean, not the dominant-topic shares, because it keeps every quatrain's
whole mixture (a quatrain is short and often splits between topics) and has no zero share, so KL to the
human distribution is finite without smoothing. The dominant topic of each quatrain (argmax, ties to the
lower topic) is counted too (``counts``), for a chi-square test against the human counts. The human
distribution P is the same mean over the training quatrains (for a HUMAN sample: those outside it), from the
per-quatrain distributions computed once with the model. ``entropy`` = H(Q) and ``kl`` = KL(Q || P) in bits,
the paper's direction for rhyme (:mod:`poeval.metrics.distribution`).

Storage: never a pickle. :func:`save_model` writes the topic-word sufficient statistics, alpha and eta
(``model.npz``, read with ``allow_pickle=False``), the vocabulary (``vocabulary.json``), the training
quatrains' topic distributions (``train.npz``), ``topics.json`` (format, params, the training split's sha256:
a model of another split is refused) and ``top_words.tsv`` (each topic's most probable words, for a reader);
:func:`load_model` rebuilds the gensim model from the arrays.
"""

from __future__ import annotations

import os
import re
from collections import Counter
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from poeval import config
from poeval.errors import PoevalError
from poeval.files import atomic_dir, dir_files_sha256, file_sha256
from poeval.io import cache_meta, load_npz, read_json, write_json
from poeval.poem_files import read_poems
from poeval.sections import Section
from poeval.stamps import stamp
from poeval.metrics.distribution import entropy
from poeval.render import write_tsv

FORMAT = 1
META = "topics.json"
TOP_WORDS = "top_words.tsv"
# the params that make a model (metrics.topics), from the params schema
PARAMS = ("num_topics", "passes", "iterations", "seed", "min_chars", "no_below", "no_above", "top_words")
DEFAULTS = config.defaults("#/properties/metrics/properties/topics")

# gensim's English stopwords (as spaCy's, which the paper adds to NLTK's) plus the paper's archaic additions
# (train_topic_model.py), and German function words of poeval's own (the paper: NLTK's and spaCy's lists).
_ARCHAIC_EN = "thy thee thine thyself thou hath doth oer shalt wilt canst dost hast didst art ye upon".split()
_DE = """aber alle allem allen aller alles als also am an ander andere anderem anderen anderer anderes anders auch
    auf aus bei bin bis bist da damit dann das dass daß dein deine deinem deinen deiner dem den denn der des dich
    die dies diese diesem diesen dieser dieses dir doch dort du durch ein eine einem einen einer eines einmal er
    es etwas euch euer eure für gegen gewesen hab habe haben hat hatte hätte ich ihm ihn ihnen ihr ihre ihrem
    ihren ihrer im in ist jede jedem jeden jeder jedes jene jenem jenen jener jenes jetzt kann kein keine keinem
    keinen keiner man manche mein meine meinem meinen meiner mich mir mit muss muß nach nicht nichts noch nun nur
    ob oder ohne sehr sein seine seinem seinen seiner seyn sich sie sind so solche soll sollte sondern sonst über
    um und uns unser unsre unter viel vom von vor wann war waren warum was weg weil weiter welche welchem welchen
    welcher wenn wer werde werden wie wieder will wir wird wirst wo wohl wollen wollte würde zu zum zur zwar
    zwischen ward bey sey wär nie hier""".split()


def _english_stopwords() -> frozenset[str]:
    from gensim.parsing.preprocessing import STOPWORDS

    return frozenset(STOPWORDS) | frozenset(_ARCHAIC_EN)


STOPWORDS = {"en": _english_stopwords, "de": lambda: frozenset(_DE)}
_WORD = re.compile(r"[^\W\d_]+")   # runs of letters: the paper keeps alphabetic lemmas only


def documents(quatrains: Sequence[Sequence[str]], lang: str, min_chars: int) -> list[list[str]]:
    """Each quatrain's tokens (module doc): its verses joined by a space, lower-cased alphabetic words longer
    than ``min_chars``, stopwords removed."""
    if lang not in STOPWORDS:
        raise PoevalError(f"topics: no stopwords for language {lang!r} (one of {', '.join(STOPWORDS)})")
    stop = STOPWORDS[lang]()
    texts = (" ".join(q).lower().replace("'", "").replace("’", "") for q in quatrains)   # o'er -> oer, as spaCy
    return [[w for w in _WORD.findall(text) if len(w) > min_chars and w not in stop] for text in texts]


def resolve(options: Mapping | None) -> dict:
    """The model params (:data:`PARAMS`) of ``options`` (params metrics.topics), defaults filled."""
    given = dict(options or {})
    return {key: given.get(key, DEFAULTS[key]) for key in PARAMS}


class _FixedStart:
    """Stands in for the model's random state during inference: every document starts from the same gamma
    (gensim draws a fresh one per document), so a quatrain's distribution does not depend on its neighbours."""

    def __init__(self, start: np.ndarray):
        self.start = start

    def gamma(self, shape, scale, size):
        return np.tile(self.start, (size[0], 1))


@dataclass
class TopicModel:
    """An LDA model and its vocabulary; ``train_theta`` holds the training quatrains' topic distributions
    (rows of the empty ones are NaN)."""

    lda: object                     # gensim.models.LdaModel
    vocabulary: list[str]
    params: dict
    lang: str
    train_theta: np.ndarray | None = None

    def __post_init__(self):
        self.token_id = {w: i for i, w in enumerate(self.vocabulary)}

    @property
    def num_topics(self) -> int:
        return int(self.lda.num_topics)

    def bows(self, docs: list[list[str]]) -> list[list[tuple[int, int]]]:
        out = []
        for doc in docs:
            ids = Counter(self.token_id[w] for w in doc if w in self.token_id)
            out.append(sorted(ids.items()))
        return out

    def theta(self, quatrains: Sequence[Sequence[str]]) -> np.ndarray:
        """Topic distribution of each quatrain (module doc); NaN rows for quatrains without a vocabulary word."""
        bows = self.bows(documents(quatrains, self.lang, self.params["min_chars"]))
        out = np.full((len(bows), self.num_topics), np.nan)
        rows = [i for i, bow in enumerate(bows) if bow]
        if rows:
            start = np.random.RandomState(self.params["seed"]).gamma(100.0, 1.0 / 100.0, self.num_topics)
            saved, self.lda.random_state = self.lda.random_state, _FixedStart(start.astype(self.lda.dtype))
            try:
                gamma, _ = self.lda.inference([bows[i] for i in rows])
            finally:
                self.lda.random_state = saved
            gamma = gamma.astype(np.float64)
            out[rows] = gamma / gamma.sum(axis=1, keepdims=True)
        return out

    def topic_words(self) -> np.ndarray:
        """Topic-word probabilities (topics x vocabulary): the normalised lambda."""
        lam = self.lda.state.get_lambda().astype(np.float64)
        return lam / lam.sum(axis=1, keepdims=True)


def train(quatrains: Sequence[Sequence[str]], lang: str, options: Mapping | None = None) -> TopicModel:
    """Train the LDA model on the training quatrains (module doc) and compute their topic distributions."""
    from gensim.models import LdaModel

    params = resolve(options)
    docs = documents(quatrains, lang, params["min_chars"])
    counts = Counter(w for doc in docs for w in set(doc))   # document frequencies
    n = len(docs)
    vocabulary = sorted(w for w, df in counts.items() if df >= params["no_below"] and df <= params["no_above"] * n)
    if not vocabulary:
        raise PoevalError(f"topics: no word is left for the vocabulary of {n} quatrains (no_below "
                          f"{params['no_below']}, no_above {params['no_above']}, min_chars {params['min_chars']})")
    model = TopicModel(None, vocabulary, params, lang)
    bows = [bow for bow in model.bows(docs) if bow]
    model.lda = LdaModel(bows, num_topics=params["num_topics"], id2word=dict(enumerate(vocabulary)),
                         passes=params["passes"], iterations=params["iterations"], random_state=params["seed"],
                         alpha="symmetric", eta="symmetric", dtype=np.float32)
    model.train_theta = model.theta(quatrains)
    return model


def save_model(model: TopicModel, out_dir: str | os.PathLike, input_path: str | os.PathLike,
               options: Mapping | None = None, force: bool = False, recorded: dict | None = None) -> dict:
    """Write ``model`` into ``out_dir`` (replaced atomically; module doc), recording the sha256 of the
    training file ``input_path`` and, in its provenance stamp, ``recorded`` (the rule's: its job's; default:
    ``options`` as received, params ``metrics.topics``), what `poeval stale` compares; returns the
    ``topics.json`` written."""
    lda = model.lda
    empty = np.isnan(model.train_theta).any(axis=1)
    meta = {"format": FORMAT, "input_sha256": file_sha256(input_path), "lang": model.lang, "params": model.params,
            "num_topics": model.num_topics, "vocabulary_size": len(model.vocabulary),
            "n_train": int(len(empty)), "n_empty": int(empty.sum()),
            "human_distribution": [round(float(v), 6) for v in np.nanmean(model.train_theta, axis=0)],
            "provenance": stamp({"train": input_path}, {"lang": model.lang, "topics": dict(options or {})}
                                if recorded is None else recorded)}
    words = model.topic_words()
    rows = []
    for topic in range(model.num_topics):
        for rank, w in enumerate(np.argsort(-words[topic], kind="stable")[:model.params["top_words"]]):
            rows.append([str(topic), str(rank + 1), model.vocabulary[w], f"{words[topic, w]:.6f}"])
    with atomic_dir(out_dir, "poeval topics", META, (input_path,), force) as tmp:
        np.savez(tmp / "model.npz", sstats=lda.state.sstats, alpha=lda.alpha, eta=lda.eta)
        np.savez(tmp / "train.npz", theta=model.train_theta)
        write_json(tmp / "vocabulary.json", model.vocabulary)
        write_tsv(tmp / TOP_WORDS, ["topic", "rank", "word", "probability"], rows)
        meta["sha256"] = dir_files_sha256(tmp)   # checked when loaded (poeval.io.cache_meta)
        write_json(tmp / META, meta)
    return meta


def load_model(model_dir: str | os.PathLike, input_path: str | os.PathLike | None = None,
               options: Mapping | None = None) -> TopicModel:
    """The model saved by :func:`save_model`, rebuilt from its arrays. ``input_path``: fail unless it was
    trained on this file's current bytes; ``options``: fail unless it was trained with these params."""
    from gensim.models import LdaModel

    model_dir = Path(model_dir)
    meta = cache_meta(model_dir / META, FORMAT, input_path, "topic model", "poeval topics")
    if options is not None and resolve(options) != meta["params"]:
        raise PoevalError(f"{model_dir} was trained with params {meta['params']}, not {resolve(options)} "
                          f"(metrics.topics); retrain it")
    vocabulary = read_json(model_dir / "vocabulary.json")
    retrain = "retrain it with `poeval topics`"
    sstats, alpha, eta = load_npz(model_dir / "model.npz", ("sstats", "alpha", "eta"), retrain).values()
    theta = load_npz(model_dir / "train.npz", ("theta",), retrain)["theta"]
    if sstats.shape != (meta["num_topics"], len(vocabulary)):
        raise PoevalError(f"{model_dir}: its arrays do not fit its vocabulary; retrain it")
    lda = LdaModel(num_topics=meta["num_topics"], id2word=dict(enumerate(vocabulary)), alpha=alpha, eta=eta,
                   random_state=meta["params"]["seed"], dtype=sstats.dtype)
    lda.state.sstats = sstats
    lda.sync_state()
    return TopicModel(lda, vocabulary, meta["params"], meta["lang"], theta)


@dataclasses.dataclass(frozen=True)
class Topics(Section):
    """Params ``metrics.topics``: the LDA model's settings (module doc)."""

    POINTER, WHERE = "#/properties/metrics/properties/topics", "metrics.topics"
    num_topics: int
    passes: int
    iterations: int
    seed: int
    min_chars: int
    no_below: int
    no_above: float
    top_words: int


def train_file(quatrains_path: str | os.PathLike, out_dir: str | os.PathLike, lang: str, settings: Topics,
               force: bool = False, recorded: dict | None = None) -> dict:
    """Train on a training file, read as ``poeval evaluate`` reads its reference (so the rows of the training
    distributions are the rows a metric cell sees), and save the model; returns its ``topics.json``.
    ``recorded``: the params its stamp records (the rule's: its job's; default: ``lang`` and ``settings``)."""
    poems, _ = read_poems(quatrains_path)
    options = settings.to_dict()
    recorded = {"lang": lang, "topics": options} if recorded is None else recorded
    return save_model(train([p["lines"] for p in poems], lang, options), out_dir, quatrains_path, options, force,
                      recorded)


def numbers(theta: np.ndarray, human: np.ndarray) -> dict:
    """The family's numbers from the per-quatrain distributions ``theta`` of the non-empty quatrains and the
    human distribution ``human`` (module doc); topics are named by their index."""
    k = len(human)
    if not len(theta):
        return {"distribution": {str(t): None for t in range(k)}, "counts": {str(t): 0 for t in range(k)},
                "entropy": None, "kl": None, "dominant_entropy": None}
    q = theta.mean(axis=0)
    q = q / q.sum()
    dominant = np.bincount(theta.argmax(axis=1), minlength=k)
    return {"distribution": {str(t): float(v) for t, v in enumerate(q)},
            "counts": {str(t): int(c) for t, c in enumerate(dominant)},
            "entropy": entropy(q), "kl": float((q * np.log2(q / human)).sum()) + 0.0,
            "dominant_entropy": entropy(dominant.astype(float))}
