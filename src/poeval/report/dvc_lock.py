"""dvc.lock as a second record of what `poeval provenance` checks: its params per stage and, where the DVC
cache holds the listing of a directory output, its md5 per file."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from poeval.errors import PoevalError
from poeval.report.param_diff import dotted, param_diffs


def file_md5(path: Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class DvcLock:
    """dvc.lock (when present): params per stage and md5 per file of its outputs."""

    def __init__(self, root: Path):
        self.root = root
        path = root / "dvc.lock"
        self.lock = None
        if path.is_file():
            import yaml

            try:
                self.lock = yaml.safe_load(path.read_text("utf-8")) or {}
            except yaml.YAMLError as err:
                raise PoevalError(f"{path}: not valid YAML ({err})") from None

    def param_diffs(self, stage: str, config: dict) -> list[str]:
        spec = (self.lock or {}).get("stages", {}).get(stage)
        if not spec:
            return []
        recorded = spec.get("params", {}).get("params.yaml", {})
        current = {key: dotted(config, key) for key in recorded}
        return [f"dvc.lock stage '{stage}' ran with {d}" for d in param_diffs(recorded, current)[0]]

    def _listing(self, md5: str) -> dict[str, str] | None:
        path = self.root / ".dvc" / "cache" / "files" / "md5" / md5[:2] / md5[2:]
        if not path.is_file():
            return None
        return {entry["relpath"]: entry["md5"] for entry in json.loads(path.read_text("utf-8"))}

    def recorded_md5(self, rel: str) -> tuple[str | None, dict[str, str] | None, str | None]:
        """(stage, {relpath under ``rel``: md5} as recorded, note) for a file or directory ``rel``."""
        for stage, spec in (self.lock or {}).get("stages", {}).items():
            for out in spec.get("outs", []):
                base = str(out.get("path", "")).rstrip("/")
                md5 = str(out.get("md5", ""))
                if rel != base and not rel.startswith(base + "/"):
                    continue
                if out.get("hash") != "md5":   # DVC 2 hashed text files after dos2unix: not comparable
                    return stage, None, f"dvc.lock: '{base}' has DVC 2 hashes; not compared"
                if rel == base and not md5.endswith(".dir"):
                    return stage, {"": md5}, None
                if not rel.startswith(base + "/") or not md5.endswith(".dir"):
                    continue
                listing = self._listing(md5)
                if listing is None:
                    return stage, None, f"dvc.lock: the listing of '{base}' is not in the DVC cache; not compared"
                sub = rel[len(base) + 1:]
                return stage, {k[len(sub):].lstrip("/"): v for k, v in listing.items()
                               if k == sub or k.startswith(sub + "/")}, None
        return None, None, None


def commit(root: str | Path = ".") -> list[str]:
    """Record what Snakemake built in dvc.lock (``dvc commit -f``), as ``./run.sh`` does after the main job, so
    that the first ``dvc repro`` after a params change reruns only the stages it touches. A stage output that
    this run had no reason to make (``results/embeddings`` without the semantic family) is made empty first,
    as the stage's own command makes it; DVC refuses to commit a missing output. Returns the outputs made."""
    import subprocess

    root = Path(root)
    made = [rel for rel in _outs(root) if _make_empty(root, rel)]
    try:
        proc = subprocess.run(["dvc", "commit", "-f", "-q"], cwd=root, capture_output=True, text=True)
    except FileNotFoundError:
        raise PoevalError("dvc-commit: `dvc` is not on PATH; run it from the project's environment, "
                          "where DVC is installed") from None
    if proc.returncode:
        raise PoevalError(f"dvc commit failed: {(proc.stderr or proc.stdout).strip()[-2000:]}")
    return made


def _outs(root: Path) -> list[str]:
    """The outputs of every stage of ``root``/dvc.yaml, as written."""
    import yaml

    path = root / "dvc.yaml"
    if not path.is_file():
        raise PoevalError(f"{path}: not found; run `poeval dvc-commit` in the project's folder")
    try:
        stages = yaml.safe_load(path.read_text("utf-8"))["stages"]
        return [str(next(iter(out)) if isinstance(out, dict) else out)
                for spec in stages.values() for out in spec.get("outs") or []]
    except (yaml.YAMLError, TypeError, KeyError, AttributeError, StopIteration):
        raise PoevalError(f"{path}: not a DVC pipeline (a `stages` mapping of stages with `outs` lists); "
                          "restore it from git") from None


def _make_empty(root: Path, rel: str) -> bool:
    """Make the missing output ``rel`` an empty folder (True), or leave the one that exists (False). A symbolic
    link on its way that points nowhere (a DVC cache link whose cache entry is gone) is an error: poeval never
    replaces a link it did not make."""
    target = root / rel
    for step in [*reversed(target.parents[:len(Path(rel).parents) - 1]), target]:
        if step.is_symlink() and not step.exists():
            raise PoevalError(f"dvc-commit: {step} is a symbolic link to {os.readlink(step)}, which does not exist; "
                              "restore what it points to (`dvc checkout`) or remove the link, then run it again")
    if target.exists():
        return False
    try:
        target.mkdir(parents=True)
    except OSError as err:
        raise PoevalError(f"dvc-commit: cannot make the empty output {target} ({err.strerror}: {err.filename})") from None
    return True
