"""Contrastive search (poeval.generators.contrastive) against a literal, cache-free reference of Su et al. 2022."""

import math

import pytest
import torch
import torch.nn.functional as F
import transformers

from poeval.errors import PoevalError
from poeval.generators.contrastive import contrastive_generate, contrastive_search

VOCAB = 50
PAD = VOCAB - 1  # a pad id the tiny models may also emit; padding is defined by the mask, never by the id


def _gpt2():
    cfg = transformers.GPT2Config(
        n_layer=2, n_embd=32, n_head=2, vocab_size=VOCAB, n_positions=64, bos_token_id=None, eos_token_id=None
    )
    return transformers.GPT2LMHeadModel(cfg)


def _llama():
    cfg = transformers.LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    return transformers.LlamaForCausalLM(cfg)


def _gpt_neo():
    # window_size below the sequence length, so the local-attention layer really slides.
    cfg = transformers.GPTNeoConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_layers=2,
        num_heads=2,
        attention_types=[[["global", "local"], 1]],
        window_size=6,
        max_position_embeddings=64,
        bos_token_id=None,
        eos_token_id=None,
    )
    return transformers.GPTNeoForCausalLM(cfg)


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    # Tiny models: intra-op threads only add contention (10x slower on a busy 2-core machine).
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


BUILDERS = {"gpt2": _gpt2, "llama": _llama, "gpt_neo": _gpt_neo}


def _model(name, seed):
    torch.manual_seed(seed)
    return BUILDERS[name]().eval()


def _prompts(seed, lengths=(5, 3, 7)):
    """Left-padded batch of random prompts of different lengths, plus the unpadded prompts."""
    gen = torch.Generator().manual_seed(seed + 1000)
    rows = [torch.randint(0, VOCAB - 1, (n,), generator=gen).tolist() for n in lengths]
    width = max(lengths)
    ids = torch.tensor([[PAD] * (width - len(r)) + r for r in rows])
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
    return ids, mask, rows


@torch.no_grad()
def _reference(model, prompt, k, alpha, steps, eos=None, tau=0.0, uniforms=()):
    """Literal formula, one unpadded prompt, no cache: a full forward of context + v for every candidate v.

    The k candidate sequences have equal length, so they share one (uncached, unpadded) forward. With
    ``tau`` > 0 the candidate is argmax_v s(v) / tau + g_v, g_v = -log(-log(u_v)) Gumbel noise from the
    step's ``uniforms`` (k numbers): a draw from softmax(s / tau).
    """
    seq = list(prompt)
    for _ in range(steps):
        probs = model(torch.tensor([seq])).logits[0, -1].float().softmax(-1)
        top_p, top_v = probs.topk(k)
        candidates = torch.tensor([seq + [v] for v in top_v.tolist()])
        hidden = model(candidates, output_hidden_states=True).hidden_states[-1].float()
        scores = []
        for i, p in enumerate(top_p.tolist()):
            h = hidden[i]
            degeneration = F.cosine_similarity(h[-1:], h[:-1], dim=-1).max().item()
            scores.append((1 - alpha) * p - alpha * degeneration)
        if tau > 0:
            u = uniforms[len(seq) - len(prompt)].tolist()
            scores = [s / tau - math.log(-math.log(x)) for s, x in zip(scores, u)]
        seq.append(top_v[scores.index(max(scores))].item())
        if eos is not None and seq[-1] == eos:
            break
    return seq[len(prompt) :]


def _generated(out, mask, row):
    return out[row, mask.shape[1] :].tolist()


# ------------------------------------------------------------------------------------------------
# 1. fast (cached, batched) == literal reference


@pytest.mark.parametrize("name", ["gpt2", "llama", "gpt_neo"])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize(("k", "alpha"), [(4, 0.6), (10, 0.6), (6, 0.7)])
def test_matches_reference(name, seed, k, alpha):
    model = _model(name, seed)
    ids, mask, rows = _prompts(seed)
    steps = 8
    out = contrastive_search(model, ids, mask, top_k=k, penalty_alpha=alpha, max_new_tokens=steps)
    assert out.shape == (len(rows), ids.shape[1] + steps)
    assert torch.equal(out[:, : ids.shape[1]], ids)
    for r, prompt in enumerate(rows):
        assert _generated(out, mask, r) == _reference(model, prompt, k, alpha, steps)


@pytest.mark.parametrize("name", ["gpt2", "llama"])
@pytest.mark.parametrize(("k", "alpha", "tau"), [(4, 0.6, 0.05), (6, 0.7, 0.5)])
def test_stochastic_choice_matches_reference(name, k, alpha, tau):
    """score_temperature > 0: the cached, batched loop draws one (batch, k) block of uniforms per step;
    the literal reference, fed row r of the same blocks, makes the same choices."""
    model = _model(name, 0)
    ids, mask, rows = _prompts(0)
    steps = 8
    out = contrastive_search(model, ids, mask, top_k=k, penalty_alpha=alpha, max_new_tokens=steps,
                             score_temperature=tau, generator=torch.Generator().manual_seed(5))
    gen = torch.Generator().manual_seed(5)
    blocks = [torch.rand((len(rows), k), generator=gen) for _ in range(steps)]
    greedy = contrastive_search(model, ids, mask, top_k=k, penalty_alpha=alpha, max_new_tokens=steps)
    assert not torch.equal(out, greedy)  # the noise really changes the choices
    for r, prompt in enumerate(rows):
        uniforms = [b[r] for b in blocks]
        assert _generated(out, mask, r) == _reference(model, prompt, k, alpha, steps, tau=tau, uniforms=uniforms)


def test_score_temperature_draws_from_the_softmax_of_the_scores():
    """With score_temperature tau the search picks candidate i with probability softmax(s / tau)_i. Here
    alpha is 0, so a candidate's score s is its probability, which a logits processor fixes at .4, .3, .2, .1
    for tokens 5, 6, 7, 8 (nothing else possible): one step over many copies of one prompt gives the token
    frequencies softmax([4, 3, 2, 1]) = .644, .237, .087, .032."""
    model = _model("gpt2", 0)
    rows = 20000
    ids = torch.full((rows, 1), 3)
    fixed = torch.full((VOCAB,), -math.inf)
    fixed[5:9] = torch.tensor([0.4, 0.3, 0.2, 0.1]).log()
    out = contrastive_search(model, ids, top_k=4, penalty_alpha=0.0, max_new_tokens=1, score_temperature=0.1,
                             logits_processor=lambda seqs, scores: fixed.expand_as(scores),
                             generator=torch.Generator().manual_seed(0))
    freq = torch.bincount(out[:, -1], minlength=VOCAB).float() / rows
    expected = torch.zeros(VOCAB)
    expected[5:9] = torch.tensor([math.exp(x) for x in (4, 3, 2, 1)]) / sum(math.exp(x) for x in (4, 3, 2, 1))
    assert torch.allclose(freq, expected, atol=0.01)
    # the argmax (tau 0) always takes the most probable candidate
    argmax = contrastive_search(model, ids[:10], top_k=4, penalty_alpha=0.0, max_new_tokens=1,
                                logits_processor=lambda seqs, scores: fixed.expand_as(scores))
    assert argmax[:, -1].tolist() == [5] * 10


def test_stochastic_choice_is_seeded_and_tiny_tau_is_the_argmax():
    model = _model("gpt2", 1)
    ids, mask, _ = _prompts(1)
    run = lambda tau, seed: contrastive_search(  # noqa: E731
        model, ids, mask, top_k=6, penalty_alpha=0.6, max_new_tokens=10, score_temperature=tau,
        generator=torch.Generator().manual_seed(seed))
    assert torch.equal(run(0.5, 1), run(0.5, 1))
    assert not torch.equal(run(0.5, 1), run(0.5, 2))
    argmax = contrastive_search(model, ids, mask, top_k=6, penalty_alpha=0.6, max_new_tokens=10)
    assert torch.equal(run(1e-9, 1), argmax)
    torch.manual_seed(3)  # no generator: the global RNG
    first = contrastive_search(model, ids, mask, top_k=6, penalty_alpha=0.6, max_new_tokens=10, score_temperature=0.5)
    torch.manual_seed(3)
    assert torch.equal(first, contrastive_search(model, ids, mask, top_k=6, penalty_alpha=0.6, max_new_tokens=10,
                                                 score_temperature=0.5))


def test_penalty_changes_the_output():
    # Guards against a vacuous reference match: with alpha > 0 the result must differ from greedy.
    model = _model("gpt2", 0)
    ids, mask, _ = _prompts(0)
    greedy = contrastive_search(model, ids, mask, top_k=4, penalty_alpha=0.0, max_new_tokens=8)
    contrastive = contrastive_search(model, ids, mask, top_k=4, penalty_alpha=0.6, max_new_tokens=8)
    assert not torch.equal(greedy, contrastive)


def test_one_forward_per_step_over_batch_times_k():
    model = _model("gpt2", 0)
    ids, mask, _ = _prompts(0)
    shapes = []
    def record(module, args, kwargs):
        shapes.append(tuple(kwargs["input_ids"].shape))

    hook = model.register_forward_pre_hook(record, with_kwargs=True)
    try:
        contrastive_search(model, ids, mask, top_k=4, penalty_alpha=0.6, max_new_tokens=5)
    finally:
        hook.remove()
    # One prefill over the prompts, then one cached single-token pass over the 3 x 4 candidates per step.
    assert shapes == [tuple(ids.shape)] + [(12, 1)] * 5


# ------------------------------------------------------------------------------------------------
# 2. alpha = 0 is greedy


@pytest.mark.parametrize("name", ["gpt2", "llama", "gpt_neo"])
@pytest.mark.parametrize(("k", "alpha"), [(4, 0.0), (1, 0.6)])
def test_alpha_zero_or_k_one_is_greedy(name, k, alpha):
    model = _model(name, 3)
    ids, mask, _ = _prompts(3)
    greedy = model.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=10, pad_token_id=PAD)
    ours = contrastive_search(model, ids, mask, top_k=k, penalty_alpha=alpha, max_new_tokens=10)
    assert torch.equal(ours, greedy)


# ------------------------------------------------------------------------------------------------
# 3. eos handling


@pytest.mark.parametrize("explicit_pad", [True, False])
def test_rows_stop_at_eos_and_are_padded(explicit_pad):
    model = _model("gpt2", 0)
    ids, mask, rows = _prompts(0)
    free = contrastive_search(model, ids, mask, top_k=4, penalty_alpha=0.6, max_new_tokens=10)
    eos = _generated(free, mask, 0)[2]  # row 0 emits it at step 3 at the latest
    pad = (0 if eos != 0 else 1) if explicit_pad else eos  # without pad_token_id, eos pads
    out = contrastive_search(
        model,
        ids,
        mask,
        top_k=4,
        penalty_alpha=0.6,
        max_new_tokens=10,
        eos_token_id=eos,
        pad_token_id=pad if explicit_pad else None,
    )
    stopped = []
    for r in range(len(rows)):
        tokens = _generated(free, mask, r)
        stop = tokens.index(eos) + 1 if eos in tokens else len(tokens)
        stopped.append(stop)
        expected = tokens[:stop] + [pad] * (10 - stop)
        assert _generated(out, mask, r) == expected[: out.shape[1] - ids.shape[1]]
    assert min(stopped) < 10  # some row really stopped early
    # The batch ends as soon as the last row stops.
    assert out.shape[1] == ids.shape[1] + max(stopped)


def test_single_row_ends_early_at_eos():
    model = _model("llama", 0)
    ids, mask, _ = _prompts(0, lengths=(4,))
    free = contrastive_search(model, ids, mask, top_k=4, penalty_alpha=0.6, max_new_tokens=10)
    tokens = _generated(free, mask, 0)
    eos = tokens[3]
    out = contrastive_search(model, ids, mask, top_k=4, penalty_alpha=0.6, max_new_tokens=10, eos_token_id=[eos])
    assert _generated(out, mask, 0) == tokens[: tokens.index(eos) + 1]
    assert out.shape[1] <= ids.shape[1] + 4


# ------------------------------------------------------------------------------------------------
# 4. argument validation


@pytest.mark.parametrize(
    "kwargs",
    [
        {"top_k": 0},
        {"top_k": -2},
        {"top_k": 2.0},
        {"top_k": True},
        {"top_k": None},
        {"penalty_alpha": -0.1},
        {"penalty_alpha": 1.5},
        {"penalty_alpha": float("nan")},
        {"penalty_alpha": None},
        {"penalty_alpha": "0.5"},
        {"max_new_tokens": -1},
        {"score_temperature": -0.1},
        {"score_temperature": float("inf")},
        {"score_temperature": True},
    ],
)
def test_bad_arguments_raise(kwargs):
    model = _model("gpt2", 0)
    ids, mask, _ = _prompts(0)
    args = {"top_k": 4, "penalty_alpha": 0.6, "max_new_tokens": 3, **kwargs}
    with pytest.raises(PoevalError, match=next(iter(kwargs))):
        contrastive_search(model, ids, mask, **args)


def test_bad_inputs_raise():
    model = _model("gpt2", 0)
    ids, mask, _ = _prompts(0)
    with pytest.raises(PoevalError, match="2-D"):
        contrastive_search(model, ids[0], top_k=4, penalty_alpha=0.6, max_new_tokens=3)
    with pytest.raises(PoevalError, match="left-padded"):
        contrastive_search(model, ids, mask.flip(-1), top_k=4, penalty_alpha=0.6, max_new_tokens=3)


def test_edge_values_are_accepted():
    model = _model("gpt2", 0)
    ids, mask, _ = _prompts(0)
    assert torch.equal(contrastive_search(model, ids, mask, top_k=4, penalty_alpha=1, max_new_tokens=0), ids)
    # top_k above the vocabulary size is clamped; alpha = 1 ignores the probabilities entirely.
    out = contrastive_search(model, ids, mask, top_k=VOCAB + 5, penalty_alpha=1.0, max_new_tokens=2)
    assert out.shape == (3, ids.shape[1] + 2)


# ------------------------------------------------------------------------------------------------
# 5. the transformers `custom_generate` route


@pytest.mark.parametrize("name", ["gpt2", "llama"])
@pytest.mark.parametrize("padded", [True, False])
def test_custom_generate_matches_direct_call(name, padded):
    model = _model(name, 2)
    ids, mask, _ = _prompts(2) if padded else _prompts(2, lengths=(6, 6))
    direct = contrastive_search(
        model, ids, mask, top_k=5, penalty_alpha=0.6, max_new_tokens=8, eos_token_id=7, pad_token_id=PAD
    )
    routed = model.generate(
        input_ids=ids,
        attention_mask=mask if padded else None,
        custom_generate=contrastive_generate,
        top_k=5,
        penalty_alpha=0.6,
        max_new_tokens=8,
        eos_token_id=7,
        pad_token_id=PAD,
    )
    assert torch.equal(routed, direct)


def test_custom_generate_passes_score_temperature():
    model = _model("gpt2", 2)
    ids, mask, _ = _prompts(2)
    kw = {"top_k": 5, "penalty_alpha": 0.6, "max_new_tokens": 8, "eos_token_id": 7, "pad_token_id": PAD}
    torch.manual_seed(4)
    direct = contrastive_search(model, ids, mask, score_temperature=0.3, **kw)
    torch.manual_seed(4)
    routed = model.generate(input_ids=ids, attention_mask=mask, custom_generate=contrastive_generate,
                            score_temperature=0.3, **kw)
    assert torch.equal(routed, direct)
    assert not torch.equal(direct, contrastive_search(model, ids, mask, **kw))


def test_custom_generate_validates_through_generate():
    model = _model("gpt2", 0)
    ids, _, _ = _prompts(0, lengths=(4,))
    with pytest.raises(PoevalError, match="penalty_alpha"):
        model.generate(input_ids=ids, custom_generate=contrastive_generate, top_k=4, max_new_tokens=3)
    with pytest.raises(PoevalError, match="return_dict_in_generate"):
        model.generate(
            input_ids=ids,
            custom_generate=contrastive_generate,
            top_k=4,
            penalty_alpha=0.6,
            max_new_tokens=3,
            return_dict_in_generate=True,
        )
