"""The package's shape (docs/layout.md "Layout"): no import circle, no import from a lower stage to a higher one,
params resolved once with every default from the schema, and no literal default of a params key elsewhere.
Each check also runs on a small broken example, so that it can fail."""

import ast
import importlib.util
import json
import re
from pathlib import Path

import pytest

from poeval import config, params

ROOT = Path(__file__).resolve().parents[1]
OVERLAYS = [(), ("config/tiny.yaml",), ("config/grid.yaml", "config/de.yaml"), ("config/paper.yaml",),
            ("config/pretrained-cpu.yaml",), ("config/poetic.yaml",)]


def _layers():
    spec = importlib.util.spec_from_file_location("import_layers", ROOT / "scripts" / "import_layers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_import_circle_and_at_most_two_upward_imports():
    layers = _layers()
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
    layers = _layers()
    graph = layers.imports(pkg)
    assert layers.circles(graph) == [["poeval.config", "poeval.report.tables"]]
    assert layers.upward(graph) == [("poeval.config", "poeval.report.tables"),
                                    ("poeval.data.corpus", "poeval.report.tables")]


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
    ("report/tables.py", "arch"): "Table 4 shows what a checkpoint recorded (NA when it did not)",
    ("report/tables.py", "size"): "as above",
    ("report/tables.py", "init"): "as above",
}


def _params_keys() -> set[str]:
    keys: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            keys.update(node.get("properties", {}))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(config.schema())
    return keys


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
