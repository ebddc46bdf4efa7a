"""Style adherence: shares of hand-labelled samples, the scheme prompt, the pairs and the rules."""

import dataclasses
import json
import shutil

import pytest

from helpers import sampling
from poeval import params as poeval_params
from poeval import config, paths
from poeval.cli import main
from poeval.errors import PoevalError
from poeval.generators import lm
from poeval.generators.lm.build import add_style_tokens, byte_tokenizer
from poeval.generators.lm.generation import generate_batch, style_prompt
from poeval.io import write_jsonl
from poeval.metrics import adherence
from helpers import ROOT, _dry_run_inputs, _workdir, sample_stats, snakemake

# quatrains whose detected scheme is unambiguous (checked in the first test)
Q = {
    "aabb": ["I saw a cat", "upon the mat", "I saw a dog", "upon the log"],
    "aabb2": ["The night was long", "I sang a song", "The wind was cold", "the tale was told"],
    "aabb_rep": ["I saw a cat", "beside the cat", "I saw a dog", "upon the log"],   # cat/cat: a repetition
    "abab": ["I saw a cat", "I saw a dog", "upon the mat", "upon the log"],
    "abab2": ["The night was long", "the wind was cold", "I sang a song", "the tale was told"],
    "abcd": ["I saw a cat", "the river ran", "a bird flew by", "we went to sleep"],
    "abcd2": ["The morning came", "a quiet room", "under the trees", "my brother spoke"],
}
PROMPTED = {"aabb": ["aabb", "aabb2", "aabb_rep", "abab"], "abab": ["abab", "abcd", "abab2", "abcd2"],
            "abba": ["abcd2"], "abcd": ["abcd", "aabb"]}
UNPROMPTED = ["aabb", "abab", "abcd", "abcd2", "aabb_rep"]


def _write(path, keys):
    write_jsonl(path, [{"id": str(i), "lines": Q[k]} for i, k in enumerate(keys)])
    return str(path)


def test_detector_labels_the_hand_built_quatrains():
    counts = adherence.prompt_counts([{"lines": lines} for lines in Q.values()], "en")
    assert counts == {"n": 7, "detected": {"aabb": 3, "abab": 2, "abcd": 2}, "repeating": {"aabb": 1}}


def test_table_and_figure_from_hand_labelled_cells(tmp_path):
    items = [f"{s}={_write(tmp_path / f'{s}.jsonl', keys)}" for s, keys in PROMPTED.items()]
    assert main(["adherence", "cell", *items, "--lang", "en", "--system", "x-cond", "--out",
                 str(tmp_path / "prompted.json")]) in (0, None)
    assert main(["adherence", "cell", f"none={_write(tmp_path / 'base.jsonl', UNPROMPTED)}", "--lang", "en",
                 "--system", "x", "--out", str(tmp_path / "base.json")]) in (0, None)
    pair = f"{tmp_path / 'prompted.json'}={tmp_path / 'base.json'}"
    out = tmp_path / "t.tsv"
    main(["adherence", "table", pair, "--schemes", "aabb", "abab", "abba", "abcd", "--out", str(out)])
    # aabb: 3 of 4 match, one of them repeats cat/cat; baseline 2 of 5 aabb; abcd matches have no rhymes
    assert out.read_text() == (
        "lang\tsystem\tbaseline\tscheme\tn\tadherence\tbaseline_n\tbaseline_share\trepetitions\n"
        "en\tx-cond\tx\taabb\t4\t0.7500\t5\t0.4000\t0.3333\n"
        "en\tx-cond\tx\tabab\t4\t0.5000\t5\t0.2000\t0.0000\n"
        "en\tx-cond\tx\tabba\t1\t0.0000\t5\t0.0000\tNA\n"
        "en\tx-cond\tx\tabcd\t2\t0.5000\t5\t0.4000\tNA\n")
    with pytest.raises(PoevalError, match="no sample prompted with abcb"):
        adherence.write_table([(str(tmp_path / "prompted.json"), str(tmp_path / "base.json"))], ["abcb"], str(out))
    with pytest.raises(PoevalError, match="no unprompted sample"):
        adherence.write_table([(str(tmp_path / "prompted.json"),) * 2], ["aabb"], str(out))
    png = tmp_path / "f.png"
    main(["adherence", "figure", pair, "--schemes", "aabb", "abab", "--out", str(png)])
    first = png.read_bytes()
    main(["adherence", "figure", pair, "--schemes", "aabb", "abab", "--out", str(png)])
    assert len(first) > 5_000 and png.read_bytes() == first


def test_the_rules_jobs_name_the_prompts_and_the_sample_size(tmp_path, root):
    """Rule adherence_cell passes the prompts as its job and the samples in their order: the same cell as the
    PROMPT=SAMPLES items by hand, its stamp the job; rule adherence_sample's job is the main sample's, prompted
    with the scheme, at style_adherence.n."""
    from poeval.report.steps import by_rule

    files = [_write(tmp_path / f"{s}.jsonl", PROMPTED[s]) for s in ("aabb", "abab")]
    assert main(["adherence", "cell", f"aabb={files[0]}", f"abab={files[1]}", "--lang", "en", "--system", "x-cond",
                 "--out", str(tmp_path / "hand.json")]) == 0
    resolved = poeval_params.resolve(config.read(root / "params.yaml"))
    job = by_rule()["adherence_cell"].build(resolved, lang="en", system="x-cond", prompting="prompted")
    assert job.prompts == resolved["style_adherence"]["schemes"]
    job = dataclasses.replace(job, prompts=["aabb", "abab"])
    assert main(["adherence", "cell", *files, "--job", job.to_json(), "--out", str(tmp_path / "job.json")]) == 0
    assert (tmp_path / "job.json").read_bytes() == (tmp_path / "hand.json").read_bytes()
    stamp = json.loads((tmp_path / "job.json.stamp.json").read_text())
    assert stamp["provenance"]["params"] == job.recorded() == {"lang": "en", "system": "x-cond", "prompts": ["aabb", "abab"],
                                                 "repetition": resolved["metrics"]["rhyme"]["repetition"]}
    sample = by_rule()["adherence_sample"].build(resolved, lang="en", system="gpt2-s", scheme="abab")
    assert (sample.style, sample.sampling["n"]) == ("abab", resolved["style_adherence"]["n"])


def test_pairs_named_derived_or_self():
    models = {name: {"arch": arch, "conditioned": cond} for name, arch, cond in (
        ("gpt2-s", "gpt2", False), ("gpt2-s-cond", "gpt2", True), ("bygpt5-s-cond", "bygpt5", True),
        ("llama-s-cond", "llama", True), ("sa-s-cond", "sa", True), ("sa-s", "sa", False))}
    cfg = {"models": models, "systems": ["sa-s", "sa-s-cond", "bygpt5-s-cond", "gpt2-s-cond", "gpt2-s"],
           "style_adherence": {"pairs": None}}   # resolved params: the schema's default, no explicit pairs
    # the port is never paired; bygpt5-s-cond has no unconditioned twin in systems
    assert adherence.pairs(cfg) == {"gpt2-s-cond": "gpt2-s"}
    cfg["style_adherence"] = {"pairs": {"bygpt5-s-cond": "bygpt5-s-cond", "llama-s-cond": "gpt2-s"}}
    assert adherence.pairs(cfg) == {"bygpt5-s-cond": "bygpt5-s-cond", "gpt2-s-cond": "gpt2-s"}


def test_bad_pairs_are_params_errors(tmp_path):
    overlay = tmp_path / "o.yaml"
    overlay.write_text("style_adherence: {pairs: {gpt2-s: gpt2-s, bygpt5-s-cond: nope}, decoding: greedy}\n")
    with pytest.raises(PoevalError) as err:
        poeval_params.load(ROOT / "params.yaml", (overlay,))
    assert "style_adherence.pairs.gpt2-s: not a style-conditioned transformer" in str(err.value)
    assert "style_adherence.pairs.bygpt5-s-cond: baseline 'nope'" in str(err.value)
    assert "style_adherence.decoding: unknown decoding config 'greedy'" in str(err.value)


def _tiny_model(path, conditioned: bool):
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = byte_tokenizer()
    if conditioned:
        add_style_tokens(tok)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_layer=1, n_embd=16, n_head=2, n_positions=64,
                                       bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                                       pad_token_id=tok.pad_token_id))
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return tok


def test_prompt_is_bos_then_the_scheme_token(tmp_path, monkeypatch):
    tok = _tiny_model(tmp_path / "cond", conditioned=True)
    prompts = []
    generate = generate_batch

    def spy(model, prompt, *args):
        prompts.append(prompt.tolist())
        return generate(model, prompt, *args)

    monkeypatch.setattr(lm.generation, "generate_batch", spy)
    stats = sample_stats(lm.sample, str(tmp_path / "cond"), {"temperature": 1.0},
                         sampling(1, batch_size=3, max_new_tokens=20, max_attempts=3), str(tmp_path / "s.jsonl"),
                         str(tmp_path / "s.json"), style="abab", progress=False)
    abab = tok.convert_tokens_to_ids("<scheme=abab>")
    assert abab not in (tok.bos_token_id, tok.unk_token_id)
    assert prompts and all(row == [tok.bos_token_id, abab] for p in prompts for row in p)
    assert stats["style"] == "abab"   # in the stats file too, where a quatrain was valid (else nothing is written)
    assert not stats["valid"] or json.loads((tmp_path / "s.json").read_text())["style"] == "abab"
    sample_stats(lm.sample, str(tmp_path / "cond"), {"temperature": 1.0},
                 sampling(1, batch_size=3, max_new_tokens=20, max_attempts=3), str(tmp_path / "u.jsonl"),
                 str(tmp_path / "u.json"), progress=False)
    assert all(row == [tok.bos_token_id] for row in prompts[-1])   # unprompted: BOS alone
    with pytest.raises(PoevalError, match="not a four-line rhyme scheme"):
        style_prompt(tok, "baba")
    _tiny_model(tmp_path / "plain", conditioned=False)
    with pytest.raises(PoevalError, match="not trained style-conditioned"):
        lm.sample(str(tmp_path / "plain"), {"temperature": 1.0}, sampling(1, max_new_tokens=5),
                  str(tmp_path / "p.jsonl"), str(tmp_path / "p.json"), style="abab", progress=False)


def test_dry_run_of_the_adherence_targets(tmp_path):
    """Tiny overlay: bygpt5-s-cond against its own unprompted main sample; config/adherence/cpu-long.yaml: gpt2-l-cond
    against gpt2-l, 200 per scheme."""
    work = _workdir(tmp_path)
    shutil.copy(ROOT / "config" / "adherence" / "cpu-long.yaml", work / "config" / "adherence" / "cpu-long.yaml")
    targets = (paths.table("style_adherence"), paths.figure("style_adherence"))
    proc = snakemake(work, "-n", "-p", *targets)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    out = proc.stdout + proc.stderr
    jobs = _dry_run_inputs(out)
    system = "bygpt5-s-cond"
    assert jobs["style_adherence_table"] == [paths.adherence_cell("en", system, p) for p in ("prompted", "unprompted")]
    assert jobs["adherence_cell"] in ([paths.samples("en", system, "vanilla")],
                                      [paths.adherence_samples("en", system, s) for s in ("aabb", "abab")])
    assert out.count("rule adherence_sample:") == 2 and '"style": "abab"' in out and '"n": 5' in out
    assert "rule all:" not in out   # only what the targets need

    proc = snakemake(work, "-n", "-p", *targets, configs=("config/scale/tiny.yaml", "config/adherence/cpu-long.yaml"))
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    out = proc.stdout + proc.stderr
    assert f"prompted.json={paths.adherence_cell('en', 'gpt2-l', 'unprompted')}" in out
    assert out.count("rule adherence_sample:") == 2 and '"n": 200' in out and "bygpt5" not in out
    assert out.count('"verse_order": "reversed"') == 2   # both trainings reversed: the overlay merges into models
