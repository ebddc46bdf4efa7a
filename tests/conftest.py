import os
import zlib
from pathlib import Path

import numpy as np
import pytest

# Nothing in the tests may reach a model hub.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
# as `poeval` sets it (cli.main): busy-waiting OpenMP threads crawl when pytest shares the cores
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# pytest-xdist runs one worker per core: one thread each (torch, BLAS, tokenizers), else every worker's thread
# pool spans all the cores and they fight; a test that asks for threads still gets them (torch.set_num_threads)
if os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") != "1":
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from helpers import QUATRAIN, ROOT, Interrupted, _jsonl  # noqa: E402 (after the environment above)

SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def ref(tmp_path):
    """A reference file of three copies of one quatrain."""
    return _jsonl(tmp_path / "ref.jsonl", [{"id": f"r{i}", "lines": QUATRAIN} for i in range(3)])


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip("../shared/data is not available")
    return SHARED_DATA


@pytest.fixture
def interrupt(monkeypatch):
    """``interrupt(k)``: the training engine raises :class:`Interrupted` after optimizer step ``k``;
    ``interrupt(None)``: it runs on."""
    from poeval.generators import engine

    def set_at(at):
        def hook(step):
            if step == at:
                raise Interrupted(step)

        monkeypatch.setattr(engine, "_after_step", None if at is None else hook)

    return set_at


# A fake sentence encoder (tests of the semantic and diversity families): compute logic without a model.

class FakeEncoder:
    """Bag-of-words hashing into 32 dims, normalised: equal texts give equal vectors."""

    dim = 32

    def get_embedding_dimension(self):
        return self.dim

    def encode(self, texts, batch_size=32, convert_to_numpy=True, normalize_embeddings=False, **_):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, zlib.crc32(word.encode()) % self.dim] += 1.0
            out[i, -1] += 0.1
        if normalize_embeddings:
            out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out


@pytest.fixture
def fake(monkeypatch):
    from poeval.metrics import semantic

    enc = FakeEncoder()
    monkeypatch.setattr(semantic, "load_encoder", lambda name="default", **_: enc)
    monkeypatch.setattr(semantic, "resolve_encoder", lambda name: name)
    return enc


# Tiny checkpoints, one per architecture that several files need, built once a session (tmp_path_factory) for the
# tests that need *a* checkpoint of it; a test that needs a particular config builds its own. Read only: a test
# that changes one copies it first.

@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory) -> tuple[Path, Path]:
    """train.jsonl: 60 made-up quatrains whose verses 1, 3 and 4 end in helpers.TRAIN_ONLY; dev.jsonl: 20 ending
    in helpers.DEV_ONLY (a word the tokenizer must not learn)."""
    from helpers import DEV_ONLY, TRAIN_ONLY, _quatrains
    from poeval.io import write_jsonl

    root = tmp_path_factory.mktemp("lm_corpus")
    write_jsonl(root / "train.jsonl", _quatrains(60, 1, TRAIN_ONLY))
    write_jsonl(root / "dev.jsonl", _quatrains(20, 2, DEV_ONLY))
    return root / "train.jsonl", root / "dev.jsonl"


@pytest.fixture(scope="session")
def tiny_gpt2(tiny_corpus, tmp_path_factory) -> Path:
    """The folder of a word-level GPT-2 (helpers.TINY) that poeval trained from scratch on tiny_corpus
    (helpers.TRAIN_CFG: 150 steps)."""
    from helpers import TINY, TRAIN_CFG
    from poeval.generators.lm.training import train

    out = tmp_path_factory.mktemp("lm_model") / "tiny"
    train(str(tiny_corpus[0]), str(tiny_corpus[1]), str(out), TINY, TRAIN_CFG, progress=False)
    return out


@pytest.fixture(scope="session")
def tiny_gguf_llama(tmp_path_factory):
    """A tiny LLaMA written as a GGUF file with SmolLM2's special tokens (tests/gguf_tiny.py):
    ``gguf`` (the file), ``model`` (the Hugging Face model it was written from), ``tok`` (its tokenizer)."""
    from types import SimpleNamespace

    pytest.importorskip("gguf")
    import gguf_tiny

    tok = gguf_tiny.tokenizer()
    model = gguf_tiny.model(len(tok))
    path = gguf_tiny.write(tmp_path_factory.mktemp("gguf") / "tiny.gguf", model, tok)
    return SimpleNamespace(gguf=path, model=model, tok=tok)


@pytest.fixture(scope="session")
def served_tiny(tiny_gpt2, tmp_path_factory):
    """``transformers serve`` of tiny_gpt2 (servers.Served), started once a session: every endpoint test shares
    it. It serves a copy that has a chat template (servers.with_chat_template), since the scratch tokenizer has
    none and /v1/chat/completions answers 500 without one; tiny_gpt2 itself stays as trained. ``.bos`` is the
    text to prompt with (``<|endoftext|>``): an empty prompt crashes the server."""
    from servers import Served, with_chat_template

    root = tmp_path_factory.mktemp("served_tiny")
    with Served(with_chat_template(tiny_gpt2, root / "model"), root / "logs") as served:
        yield served
