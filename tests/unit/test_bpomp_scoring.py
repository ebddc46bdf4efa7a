"""BPoMP scorers against a direct step-by-step reference on tiny random models (CPU, seconds)."""

import json

import pytest
import torch

from helpers import sample_stats
from poeval import bpomp
from poeval.bpomp import scoring
from poeval.errors import PoevalError

TEXTS = [
    "There once was a cat on a mat\nWho grew quite remarkably fat.",
    "A baker who lived by the sea\nMade muffins for tea.",
    "The wind blew so cold",
    "Unbelievably, extraordinarily cold!",
    "A",
]
TRAIN = TEXTS[:3] + ["The cat sat on the mat.", "A sailor went out in a boat.", "He baked them with care."]


def make_wordpiece():
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train_from_iterator(TRAIN, trainers.WordPieceTrainer(vocab_size=90, special_tokens=specials, show_progress=False))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")


def make_bert(initializer_range: float = 0.02):
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    tok = make_wordpiece()
    cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=128, pad_token_id=tok.pad_token_id,
                     initializer_range=initializer_range)
    return BertForMaskedLM(cfg).eval(), tok


@pytest.fixture(scope="module")
def bert():
    return make_bert()


@pytest.fixture(scope="module")
def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    from poeval.generators.lm.build import train_tokenizer

    torch.manual_seed(0)
    tok = train_tokenizer(TRAIN, vocab_size=300)
    cfg = GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=2, n_head=2, n_positions=128,
                     bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    return GPT2LMHeadModel(cfg).eval(), tok


def ref_causal(model, tok, text):
    """Token by token: log P(t_k | BOS t_1 .. t_{k-1}) from a separate forward on each prefix, for the
    text's tokens and the EOS after them (a text as the generators are trained on it)."""
    ids = [tok.bos_token_id] + tok(text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    total = 0.0
    with torch.no_grad():
        for k in range(1, len(ids)):
            logits = model(torch.tensor([ids[:k]])).logits[0, -1]
            total += torch.log_softmax(logits, -1)[ids[k]].item()
    return total


def ref_pll(model, tok, text, l2r):
    """One unbatched forward per token; words from WordPiece's '##' continuation marks."""
    ids = tok(text)["input_ids"]
    pieces = tok.convert_ids_to_tokens(ids)
    total = 0.0
    with torch.no_grad():
        for p in range(1, len(ids) - 1):  # skip [CLS] and [SEP]
            masked = list(ids)
            masked[p] = tok.mask_token_id
            q = p + 1
            while l2r and q < len(ids) - 1 and pieces[q].startswith("##"):
                masked[q] = tok.mask_token_id
                q += 1
            logits = model(torch.tensor([masked])).logits[0, p]
            total += torch.log_softmax(logits, -1)[ids[p]].item()
    return total


def test_causal_scores_match_reference(gpt2):
    model, tok = gpt2
    got = bpomp.causal_scores(model, tok, TEXTS, batch_size=2)  # padded batches of unequal lengths
    want = [ref_causal(model, tok, t) for t in TEXTS]
    assert got == pytest.approx(want, abs=1e-4)
    ids = scoring.causal_ids(tok, "A")
    assert ids[0] == tok.bos_token_id and ids[-1] == tok.eos_token_id  # the first real token and the end are scored


def test_tiny_tokenizer_splits_words(bert):
    _, tok = bert
    assert any(t.startswith("##") for t in tok.tokenize(TEXTS[3]))  # so the two PLL variants differ


@pytest.mark.parametrize("variant", bpomp.VARIANTS)
def test_masked_scores_match_reference(bert, variant):
    model, tok = bert
    got = bpomp.masked_scores(model, tok, TEXTS, variant=variant, batch_size=7)
    want = [ref_pll(model, tok, t, variant == "within_word_l2r") for t in TEXTS]
    assert got == pytest.approx(want, abs=1e-4)


def test_pll_variants_differ_on_split_words():
    # a sharply initialised model: the default one is nearly uniform, so masking the rest of a word moves
    # the score by only a few float32 ulps
    model, tok = make_bert(initializer_range=1.0)
    a = bpomp.masked_scores(model, tok, [TEXTS[3]], variant="original")[0]
    b = bpomp.masked_scores(model, tok, [TEXTS[3]], variant="within_word_l2r")[0]
    assert abs(a - b) > 1e-4


def test_masked_span_scores_only_that_word(bert):
    model, tok = bert
    text = TEXTS[3]
    start = text.index("extraordinarily")
    got = bpomp.masked_scores(model, tok, [text], spans=[(start, start + len("extraordinarily"))])[0]
    enc = tok(text, return_offsets_mapping=True)
    ids = enc["input_ids"]
    want = 0.0
    with torch.no_grad():
        for p, (a, b) in enumerate(enc["offset_mapping"]):
            if a >= start and b <= start + len("extraordinarily") and b > a:
                masked = list(ids)
                masked[p] = tok.mask_token_id
                want += torch.log_softmax(model(torch.tensor([masked])).logits[0, p], -1)[ids[p]].item()
    assert want != 0.0 and got == pytest.approx(want, abs=1e-4)


def _pairs_file(tmp_path):
    recs = [{"id": f"p{k}", "task": "word_swap", "original": TEXTS[k].split("\n"),
             "corrupted": TEXTS[k + 1].split("\n"), "changed": {}} for k in range(3)]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


@pytest.mark.parametrize("kind", bpomp.KINDS)
def test_write_scores(tmp_path, gpt2, bert, kind):
    model, tok = gpt2 if kind == "causal" else bert
    out = tmp_path / "scores.jsonl"
    summary = bpomp.write_scores(str(_pairs_file(tmp_path)), (model, tok), kind, str(out),
                                 variant="within_word_l2r", batch_size=3, threads=1)
    assert summary["pairs"] == 3 and summary["texts"] == 4  # shared texts are scored once
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    ref = (lambda t: ref_causal(model, tok, t)) if kind == "causal" else (lambda t: ref_pll(model, tok, t, True))
    for k, r in enumerate(recs):
        assert r["score_original"] == pytest.approx(ref(TEXTS[k]), abs=1e-4)
        assert r["score_corrupted"] == pytest.approx(ref(TEXTS[k + 1]), abs=1e-4)
        # the tokens each score sums: causal, the text's and the EOS; masked, all but [CLS] and [SEP]
        for side, text in (("original", TEXTS[k]), ("corrupted", TEXTS[k + 1])):
            n = len(tok(text, add_special_tokens=False)["input_ids"]) + 1 if kind == "causal" \
                else len(tok(text)["input_ids"]) - 2
            assert r[f"tokens_{side}"] == n
    assert summary["parameters"] == model.num_parameters()
    acc = bpomp.accuracy(str(out), bootstrap_reps=50)["word_swap"]
    assert acc["n"] == 3
    per_token = [r["score_original"] / r["tokens_original"] > r["score_corrupted"] / r["tokens_corrupted"]
                 for r in recs]
    assert acc["per_token"]["accuracy"] == pytest.approx(sum(per_token) / 3)


def test_saved_models_load_by_path(tmp_path, gpt2, bert):
    for (model, tok), kind in ((gpt2, "causal"), (bert, "masked")):
        model.save_pretrained(tmp_path / kind)
        tok.save_pretrained(tmp_path / kind)
        m, t = scoring.resolve_model(str(tmp_path / kind), kind)
        texts = TEXTS[:2]
        assert bpomp.causal_scores(m, t, texts) if kind == "causal" else bpomp.masked_scores(m, t, texts)
    with pytest.raises(PoevalError, match="cannot load masked"):
        scoring.resolve_model(str(tmp_path / "nothing"), "masked")


def test_scorer_bad_input(tmp_path, bert):
    model, tok = bert
    with pytest.raises(PoevalError, match="PLL variant"):
        bpomp.masked_scores(model, tok, TEXTS, variant="l2r")
    with pytest.raises(PoevalError, match="scorer kind"):
        bpomp.write_scores(str(_pairs_file(tmp_path)), bert, "seq2seq", str(tmp_path / "o.jsonl"))
    with pytest.raises(PoevalError, match="more than the model's"):
        bpomp.masked_scores(model, tok, ["word " * 200])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "original": "not a list"}\n')
    with pytest.raises(PoevalError, match="record 1"):
        bpomp.write_scores(str(bad), bert, "masked", str(tmp_path / "o.jsonl"))


def test_mlm_synonym_choice_picks_the_best_scored_candidate(bert):
    from poeval.bpomp import pairs, synonyms
    from poeval.bpomp.wordnet import default

    from helpers import GOOD, check_pair

    model, tok = bert
    recs = [{"id": f"h-{k}", "lines": lines} for k, lines in enumerate(GOOD)]
    # every reading (synonym_pos any), so that the candidates below are those the chooser saw
    made, rep = bpomp.make_pairs(recs, "synonym", synonym_choice="mlm", model=(model, tok), synonym_pos="any")
    first, _ = bpomp.make_pairs(recs, "synonym", synonym_choice="first", synonym_pos="any")
    assert len(made) == len(first) == 5
    wn = default()
    for p in made:
        check_pair(p, wn)
        (i,) = p["changed"]["lines"]
        lines = p["original"]
        partners = [pairs.end_word(lines[k]) for k in pairs.PARTNERS[i]]
        cands, _ = synonyms.candidates(wn, pairs.end_word(lines[i]), partners, {})
        scores = []
        for c in cands:
            new = lines[:i] + [pairs.replace_end_word(lines[i], c.form)] + lines[i + 1:]
            text = "\n".join(new)
            start = sum(len(x) + 1 for x in lines[:i]) + pairs.end_word_span(new[i])[0]
            scores.append(bpomp.masked_scores(model, tok, [text], variant="within_word_l2r",
                                              spans=[(start, start + len(c.form))])[0])
        assert p["changed"]["words"][1] == cands[scores.index(max(scores))].form


def test_masked_scores_without_output_embeddings_hook(bert, monkeypatch):
    """Models whose head cannot be narrowed to the masked position get full-length logits: same scores."""
    model, tok = bert
    want = bpomp.masked_scores(model, tok, TEXTS[:2])
    monkeypatch.setattr(model, "get_output_embeddings", lambda: None)
    assert bpomp.masked_scores(model, tok, TEXTS[:2]) == pytest.approx(want, abs=1e-5)
    assert want == pytest.approx([ref_pll(model, tok, t, False) for t in TEXTS[:2]], abs=1e-4)


def test_a_checkpoint_has_one_position_limit_for_sampling_and_scoring(tmp_path):
    """Sampling and the causal scorer read a checkpoint through one module: the sampler caps its budget at
    the model's positions (BOS prompt included), and the scorer takes a text of as many tokens and
    refuses one more."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from helpers import sampling
    from poeval.generators import checkpoint, lm
    from poeval.generators.lm.build import train_tokenizer

    limit, model_dir = 12, tmp_path / "m"
    tok = train_tokenizer(TRAIN, vocab_size=300)
    GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_embd=8, n_layer=1, n_head=1, n_positions=limit)
                    ).save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    stats = sample_stats(lm.sample, str(model_dir), {"temperature": 1.0}, sampling(1, batch_size=1, max_attempts=1),
                         str(tmp_path / "s.jsonl"), str(tmp_path / "s.json"), progress=False)
    assert stats["max_new_tokens"] == limit - 1 < sampling(1)["max_new_tokens"]
    model, tok = scoring.resolve_model(str(model_dir), "causal")
    assert checkpoint.max_positions(model) == limit
    by_length = {len(scoring.causal_ids(tok, " ".join(["cat"] * k))): " ".join(["cat"] * k) for k in range(1, 20)}
    assert limit in by_length and limit + 1 in by_length
    assert len(bpomp.causal_scores(model, tok, [by_length[limit]])) == 1
    with pytest.raises(PoevalError, match=f"more than the model's {limit} positions"):
        bpomp.causal_scores(model, tok, [by_length[limit + 1]])


def test_prompted_judgement_reads_the_answer_letters_in_both_orders(tmp_path, gpt2, monkeypatch):
    """Each pair asked with the original as A and as B; the scores sum the log-probabilities of the letters
    that name each text, from one unbatched forward per prompt (a short question: the tiny model has 128
    positions)."""
    from poeval.bpomp import prompted

    monkeypatch.setattr(prompted, "QUESTION", "A:\n{a}\nB:\n{b}\n?")
    model, tok = gpt2
    tok.chat_template = "{% for m in messages %}<user>{{ m['content'] }}\n{% endfor %}<assistant>"
    out = tmp_path / "judged.jsonl"
    summary = prompted.write_judgements(str(_pairs_file(tmp_path)), (model, tok), str(out), batch_size=4)
    assert summary["prompts"] == 6

    def letters(first, second):
        text = (f"<user>{prompted.QUESTION.format(a=first, b=second)}\n<assistant>")
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([tok(text)["input_ids"]])).logits[0, -1], -1)
        return [logp[tok.convert_tokens_to_ids(c)].item() for c in "AB"]

    for k, r in enumerate(json.loads(x) for x in out.read_text().splitlines()):
        (a1, b1), (a2, b2) = letters(TEXTS[k], TEXTS[k + 1]), letters(TEXTS[k + 1], TEXTS[k])
        assert r["score_original"] == pytest.approx(a1 + b2, abs=1e-4)
        assert r["score_corrupted"] == pytest.approx(b1 + a2, abs=1e-4) and r["scorer"] == "prompted"
    assert bpomp.accuracy(str(out), bootstrap_reps=20)["word_swap"]["per_token"] is None
    tok.chat_template = None
    with pytest.raises(PoevalError, match="no chat template"):
        prompted.write_judgements(str(_pairs_file(tmp_path)), (model, tok), str(tmp_path / "x.jsonl"))
