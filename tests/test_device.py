"""Device selection: POEVAL_DEVICE, with a clear error when it asks for what the machine lacks."""

import pytest
import torch

from poeval import device
from poeval.errors import PoevalError


def test_auto_is_cuda_only_when_torch_sees_a_gpu(monkeypatch):
    monkeypatch.delenv(device.ENV, raising=False)
    assert device.resolve().type == ("cuda" if torch.cuda.is_available() else "cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert device.resolve("auto") == torch.device("cpu")


def test_env_names_the_device_and_bad_names_fail_clearly(monkeypatch):
    monkeypatch.setenv(device.ENV, "cpu")
    assert device.resolve() == torch.device("cpu")
    monkeypatch.setenv(device.ENV, "toaster")
    with pytest.raises(PoevalError, match="POEVAL_DEVICE='toaster' is not a torch device"):
        device.resolve()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(PoevalError, match="asks for a GPU, but torch sees no CUDA device"):
        device.resolve("cuda:0")


def test_of_reports_where_the_parameters_are():
    assert device.of(torch.nn.Linear(2, 2)) == torch.device("cpu")
