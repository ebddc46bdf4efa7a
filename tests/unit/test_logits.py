"""Logits only where needed (poeval.generators.lm.logits): training loss, its gradients, causal scores and
the sampler's last-position logits equal the straightforward full-logits computation, on tiny GPT-2, LLaMA
and Gemma 3 (whose forward soft-caps its logits after the head) with padded batches."""

import pytest
import torch
import torch.nn.functional as F

from poeval import bpomp
from poeval.generators.lm import logits as lg
from poeval.generators.lm.build import train_tokenizer
from poeval.generators.lm.training import _collate, _loss_sum

TEXTS = ["There once was a cat on a mat\nWho grew quite remarkably fat.", "A baker who lived by the sea",
         "The wind blew so cold", "A"]


def _model(arch: str, vocab: int):
    import transformers as tf

    torch.manual_seed(0)
    small = dict(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                 num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=128)
    if arch == "gpt2":
        return tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=vocab, n_embd=32, n_layer=2, n_head=2, n_positions=128,
                                                   bos_token_id=0, eos_token_id=0))
    if arch == "llama":
        return tf.LlamaForCausalLM(tf.LlamaConfig(**small))
    # a small cap, so that soft-capping changes the logits visibly: a head without it would fail the checks
    return tf.Gemma3ForCausalLM(tf.Gemma3TextConfig(**small, head_dim=16, final_logit_softcapping=0.5,
                                                    sliding_window=4, layer_types=["sliding_attention",
                                                                                   "full_attention"]))


@pytest.fixture(scope="module")
def tok():
    return train_tokenizer(TEXTS, vocab_size=300)


@pytest.fixture(scope="module", params=["gpt2", "llama", "gemma3"])
def model(request, tok):
    return _model(request.param, len(tok)).eval()


def _batch(tok):
    seqs = [tok(t, add_special_tokens=False)["input_ids"] for t in TEXTS]
    return _collate(seqs, tok.pad_token_id)      # right-padded, rows of unequal lengths


def _reference_loss(model, input_ids, mask, labels):
    """The straightforward loss: logits of every position, shifted, cross-entropy ignoring the padding."""
    logits = model(input_ids=input_ids, attention_mask=mask).logits[:, :-1].float()
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1), ignore_index=-100,
                           reduction="sum")


def _grads(model, loss):
    model.zero_grad()
    loss.backward()
    return [p.grad.clone() for p in model.parameters() if p.grad is not None]


def test_training_loss_and_gradients_equal_the_full_logits_ones(model, tok):
    batch = _batch(tok)
    got, n = _loss_sum(model, *batch)
    want = _reference_loss(model, *batch)
    assert n == int((batch[2][:, 1:] != -100).sum()) and n < batch[0][:, 1:].numel()   # the padding is left out
    assert got.item() == pytest.approx(want.item(), rel=1e-5)
    for a, b in zip(_grads(model, got), _grads(model, _reference_loss(model, *batch))):
        # relative to each tensor's scale: a near-zero entry carries the rounding of the larger ones
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5 * float(b.abs().max()))


def test_softcapping_is_the_models_own(tok):
    """The narrowed logits are the forward's, soft-capped, not the head's raw output."""
    model = _model("gemma3", len(tok)).eval()
    ids, mask, labels = _batch(tok)
    rows, pos = torch.nonzero(labels[:, 1:] != -100, as_tuple=True)
    with torch.no_grad():
        out = lg.logits_at(model, rows, pos, input_ids=ids, attention_mask=mask)
        full = model(input_ids=ids, attention_mask=mask).logits
        raw = model.lm_head(model.model(input_ids=ids, attention_mask=mask).last_hidden_state)[rows, pos]
    assert out.shape == (len(rows), len(tok)) and not torch.allclose(out, raw, rtol=1e-3)
    torch.testing.assert_close(out, full[rows, pos], rtol=1e-5, atol=1e-6)


def test_causal_scores_equal_the_full_log_softmax(model, tok):
    got = bpomp.causal_scores(model, tok, TEXTS, batch_size=3)
    want = []
    with torch.no_grad():
        for t in TEXTS:
            ids = torch.tensor([bpomp.scoring.causal_ids(tok, t)])
            logp = torch.log_softmax(model(input_ids=ids).logits[0, :-1].float(), -1)
            want.append(float(logp.gather(1, ids[0, 1:, None]).sum()))
    assert got == pytest.approx(want, rel=1e-5)


def test_a_head_that_cannot_be_narrowed_gives_the_same_scores(model, tok, monkeypatch):
    want = bpomp.causal_scores(model, tok, TEXTS, batch_size=3)
    monkeypatch.setattr(model, "get_output_embeddings", lambda: None)
    assert bpomp.causal_scores(model, tok, TEXTS, batch_size=3) == pytest.approx(want, rel=1e-5)


def test_sampling_asks_for_the_last_logits_only(model, tok):
    ids, mask, _ = _batch(tok)
    assert lg.keep_last(model) == {"logits_to_keep": 1}
    with torch.no_grad():
        last = model(input_ids=ids, **lg.keep_last(model)).logits
        full = model(input_ids=ids).logits
    assert last.shape[1] == 1
    torch.testing.assert_close(last[:, -1], full[:, -1], rtol=1e-5, atol=1e-6)


def test_a_forward_without_logits_to_keep_gets_no_such_argument():
    class Plain(torch.nn.Module):
        def forward(self, input_ids, attention_mask=None):
            return input_ids

    assert lg.keep_last(Plain()) == {}
