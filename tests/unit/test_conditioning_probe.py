"""scripts/conditioning_probe.py's training hooks: the end-word loss weights (--weigh) and the balanced
training split (--balance), checked against the verses' own last words and against counts."""

import collections
import importlib.util
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def probe():
    spec = importlib.util.spec_from_file_location("conditioning_probe", ROOT / "scripts" / "conditioning_probe.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


VERSES = ["Where a brooklet led them onward,", "Where the trail of deer and bison",
          "Marked the soft mud on the margin;--", "Till they found all further passage"]


def test_weights_fall_on_each_verses_last_word_and_its_marks(probe):
    import gguf_tiny

    tok = gguf_tiny.tokenizer()   # byte-level BPE: words split into several pieces
    ids = tok(tok.bos_token + "\n".join(VERSES) + tok.eos_token, add_special_tokens=False).input_ids
    weights = probe.end_word_weights(torch.tensor([ids]), tok, 3.0)[0].tolist()
    assert set(weights) == {1.0, 3.0}
    runs, current = [], []   # the maximal runs of weighted tokens, decoded
    for i, w in zip(ids, weights):
        if w == 3.0:
            current.append(i)
        elif current:
            runs, current = runs + [tok.decode(current)], []
    assert runs == [" " + v.split()[-1] for v in VERSES]   # the space before the word, no newline after


def test_balanced_split_gives_each_shown_scheme_a_sixth(probe, tmp_path):
    schemes = ["abcd"] * 50 + ["aabb"] * 20 + ["abab"] * 10 + ["abba"] * 3 + ["abcb"] * 8 + ["abbc"] * 9
    src = tmp_path / "train.jsonl"
    src.write_text("".join(json.dumps({"id": str(i), "lines": VERSES, "scheme": s}) + "\n"
                           for i, s in enumerate(schemes)))
    out = probe.balanced(str(src), str(tmp_path / "balanced.jsonl"))
    rows = [json.loads(line) for line in open(out)]
    counts = collections.Counter(r["scheme"] if r["scheme"] in probe.SHOWN else "other" for r in rows)
    assert counts == {s: 100 // 6 for s in (*probe.SHOWN, "other")}
    by_id = {str(i): s for i, s in enumerate(schemes)}
    assert all(by_id[r["id"]] == r["scheme"] for r in rows)   # rows are drawn whole from the split
    again = probe.balanced(str(src), str(tmp_path / "again.jsonl"))   # seeded: the same file again
    assert open(again).read() == open(out).read()


def test_continuation_logprob_is_the_models_own_loss_on_the_continuation(probe, tiny_gguf_llama):
    model, tok = tiny_gguf_llama.model.eval(), tiny_gguf_llama.tok
    prompt, text = tok.bos_token + "Rhyme scheme: abab.", "\n".join(VERSES)
    p, t = (tok(x, add_special_tokens=False).input_ids for x in (prompt, text))
    ids = torch.tensor([p + t])
    labels = ids.clone()
    labels[0, :len(p)] = -100   # HF's mean cross-entropy over the continuation's tokens only
    with torch.no_grad():
        loss = model(ids, labels=labels).loss.item()
    assert probe.continuation_logprob(model, tok, prompt, text) == pytest.approx(-loss * len(t), rel=1e-5)
