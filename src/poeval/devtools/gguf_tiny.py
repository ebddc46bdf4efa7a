"""A tiny LLaMA written as a GGUF file, with SmolLM2's special-token layout, for the tests of `poeval import`.

The writer follows llama.cpp's conversion (convert_hf_to_gguf.py): tensors renamed by gguf-py's own name
map, the query and key projections permuted into llama.cpp's rotary layout (transformers permutes them
back when it reads the file), a byte-level BPE vocabulary with its merges. The MLP matrices are stored
quantised to Q8_0 so that reading the file really dequantises, as for the 4-bit SmolLM2 release.
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


def write(path: Path, hf_model, tok) -> Path:
    """``hf_model`` and ``tok`` as a GGUF file at ``path``; returns ``path``."""
    import gguf
    import numpy as np

    cfg = hf_model.config
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny llama")
    writer.add_context_length(cfg.max_position_embeddings)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_block_count(cfg.num_hidden_layers)
    writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(cfg.num_attention_heads)
    writer.add_head_count_kv(cfg.num_key_value_heads)
    writer.add_rope_freq_base(cfg.rope_parameters["rope_theta"] if getattr(cfg, "rope_parameters", None)
                              else cfg.rope_theta)
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    writer.add_vocab_size(cfg.vocab_size)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
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
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, cfg.num_hidden_layers)
    for name, tensor in hf_model.state_dict().items():
        if name == "lm_head.weight":
            continue   # tied to the embeddings: the file has token_embd only
        base, suffix = name.rsplit(".", 1)
        data = tensor.detach().numpy().astype(np.float32)
        if name.endswith("q_proj.weight"):
            data = _permute(data, cfg.num_attention_heads)
        elif name.endswith("k_proj.weight"):
            data = _permute(data, cfg.num_key_value_heads)
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
    return path
