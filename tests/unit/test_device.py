"""Device selection (POEVAL_DEVICE): where tensors and models end up, and a clear error, before any
output is written, when it asks for a GPU the machine lacks."""

import pytest
import torch

from poeval import device
from poeval.errors import PoevalError
from poeval.generators.lm.training import train
from poeval.io import write_jsonl
from helpers import TINY, TRAIN_CFG, _quatrains


@pytest.fixture
def corpus(tmp_path):
    write_jsonl(tmp_path / "train.jsonl", _quatrains(20, 1, "nightingale"))
    write_jsonl(tmp_path / "dev.jsonl", _quatrains(5, 2, "nightingale"))
    return str(tmp_path / "train.jsonl"), str(tmp_path / "dev.jsonl")


def _train(corpus, out):
    return train(*corpus, str(out), TINY, {**TRAIN_CFG, "max_steps": 2, "eval_every": 2}, progress=False)


def test_auto_places_tensors_on_the_gpu_only_when_torch_sees_one(monkeypatch):
    monkeypatch.delenv(device.ENV, raising=False)
    assert torch.zeros(1, device=device.resolve()).is_cuda == torch.cuda.is_available()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert torch.zeros(1, device=device.resolve()).device.type == "cpu"


def test_forced_cpu_trains_on_the_cpu_even_where_a_gpu_is_seen(corpus, tmp_path, monkeypatch):
    # with a GPU in sight auto would choose cuda (which this CPU build of torch could not use); cpu wins
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert device.resolve("auto").type == "cuda"
    monkeypatch.setenv(device.ENV, "cpu")
    assert torch.zeros(1, device=device.resolve()).device.type == "cpu"
    summary = _train(corpus, tmp_path / "m")
    assert summary["steps"] == 2


def test_a_missing_gpu_fails_clearly_before_anything_is_written(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv(device.ENV, "cuda")
    with pytest.raises(PoevalError, match=r"POEVAL_DEVICE='cuda' asks for a GPU, but torch sees no CUDA device"):
        _train(corpus, tmp_path / "m")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev.jsonl", "train.jsonl"]
    # a GPU index the machine does not have
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(PoevalError, match=r"POEVAL_DEVICE='cuda:3': this machine has 1 CUDA device"):
        device.resolve("cuda:3")


def test_bad_names_fail_clearly(monkeypatch):
    monkeypatch.setenv(device.ENV, "toaster")
    with pytest.raises(PoevalError, match="POEVAL_DEVICE='toaster' is not a torch device"):
        device.resolve()


def test_of_follows_the_parameters():
    model = torch.nn.Linear(2, 2)
    assert device.of(model).type == "cpu"
    assert device.of(model.to("meta")).type == "meta"
