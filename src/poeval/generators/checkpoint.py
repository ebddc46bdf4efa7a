"""Transformers checkpoints as poeval reads them: loading a causal LM with its tokenizer (offline unless
the user allows downloads), the verse order it was trained in, the tokens that frame its texts and its
position limit. The generators (:mod:`poeval.generators.lm`) and BPoMP's causal scorer
(:mod:`poeval.bpomp.scoring`) both read checkpoints through this module, so a checkpoint means the same
to both. It also tells a poetry port's checkpoint (:data:`MANIFEST`) from a transformers one.
"""

from __future__ import annotations

from pathlib import Path

from poeval import hub
from poeval.errors import PoevalError
from poeval.io import read_json_object

VERSE_ORDER = "poeval_verse_order"   # the checkpoint config's key for the model's verse order
MANIFEST = "poeval_model.json"       # a poetry port's checkpoint: {"arch", "config", "vocab"}


def port_arch(model_dir: str | Path) -> str | None:
    """The arch a poetry port's checkpoint names in its manifest; None for any other directory (a
    transformers checkpoint, trained by :mod:`poeval.generators.lm` or imported)."""
    manifest = Path(model_dir) / MANIFEST
    if not manifest.is_file():
        return None
    arch = read_json_object(manifest).get("arch")
    if not isinstance(arch, str) or not arch:
        raise PoevalError(f"{manifest}: no 'arch' (the poetry port that wrote the checkpoint); "
                          "retrain it or restore the file")
    return arch


def orient(verses: list[str], order: str) -> list[str]:
    """``verses`` in a model's verse order: each one's characters reversed for ``reversed``, its words (runs
    of non-space, punctuation kept on its word) for ``words``. Each is its own inverse: it also turns a
    model's output back (``words`` leaves single spaces between words, as a verse of the corpus has)."""
    if order == "reversed":
        return [v[::-1] for v in verses]
    if order == "words":
        return [" ".join(v.split()[::-1]) for v in verses]
    return list(verses)


def verse_order(model) -> str:
    """The verse order a checkpoint was trained in (``forward`` for any model poeval did not reverse)."""
    return getattr(model.config, VERSE_ORDER, None) or "forward"


def text_bounds(tokenizer) -> tuple[str, str]:
    """The tokens that start and end every text a causal LM sees in poeval: the tokenizer's own BOS and
    EOS (BOS falls back to EOS). Training frames each quatrain with them, sampling prompts with the BOS
    and accepts a quatrain only when the EOS ends it, and BPoMP's causal scorer frames each limerick with
    both. SmolLM2-Instruct: ``<|im_start|>`` and ``<|im_end|>``; ``<|endoftext|>`` is neither, and a
    generation that emits it is invalid (``special_token``). Scratch tokenizers: ``<|endoftext|>`` twice."""
    eos = tokenizer.eos_token
    if eos is None:
        raise PoevalError("a causal LM's tokenizer needs an EOS token: it ends every text")
    return tokenizer.bos_token or eos, eos


def param_key(name: str | None, field: str = "name_or_path") -> str:
    """The params key that gave a model's ``field`` (``models.<name>.<field>``), named in errors."""
    return f"models.{name}.{field}" if name else field


def load(name_or_path: str, *, name: str | None = None, tokenizer: str | None = None, key: str | None = None):
    """Load ``(model, tokenizer)`` from a local directory, a ``.gguf`` file, a pretrained release's short id
    (:mod:`poeval.generators.pretrained`: its imported checkpoint) or a hub id, offline unless the user
    allows downloads (:mod:`poeval.hub`). A GGUF file is read as `poeval import` reads it (dequantised
    weights in a plain model, :func:`poeval.generators.pretrained.read_gguf`), with the tokenizer it holds.

    ``tokenizer`` (default: ``name_or_path``) is where the tokenizer lives. Any loading failure becomes
    one PoevalError that names the model and the parameter that gave it: ``key``, else
    ``models.<name>.name_or_path`` (or ``models.<name>.tokenizer``), so the user knows what to fix.
    """
    model_key = key or param_key(name, "name_or_path")
    tok_key = param_key(name, "tokenizer") if tokenizer else model_key
    model_ref = _ref(name_or_path, model_key, "model")
    tok_ref = _ref(tokenizer, tok_key, "tokenizer") if tokenizer else model_ref
    from transformers import AutoModelForCausalLM, AutoTokenizer   # after the checks: it takes seconds

    from poeval.generators import pretrained

    def fail(ref: str, where: str, what: str, err: Exception):
        return PoevalError(f"cannot load {what} {ref!r} given by {where}: {hub.load_problem(err, ref)}")

    local = hub.local_files_only()
    model = tok = None
    if isinstance(model_ref, Path):   # a GGUF file holds its tokenizer too: read once when it is the one
        model, own_tok, _ = pretrained.read_gguf(model_ref, model_key)
        tok = own_tok if tok_ref is model_ref else None
    if tok is None and isinstance(tok_ref, Path):
        tok = pretrained.gguf_tokenizer(tok_ref, tok_key)
    if tok is None:
        try:
            tok = AutoTokenizer.from_pretrained(tok_ref, local_files_only=local, trust_remote_code=False)
        except hub.LOAD_ERRORS as err:
            raise fail(tok_ref, tok_key, "tokenizer" if tokenizer else "model", err) from None
    if model is None:
        try:
            model = AutoModelForCausalLM.from_pretrained(model_ref, local_files_only=local, trust_remote_code=False)
        except hub.LOAD_ERRORS as err:
            raise fail(model_ref, model_key, "model", err) from None
    check_vocabulary(model, tok, f"model {str(model_ref)!r} ({model_key})", f"{str(tok_ref)!r} ({tok_key})",
                     param_key(name, "tokenizer"))
    if tok.eos_token_id is None:
        raise PoevalError(f"model {str(tok_ref)!r} ({tok_key}): its tokenizer has no EOS token")
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    if tok.bos_token_id is None:
        tok.bos_token = tok.eos_token
    sync_special_ids(model, tok)
    return model, tok


# A model's embedding may have more rows than its tokenizer has tokens when they are padding (rounded up for
# fast matrix shapes, or reserved): a few hundred rows, under 2 % of the vocabulary in the common models. More
# than this many is another model's tokenizer (docs/own-generator.md "A checkpoint of your own").
PADDING_ROWS = 128
PADDING_SHARE = 1 / 8


def check_vocabulary(model, tokenizer, what: str, tok_what: str, tok_param: str) -> None:
    """Refuse a tokenizer that does not fit ``model``'s input embedding: one with more tokens than the embedding
    has rows (its last ids would index past it), or with fewer than the rows by more than padding explains
    (:data:`PADDING_ROWS`, or :data:`PADDING_SHARE` of the tokenizer's vocabulary when that is more). ``what``
    and ``tok_what`` name the model and the tokenizer, ``tok_param`` the params key that names a tokenizer."""
    embedding = model.get_input_embeddings()
    rows = getattr(embedding, "num_embeddings", None)
    if not isinstance(rows, int):   # an embedding module without a row count: nothing to compare
        return
    tokens = len(tokenizer)
    if tokens > rows:
        problem = f"its tokenizer {tok_what} has {tokens} tokens but its embedding only {rows} rows"
    elif rows - tokens > max(PADDING_ROWS, tokens * PADDING_SHARE):
        problem = (f"its embedding has {rows} rows but its tokenizer {tok_what} only {tokens} tokens, more "
                   "than padding explains")
    else:
        return
    raise PoevalError(f"{what}: {problem}; name the tokenizer the model was trained with in {tok_param}")


def _ref(name: object, key: str, what: str) -> str | Path:
    """What ``from_pretrained`` reads for a model name: a ``.gguf`` name's file (a Path, checked to exist),
    else a release's imported checkpoint, a folder or a hub id (:func:`poeval.hub.resolve`)."""
    from poeval.generators import pretrained

    if pretrained.is_gguf(name):
        return pretrained.gguf_file(name, key, what)
    return hub.resolve(pretrained.checkpoint(name) if isinstance(name, str) else name, key, what)


def sync_special_ids(model, tokenizer) -> None:
    """Make the model's (and its generation config's) BOS, EOS and pad ids the tokenizer's: generation and
    scoring read them from the model, and a tokenizer given apart from its model may define them differently."""
    for cfg in (model.config, getattr(model, "generation_config", None)):
        if cfg is None:
            continue
        cfg.bos_token_id = tokenizer.bos_token_id
        cfg.eos_token_id = tokenizer.eos_token_id
        cfg.pad_token_id = tokenizer.pad_token_id


def max_positions(model) -> int | None:
    """The longest sequence ``model`` takes (its ``n_positions`` or ``max_position_embeddings``), None
    when its config names none: training crops to it, sampling caps its budget at it, and the BPoMP
    scorer refuses a longer text."""
    cfg = model.config
    for key in ("n_positions", "max_position_embeddings"):
        value = getattr(cfg, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None
