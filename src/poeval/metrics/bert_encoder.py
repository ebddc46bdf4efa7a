"""A BERT sentence encoder with mean pooling, run in plain PyTorch from a sentence-transformers folder.

all-MiniLM-L6-v2, the bundled default encoder, is such a folder: ``modules.json`` lists a Transformer
(``BertModel``), mean pooling and normalisation. Importing ``sentence_transformers`` (which pulls in
transformers' modelling code and scikit-learn) costs several seconds per process, more than embedding
a whole sample: every semantic and diversity cell is its own process. This module computes the same
function with torch, the ``tokenizers`` tokenizer of the folder and its safetensors weights:

* the tokenizer as sentence-transformers calls it (special tokens, truncation to ``max_seq_length``
  of ``sentence_bert_config.json``, padding to the longest text of the batch);
* BERT (Devlin et al. 2019): word + position + token-type (0) embeddings and LayerNorm, then per layer
  self-attention over the unpadded tokens, dense + residual + LayerNorm, GELU feed-forward + residual +
  LayerNorm (post-norm, the ``BertModel`` layout the folder's config names);
* the mean of the last hidden states over the text's tokens, L2-normalised.

:func:`supports` says whether a folder has exactly that layout; any other folder loads through
sentence-transformers (:mod:`poeval.metrics.semantic`). tests/unit/test_semantic.py checks the
embeddings against sentence-transformers' own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np

_MODULES = ("sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling",
            "sentence_transformers.models.Normalize")


def _json(path: Path) -> dict | list | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def supports(folder: str | Path) -> bool:
    """Whether ``folder`` is a sentence-transformers BERT encoder with mean pooling and normalisation."""
    folder = Path(folder)
    modules = _json(folder / "modules.json")
    if not isinstance(modules, list) or tuple(m.get("type") for m in modules) != _MODULES:
        return False
    config = _json(folder / "config.json") or {}
    pooling = _json(folder / modules[1].get("path", "") / "config.json") or {}
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v is True}
    return (config.get("model_type") == "bert" and config.get("hidden_act") == "gelu"
            and config.get("position_embedding_type", "absolute") == "absolute"
            and modes == {"pooling_mode_mean_tokens"} and modules[0].get("path", "") == ""
            and (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file())


class BertSentenceEncoder:
    """The folder's encoder, with the part of ``SentenceTransformer``'s interface poeval uses."""

    def __init__(self, folder: str | Path, device: str | None = None):
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        folder = Path(folder)
        config = _json(folder / "config.json")
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.dim = int(config["hidden_size"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        st_config = _json(folder / "sentence_bert_config.json") or {}
        max_length = min(int(st_config.get("max_seq_length") or config["max_position_embeddings"]),
                         int(config["max_position_embeddings"]))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=max_length)
        self.tokenizer.enable_padding(pad_id=int(config.get("pad_token_id", 0)))   # to the batch's longest
        self.device = torch.device(device or "cpu")
        self.weights = {k: v.to(self.device, torch.float32) for k, v in load_file(str(folder / "model.safetensors")).items()}

    def get_sentence_embedding_dimension(self) -> int:
        return self.dim

    def encode(self, texts: Sequence[str], batch_size: int = 32, convert_to_numpy: bool = True,
               normalize_embeddings: bool = True, show_progress_bar: bool = False) -> np.ndarray:
        import torch

        out = []
        with torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                out.append(self._batch(list(texts[start:start + batch_size])).float().cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, self.dim), dtype=np.float32)

    def _batch(self, texts: list[str]):
        import torch

        encoded = self.tokenizer.encode_batch(texts)
        ids = torch.tensor([e.ids for e in encoded], device=self.device)
        mask = torch.tensor([e.attention_mask for e in encoded], device=self.device)
        hidden = self._forward(ids, mask.bool())
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        mean = (hidden * weights).sum(dim=1) / torch.clamp(weights.sum(dim=1), min=1e-9)
        return torch.nn.functional.normalize(mean, p=2, dim=1)

    def _forward(self, ids, mask):
        import torch.nn.functional as F

        w = self.weights
        positions = w["embeddings.position_embeddings.weight"][: ids.shape[1]]
        x = w["embeddings.word_embeddings.weight"][ids] + positions + w["embeddings.token_type_embeddings.weight"][0]
        x = self._norm(x, "embeddings.LayerNorm")
        attend = mask[:, None, None, :]   # keys that are tokens of the text, for every head and query
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            q, k, v = (self._heads(self._linear(x, p + f"attention.self.{n}")) for n in ("query", "key", "value"))
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=attend)
            context = context.transpose(1, 2).reshape(x.shape)
            x = self._norm(self._linear(context, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            inner = F.gelu(self._linear(x, p + "intermediate.dense"))
            x = self._norm(self._linear(inner, p + "output.dense") + x, p + "output.LayerNorm")
        return x

    def _linear(self, x, name):
        import torch.nn.functional as F

        return F.linear(x, self.weights[name + ".weight"], self.weights[name + ".bias"])

    def _norm(self, x, name):
        import torch.nn.functional as F

        return F.layer_norm(x, (self.dim,), self.weights[name + ".weight"], self.weights[name + ".bias"], self.eps)

    def _heads(self, x):
        batch, length, _ = x.shape
        return x.view(batch, length, self.heads, self.dim // self.heads).transpose(1, 2)
