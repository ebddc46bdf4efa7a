"""The training engine's parts that every architecture shares (the full loop is exercised, with resume,
by each architecture's own tests)."""

import random

import pytest

torch = pytest.importorskip("torch")

from poeval.generators import engine  # noqa: E402


def test_weight_decay_only_on_matrices():
    model = torch.nn.Sequential(torch.nn.Embedding(10, 4), torch.nn.Linear(4, 4), torch.nn.LayerNorm(4))
    opt = engine.optimizer(model, {"lr": 0.1, "weight_decay": 0.5})
    decay, plain = opt.param_groups
    assert decay["weight_decay"] == 0.5 and plain["weight_decay"] == 0.0
    assert {id(p) for p in decay["params"]} == {id(model[0].weight), id(model[1].weight)}
    assert {id(p) for p in plain["params"]} == {id(model[1].bias), id(model[2].weight), id(model[2].bias)}


@pytest.mark.parametrize("decay, expected", [(True, [0.0, 0.5, 1.0, 0.5, 0.0]), (False, [0.0, 0.5, 1.0, 1.0, 1.0])])
def test_warmup_then_linear_decay_or_constant(decay, expected):
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=2.0)
    sched = engine.schedule(opt, warmup=2, total=4, decay=decay)
    lrs = []
    for _ in range(5):
        lrs.append(sched.get_last_lr()[0] / 2.0)
        opt.step()
        sched.step()
    assert lrs == expected


def test_budget_is_whichever_of_steps_and_epochs_ends_first():
    assert engine.budget({"max_steps": 100, "max_epochs": None}, 7) == 100
    assert engine.budget({"max_steps": 100, "max_epochs": 2}, 7) == 14
    assert engine.budget({"max_steps": 10, "max_epochs": 2}, 7) == 10
    assert engine.budget({"max_steps": 100, "max_epochs": 0.5}, 7) == 4   # a partial epoch rounds up


def test_batch_stream_covers_each_epoch_and_restores_its_position():
    a = engine.BatchStream([3, 1, 2, 5, 4, 6, 7], 3, 2, random.Random(1))
    assert a.per_epoch == 3
    first = [a.next() for _ in range(3)]
    assert sorted(i for b in first for i in b) == list(range(7))
    assert all(b == sorted(b, key=lambda i: a.lengths[i]) for b in first)   # length-sorted within a group
    a.next()
    saved, rng = a.state(), a.rng.getstate()
    b = engine.BatchStream(a.lengths, 3, 2, random.Random(99))
    b.restore(saved)
    b.rng.setstate(rng)
    assert [a.next() for _ in range(5)] == [b.next() for _ in range(5)]
