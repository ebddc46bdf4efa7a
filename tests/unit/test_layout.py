"""The package's shape (docs/layout.md "Layout"): no import circle, no import from a lower stage to a higher one,
params resolved once with every default from the schema, and no literal default of a params key elsewhere.
Each check also runs on a small broken example, so that it can fail."""

import ast
import importlib.util
import subprocess
import sys
import json
import re
from pathlib import Path

import pytest

from helpers import _params_keys
from poeval import config, params

ROOT = Path(__file__).resolve().parents[2]
_SPEC = importlib.util.spec_from_file_location("import_layers", ROOT / "scripts" / "import_layers.py")
layers = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(layers)
OVERLAYS = [(), ("config/scale/tiny.yaml",), ("config/lang/de.yaml", "config/systems/grid.yaml"), ("config/scale/paper.yaml",),
            ("config/systems/pretrained-cpu.yaml",), ("config/systems/poetic.yaml",)]


def test_no_import_circle_and_at_most_two_upward_imports():
    graph = layers.imports(ROOT / "src" / "poeval")
    assert layers.circles(graph) == []
    assert len(layers.upward(graph)) <= 2, layers.upward(graph)


def test_the_layer_check_finds_a_circle_and_an_upward_import(tmp_path):
    pkg = tmp_path / "poeval"
    for sub in ("data", "report"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "config.py").write_text("def f():\n    from poeval.report import tables\n")   # deferred: still counted
    (pkg / "report" / "tables.py").write_text("from poeval import config\n")
    (pkg / "data" / "corpus.py").write_text("from poeval.report.tables import x\n")
    graph = layers.imports(pkg)
    assert layers.circles(graph) == [["poeval.config", "poeval.report.tables"]]
    assert layers.upward(graph) == [("poeval.config", "poeval.report.tables"),
                                    ("poeval.data.corpus", "poeval.report.tables")]


def test_the_script_runs_the_layer_check_on_a_tree(tmp_path):
    """scripts/import_layers.py (the command docs/layout.md gives) is the package's check: on a tree with a
    circle it names it and exits 1."""
    pkg = tmp_path / "poeval"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from poeval import b\n")
    (pkg / "b.py").write_text("from poeval import a\n")
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "import_layers.py"), str(pkg)],
                          capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines() == ["circle of 2: poeval.a, poeval.b",
                                        "3 modules, 2 imports, 1 circle(s), 0 upward import(s)"]


def _missing_defaults(value, node, where: str) -> list[str]:
    """Keys of ``value`` that have a schema default at ``node`` but are absent, at every depth the
    resolved params reach (objects, maps of entries, list items, the branch a value takes: of an ``if``
    besides the node's own properties, a contrastive decoding's score_temperature in mode stochastic)."""
    node = config._follow(node)
    missing = []
    if "if" in node:   # the branch the value takes, then the node's own properties
        valid = config._validator().evolve(schema=node["if"]).is_valid(value)
        branch = node["then"] if valid else node.get("else")
        missing += _missing_defaults(value, branch, where) if branch else []
    for key in ("oneOf", "anyOf"):
        for branch in node.get(key, []):
            if config._validator().evolve(schema=branch).is_valid(value):
                return _missing_defaults(value, branch, where)
    if isinstance(value, dict):
        for key, spec in node.get("properties", {}).items():
            if spec.get("overrides"):
                continue
            if key in value:
                missing += _missing_defaults(value[key], spec, f"{where}.{key}")
            elif "default" in config._follow(spec):
                missing.append(f"{where}.{key}")
        if isinstance(node.get("additionalProperties"), dict):
            for key in value.keys() - node.get("properties", {}).keys():
                missing += _missing_defaults(value[key], node["additionalProperties"], f"{where}.{key}")
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for i, item in enumerate(value):
            missing += _missing_defaults(item, node["items"], f"{where}.{i}")
    return missing


@pytest.mark.parametrize("overlays", OVERLAYS, ids=lambda o: "+".join(Path(p).stem for p in o) or "params")
def test_resolved_params_hold_every_key_with_a_schema_default(overlays):
    """So that no reader needs ``.get(key, literal)``: what the schema can default is there."""
    if any(not (ROOT / o).exists() for o in overlays):
        pytest.skip("overlay not in this checkout")
    given = config.read(ROOT / "params.yaml", tuple(ROOT / o for o in overlays))
    resolved = params.resolve(given)
    assert _missing_defaults(given, config.schema(), "params")        # the check sees what is missing...
    assert _missing_defaults(resolved, config.schema(), "params") == []   # ...and resolution fills it
    assert resolved["metrics"]["lexical"]["mattr_window"] == 35 and "system" in resolved["tables"]["table11"]
    assert given == config.read(ROOT / "params.yaml", tuple(ROOT / o for o in overlays))   # left as written


# .get(key, literal) calls on names that are params keys but read something else: a record, a stamp,
# dvc.lock, a manifest, or the display of recorded values.
NOT_PARAMS = {
    ("generators/engine.py", "tokens"): "a training run's token count",
    ("generators/poetic/deepspeare/generation.py", "lang"): "a checkpoint manifest written before lang was recorded",
    ("report/dvc_lock.py", "path"): "an out of dvc.lock",
    ("metrics/bert_encoder.py", "path"): "a module's folder in a sentence-transformers modules.json",
    ("report/tables.py", "arch"): "Table 4 shows what a checkpoint recorded (NA when it did not)",
    ("report/tables.py", "size"): "as above",
    ("report/tables.py", "init"): "as above",
}



def literal_defaults(root: Path) -> list[str]:
    """``.get("<params key>", <literal>)`` in the package (AST) and in the rules (text), the literal a
    number, string or boolean: a default that the schema should hold."""
    keys, found = _params_keys(), []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                    and len(node.args) == 2 and isinstance(node.args[0], ast.Constant)
                    and node.args[0].value in keys and (rel, node.args[0].value) not in NOT_PARAMS
                    and isinstance(node.args[1], ast.Constant) and node.args[1].value is not None):
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    for path in sorted((root.parents[1] / "workflow" / "rules").glob("*.smk")):
        for lineno, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            for m in re.finditer(r'\.get\("([A-Za-z_]+)",\s*([^)\s][^)]*)\)', line):
                if m.group(1) in keys and m.group(2).strip() not in ("None", "{}", "[]"):
                    found.append(f"{path.name}:{lineno}: {m.group(0)}")
    return found


def test_no_literal_default_of_a_params_key_outside_the_schema(tmp_path):
    assert literal_defaults(ROOT / "src" / "poeval") == []
    bad = tmp_path / "src" / "poeval"
    bad.mkdir(parents=True)
    (tmp_path / "workflow" / "rules").mkdir(parents=True)
    (bad / "x.py").write_text('def f(d):\n    return d.get("max_attempts", 3000), d.get("id", 0)\n')
    (tmp_path / "workflow" / "rules" / "r.smk").write_text('x = pairs.get("synonym_pos", "context")\n')
    assert literal_defaults(bad) == ['x.py:2: d.get(\'max_attempts\', 3000)',
                                     'r.smk:1: .get("synonym_pos", "context")']


def test_schema_defaults_are_valid_values():
    """A default filled by the params step must itself pass the schema (else resolution would break)."""
    resolved = params.load(ROOT / "params.yaml")
    assert config.schema_problems(resolved) == []
    assert json.loads(json.dumps(resolved)) == resolved


def index_problems(folder: Path, pattern: str, name: re.Pattern) -> list[str]:
    """A folder's README.md index against its files: each file matching ``pattern`` is named in the index
    (as its path below the folder, in backticks at the start of a table row), nothing else is, and each file
    name matches ``name``."""
    files = {p.relative_to(folder).as_posix() for p in folder.rglob(pattern)
             if p.is_file() and p.name != "README.md" and "__pycache__" not in p.parts}
    listed = set(re.findall(r"^\| `([^`]+)` \|", (folder / "README.md").read_text("utf-8"), re.M))
    return ([f"not in the index: {f}" for f in sorted(files - listed)]
            + [f"in the index, no such file: {f}" for f in sorted(listed - files)]
            + [f"name: {f}" for f in sorted(files) if not name.fullmatch(Path(f).name)])


KEBAB = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*\.yaml")
SNAKE = re.compile(r"[a-z0-9]+(_[a-z0-9]+)*\.(py|sh)")


def test_config_and_scripts_each_have_one_index_and_one_naming():
    """config/README.md lists every overlay (kebab-case, one folder per kind); scripts/README.md every
    script (snake_case). Each check also finds a missing, an extra and a misnamed file."""
    assert index_problems(ROOT / "config", "*.yaml", KEBAB) == []
    assert all("/" in f for f in re.findall(r"^\| `([^`]+)` \|", (ROOT / "config" / "README.md").read_text(), re.M))
    assert index_problems(ROOT / "scripts", "*", SNAKE) == []


def test_the_index_check_finds_what_is_missing_extra_or_misnamed(tmp_path):
    (tmp_path / "scale").mkdir()
    (tmp_path / "scale" / "tiny.yaml").write_text("{}\n")
    (tmp_path / "scale" / "bpomp_tiny.yaml").write_text("{}\n")
    (tmp_path / "README.md").write_text("| `scale/tiny.yaml` | scale |\n| `scale/gone.yaml` | scale |\n")
    assert index_problems(tmp_path, "*.yaml", KEBAB) == [
        "not in the index: scale/bpomp_tiny.yaml", "in the index, no such file: scale/gone.yaml",
        "name: scale/bpomp_tiny.yaml"]


def test_no_model_folders_code_can_run():
    """Every from_pretrained call passes trust_remote_code=False on its line: a model folder's own code
    (config.json's auto_map) never runs, and transformers never asks on stdin whether it may."""
    calls = [f"{p.relative_to(ROOT)}:{n}" for p in (ROOT / "src" / "poeval").rglob("*.py")
             for n, line in enumerate(p.read_text("utf-8").splitlines(), 1)
             if "from_pretrained(" in line and "trust_remote_code=False" not in line]
    assert calls == []
