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

from helpers import QUATRAIN, ROOT, _jsonl  # noqa: E402 (after the environment above)

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


class Interrupted(Exception):
    """Raised by the :func:`interrupt` hook: a training run killed after some optimizer step."""


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


def assert_stamped(log: dict, inputs: dict, params: dict) -> None:
    """``log`` carries the provenance stamp of these input files (their sha256) and params as given."""
    from poeval.io import file_sha256

    stamp = log["provenance"]
    assert stamp["params"] == params
    assert {k: v["sha256"] for k, v in stamp["inputs"].items()} == {k: file_sha256(p) for k, p in inputs.items()}
    assert stamp["code"] and stamp["created"]


def sampling(n: int, **over) -> dict:
    """A complete params ``sampling`` block (what every generator's ``sample`` takes) of ``n`` quatrains:
    params.yaml's, without the byte-level budget unless ``over`` gives it, ``over`` on top."""
    import yaml

    block = yaml.safe_load((ROOT / "params.yaml").read_text("utf-8"))["sampling"]
    block.pop("max_new_bytes")
    return {**block, "n": n, **over}


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
