"""A tiny LLaMA written as a GGUF file, with SmolLM2's special-token layout, and a tiny Gemma 3 with Gemma's
(a sentencepiece vocabulary, <pad> 0, <eos> 1, <bos> 2, <unk> 3, <mask> 4), for the tests of `poeval import`.

The writer follows llama.cpp's conversion (convert_hf_to_gguf.py): tensors renamed by gguf-py's own name
map, the query and key projections permuted into llama.cpp's rotary layout (transformers permutes them
back when it reads the file), a byte-level BPE vocabulary with its merges. The MLP matrices are stored
quantised to Q8_0 so that reading the file really dequantises, as for the 4-bit releases. Gemma's norm
weights are stored plus one (llama.cpp's Gemma conversion; transformers subtracts it when reading), its
projections unpermuted.
"""

from __future__ import annotations

import json
from pathlib import Path

# SmolLM2's layout: <|endoftext|> = 0 (also unk), <|im_start|> = 1 (BOS), <|im_end|> = 2 (EOS, pad)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CORPUS = ["the silver river sings beneath the quiet moon", "a hollow lantern burns across the meadow",
          "there once was a man from the town", "who fell with his hat upside down"] * 20
DIMS = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "max_position_embeddings": 256, "rope_theta": 10000.0, "rms_norm_eps": 1e-5}


def tokenizer():
    """A byte-level BPE tokenizer (vocabulary about 300) with SmolLM2's special tokens and ids."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=SPECIALS[1], eos_token=SPECIALS[2],
                                   pad_token=SPECIALS[2], unk_token=SPECIALS[0])


def model(vocab_size: int, seed: int = 0):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab_size, tie_word_embeddings=True, bos_token_id=1, eos_token_id=2,
                         pad_token_id=2, **DIMS)
    m = LlamaForCausalLM(config).eval()
    with torch.no_grad():   # give the norms non-trivial weights, so that a misplaced tensor shows
        for name, p in m.named_parameters():
            if "norm" in name:
                p.uniform_(0.5, 1.5)
    return m


def _permute(w, n_head: int):
    """llama.cpp's rotary permutation of a query or key projection (its convert_hf_to_gguf.py)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _writer(path: Path, arch: str, cfg):
    """A GGUF writer for ``arch`` holding the dimensions both layouts share, the file type Q8_0 (the MLP's)."""
    import gguf

    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_name(f"tiny {arch}")
    writer.add_context_length(cfg.max_position_embeddings)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_block_count(cfg.num_hidden_layers)
    writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(cfg.num_attention_heads)
    writer.add_head_count_kv(cfg.num_key_value_heads)
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    writer.add_vocab_size(cfg.vocab_size)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    return writer


def write(path: Path, hf_model, tok) -> Path:
    """``hf_model`` and ``tok`` as a GGUF file at ``path``; returns ``path``."""
    import gguf

    cfg = hf_model.config
    writer = _writer(path, "llama", cfg)
    writer.add_rope_freq_base(cfg.rope_parameters["rope_theta"] if getattr(cfg, "rope_parameters", None)
                              else cfg.rope_theta)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("smollm")
    tokens = tok.convert_ids_to_tokens(list(range(len(tok))))
    writer.add_token_list(tokens)
    writer.add_token_types([gguf.TokenType.CONTROL if t in SPECIALS else gguf.TokenType.NORMAL for t in tokens])
    writer.add_token_merges([" ".join(m) if isinstance(m, list) else m
                             for m in json.loads(tok.backend_tokenizer.to_str())["model"]["merges"]])
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_pad_token_id(2)
    writer.add_add_bos_token(False)

    def llama_layout(name, data):
        if name.endswith("q_proj.weight"):
            return _permute(data, cfg.num_attention_heads)
        if name.endswith("k_proj.weight"):
            return _permute(data, cfg.num_key_value_heads)
        return data

    _finish(writer, hf_model, gguf.MODEL_ARCH.LLAMA, llama_layout)
    return path


def _finish(writer, hf_model, arch, layout) -> None:
    """Add ``hf_model``'s tensors (``layout(name, array)``: the file's form of each) and write the file."""
    import gguf
    import numpy as np

    names = gguf.get_tensor_name_map(arch, hf_model.config.num_hidden_layers)
    for name, tensor in hf_model.state_dict().items():
        if name == "lm_head.weight":
            continue   # tied to the embeddings: the file has token_embd only
        base, suffix = name.rsplit(".", 1)
        data = layout(name, tensor.detach().numpy().astype(np.float32))
        target = f"{names.get_name(base)}.{suffix}"
        if ".mlp." in name:
            writer.add_tensor(target, gguf.quants.quantize(data, gguf.GGMLQuantizationType.Q8_0),
                              raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            writer.add_tensor(target, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


# --- Gemma 3: Gemma's special tokens and a sentencepiece vocabulary of single characters and bytes

GEMMA_SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]   # transformers adds <mask> if missing
GEMMA_DIMS = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 16, "max_position_embeddings": 256, "sliding_window": 128,
              "rms_norm_eps": 1e-6}


def gemma_vocab() -> tuple[list[str], list[int]]:
    """``(tokens, token types)``: the specials, the 256 byte-fallback tokens, then every character of
    :data:`CORPUS` and of German (a space spelt as sentencepiece's \u2581), one token each."""
    import gguf

    chars = sorted(set("".join(CORPUS).replace(" ", "\u2581") + "\näöüßÄÖÜ"))
    tokens = GEMMA_SPECIALS + [f"<0x{b:02X}>" for b in range(256)] + chars
    types = ([gguf.TokenType.CONTROL] * 3 + [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256
             + [gguf.TokenType.NORMAL] * len(chars))
    return tokens, [int(t) for t in types]


def gemma_model(vocab_size: int, seed: int = 0):
    import torch
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(seed)
    config = Gemma3TextConfig(vocab_size=vocab_size, tie_word_embeddings=True, pad_token_id=0, eos_token_id=1,
                              bos_token_id=2, **GEMMA_DIMS)
    m = Gemma3ForCausalLM(config).eval()
    with torch.no_grad():   # Gemma scales by (1 + weight): non-zero norm weights, so that a misplaced one shows
        for name, p in m.named_parameters():
            if "norm" in name:
                p.uniform_(-0.5, 0.5)
    return m


def write_gemma3(path: Path, hf_model) -> Path:
    """``hf_model`` (:func:`gemma_model`) with :func:`gemma_vocab` as a Gemma 3 GGUF file at ``path``."""
    import gguf

    cfg = hf_model.config
    tokens, types = gemma_vocab()
    writer = _writer(path, "gemma3", cfg)
    writer.add_key_length(cfg.head_dim)
    writer.add_value_length(cfg.head_dim)
    writer.add_sliding_window(cfg.sliding_window)
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * len(tokens))
    writer.add_token_types(types)
    writer.add_bos_token_id(2)
    writer.add_eos_token_id(1)
    writer.add_unk_token_id(3)
    writer.add_pad_token_id(0)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)

    def gemma_layout(name, data):
        return data + 1 if name.endswith("norm.weight") else data

    _finish(writer, hf_model, gguf.MODEL_ARCH.GEMMA3, gemma_layout)
    return path
