"""The checks of `poeval provenance`: one :class:`Link` of the chain, and the :class:`_Tracer` that hashes
each artifact now and compares it, and each recorded params group, with what its consumer recorded and with
dvc.lock (:mod:`poeval.report.dvc_lock`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from poeval.io import read_json
from poeval.report.dvc_lock import DvcLock, file_md5
from poeval.report.steps import by_rule
from poeval.config import fill
from poeval.report.param_diff import param_diffs
# the build-time half (poeval.stamps) lives low in the package, so that every stage can stamp what it builds
from poeval.stamps import files_under, path_sha256

ABBREV = 12  # hex characters of a hash shown in the text output
# dvc.yaml stage whose params (in dvc.lock) feed each link of the chain.
DVC_STAGE = {"table": "tables", "metric params": "metrics", "decoding": "sample", "training params": "train",
             "corpus": "data"}


def _abbrev(digest: str | None) -> str:
    return digest[:ABBREV] if digest else "-"


@dataclass
class Link:
    """One step of the chain: the files it consists of, the params it ran with, and why it is stale."""

    name: str
    files: list[dict] = field(default_factory=list)      # {"path", "sha256", ...}
    params: dict = field(default_factory=dict)
    stale: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    built: dict = field(default_factory=dict)            # code and created of the stamp, when there is one


class _Tracer:
    """Builds the chain of one table cell; paths follow the workflow's layout under ``root``."""

    def __init__(self, root: Path, config: dict, dvc_config: dict):
        # dvc_config: params.yaml alone, which is all DVC reads (overlays are Snakemake's)
        self.root, self.config, self.dvc_config, self.dvc = root, config, dvc_config, DvcLock(root)
        self.params = fill(config)   # resolved: the one view every step's job is built from
        self._hashes: dict[Path, str] = {}
        self.ask = False   # ask a model behind an endpoint what it serves now (poeval provenance --check)

    def current(self, rule: str, **wildcards: str) -> dict:
        """What ``rule``'s output would record now: its step's job rebuilt from the params of now."""
        return by_rule()[rule].job(self.params, wildcards).recorded()

    def rel(self, path: str | Path) -> str:
        path = Path(path)
        if not path.is_absolute():
            return path.as_posix()
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()

    def abs(self, path: str | Path) -> Path:
        path = Path(path)
        return path if path.is_absolute() else self.root / path

    def sha(self, path: str | Path) -> str | None:
        path = self.abs(path)
        if path not in self._hashes:
            self._hashes[path] = path_sha256(path) if path.exists() else None
        return self._hashes[path]

    def file_entry(self, link: Link, path: str | Path) -> dict:
        """Hash ``path`` now, note it in ``link`` and cross-check it against dvc.lock."""
        entry = {"path": self.rel(path), "sha256": self.sha(path)}
        if self.abs(path).is_dir():
            entry["kind"] = "dir"
        if entry["sha256"] is None:
            link.stale.append(f"{entry['path']} is missing")
        self._dvc_check(link, path, entry)
        link.files.append(entry)
        return entry

    def _dvc_check(self, link: Link, path: str | Path, entry: dict) -> None:
        stage, recorded, note = self.dvc.recorded_md5(self.rel(path))
        if note and note not in link.notes:
            link.notes.append(note)
        if recorded is None or entry["sha256"] is None:
            return
        full = self.abs(path)
        now = ({"": file_md5(full)} if full.is_file()
               else {f.relative_to(full).as_posix(): file_md5(f) for f in files_under(full)})
        if set(recorded) == {""}:
            entry["dvc_md5"] = recorded[""]
        changed = sorted(k for k in recorded.keys() | now.keys() if recorded.get(k) != now.get(k))
        if not changed:
            return
        what = ("md5 differs" if changed == [""] else "files differ") + f" from dvc.lock (stage '{stage}')"
        if changed != [""]:
            what += ": " + ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else "")
        if self.dvc_config is self.config:
            link.stale.append(f"{entry['path']}: {what}")
        else:   # dvc.lock records the main job (params.yaml alone): an overlay's outputs were never in it
            link.notes.append(f"{entry['path']}: {what}; dvc.lock records the outputs of params.yaml alone, "
                              "and this run has overlays: not compared")

    def check_input(self, link: Link, stamp_: dict | None, name: str, path: str | Path, consumer: str) -> None:
        """Stale when ``path`` now hashes differently from what ``consumer`` recorded for input ``name``."""
        if stamp_ is None:
            note = f"{consumer} has no provenance stamp: its input '{name}' is not compared"
            link.notes += [] if note in link.notes else [note]
            return
        recorded = stamp_.get("inputs", {}).get(name)
        now = self.sha(path)
        if recorded is None:
            link.notes.append(f"{consumer} recorded no hash for its input '{name}'")
        elif now is not None and recorded["sha256"] != now:
            link.stale.append(f"{self.rel(path)}: hash differs from the one recorded when {consumer} was built "
                              f"(recorded {_abbrev(recorded['sha256'])}, now {_abbrev(now)})")

    def check_source(self, link: Link, stamp_: dict, consumer: str) -> bool:
        """Note the ``source`` input that ``consumer`` recorded (a corpus file, a user's sample file) with
        its sha256 now and then, stale when they differ; False when the file is not here."""
        source = stamp_["inputs"]["source"]
        now = self.sha(source["path"])
        link.files.append({"name": "source", "path": self.rel(source["path"]), "sha256": now,
                           "recorded_sha256": source["sha256"]})
        if now is not None:
            self.check_input(link, stamp_, "source", source["path"], consumer)
        return now is not None

    def check_params(self, link: Link, recorded: dict | None, current: dict, what: str, exact: bool = True) -> None:
        """Stale when ``recorded`` params differ from ``current`` ones, or dvc.lock's from the current ones."""
        stage = DVC_STAGE.get(link.name)
        # dvc.lock is checked even without a stamp: for older artifacts it is the only record
        dvc_diffs = self.dvc.param_diffs(stage, self.dvc_config) if stage else []
        link.stale += [r for r in dvc_diffs if r not in link.stale]
        if recorded is None:
            link.notes.append(f"{what}: no provenance stamp (built before poeval recorded provenance); not checked")
            return
        link.params = recorded
        diffs, unrecorded = param_diffs(recorded, current, exact)
        link.stale += [f"params now differ from the ones recorded by {what}: {d}" for d in diffs]
        link.notes += [f"params now set but not recorded by {what} (not compared): {u}" for u in unrecorded]


def _load(path: Path) -> dict | None:
    return read_json(path) if path.is_file() else None


def _stamp(doc: dict | None) -> dict | None:
    return (doc or {}).get("provenance")


def _built(stamp_: dict | None) -> dict:
    return {k: stamp_[k] for k in ("code", "created") if k in stamp_} if stamp_ else {}
