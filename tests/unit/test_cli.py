"""The `poeval` command end to end on small made-up data."""

import json
from pathlib import Path

import pytest

from poeval import paths
from poeval.cli import main
from poeval.generators import checkpoint, registry
from poeval.generators.decoding import parse_decoding
from poeval.generators.sampling import resolve
from poeval.io import read_jsonl


def _quatrains(n: int) -> list[dict]:
    return [{"text": [f"verse number {i} of the first line", f"verse number {i} of the second line",
                      f"verse number {i} of the third line", f"verse number {i} of the fourth line"],
             "rhyme": "ABAB", "meter": "iambus"} for i in range(n)]


def test_prepare_writes_split_human_samples_and_reports(tmp_path, capsys):
    source = tmp_path / "quatrain.jsonl"
    source.write_text("".join(json.dumps(q) + "\n" for q in _quatrains(60)))
    out = tmp_path / "prepared"
    assert main(["prepare", "--lang", "en", "--input", str(source), "--out", str(out), "--human-size", "5"]) == 0
    train, dev = list(read_jsonl(out / "train.jsonl")), list(read_jsonl(out / "dev.jsonl"))
    assert (len(train), len(dev)) == (54, 6)
    assert train[0]["rhyme"] == "ABAB" and train[0]["metre"] == "iambus" and len(train[0]["lines"]) == 4
    humans = sorted((out / "human").glob("human*.jsonl"))
    assert len(humans) == 10
    train_ids = {q["id"] for q in train}
    assert all({q["id"] for q in read_jsonl(h)} <= train_ids for h in humans)
    report = json.loads(capsys.readouterr().out)
    assert report["corpus"]["kept"] == 60 and report["split"]["dev"] == 6
    # the files the workflow's rules quatrains, rhyme_labels and split write under data/en/, and no other
    lang_dir = Path(paths.train("en")).parent
    written = {str(lang_dir / p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    assert written == {paths.quatrains("en"), paths.corpus_report("en"), paths.labelled("en"), paths.train("en"),
                       paths.dev("en"), paths.split_report("en"), *(paths.human("en", paths.human_id(i)) for i in range(10))}


def test_prepare_missing_input_is_a_clear_error(tmp_path, capsys):
    assert main(["prepare", "--lang", "de", "--input", str(tmp_path / "nope.jsonl.gz"), "--out", str(tmp_path)]) == 2
    assert "input not found" in capsys.readouterr().err
    assert not (tmp_path / "train.jsonl").exists()


def test_validate_names_the_bad_key(tmp_path, root, capsys):
    params = tmp_path / "params.yaml"
    params.write_text((root / "params.yaml").read_text().replace("mattr_window: 35", "mattr_window: -1"))
    assert main(["validate", "--params", str(params)]) == 2
    assert "metrics.lexical.mattr_window" in capsys.readouterr().err
    assert main(["validate", "--params", str(root / "params.yaml")]) == 0
    # overlays as for stale and provenance (--configfile) or positional, named in the verdict
    tiny, de = (str(root / "config" / c) for c in ("scale/tiny.yaml", "lang/de.yaml"))
    corpus = tmp_path / "corpus.yaml"   # a German corpus that is there (validate checks the path)
    corpus.write_text(f"corpus: {{de: {{path: {root / 'tests' / 'fixtures' / 'dlk_release'}}}}}\n")
    capsys.readouterr()
    assert main(["validate", "--params", str(root / "params.yaml"), "--configfile", tiny, de, str(corpus)]) == 0
    assert capsys.readouterr().out.strip() == f"{root / 'params.yaml'} with {tiny}, {de}, {corpus}: valid"
    bad = tmp_path / "bad.yaml"
    bad.write_text("training: {patience: three}\n")
    assert main(["validate", "--params", str(root / "params.yaml"), "--configfile", str(bad)]) == 2
    assert "training.patience" in capsys.readouterr().err


@pytest.mark.parametrize("samples", ["one two\nthree\nfour five\nsix\n\n" * 2,
                                     "one two\nthree\nfour five\nsix\n\na\nb\nc\n"])
def test_evaluate_all_families_on_degenerate_input_never_gives_nan(tmp_path, samples):
    """Identical poems, or one poem beside one of 3 verses (skipped); a reference of one poem. (A sample
    with nothing usable is an error: test_evaluate.py.)"""
    path = tmp_path / "samples.txt"
    path.write_text(samples)
    ref = tmp_path / "ref.jsonl"
    ref.write_text(json.dumps({"id": "r0", "lines": ["one two", "three", "four five", "seven"]}) + "\n")
    out = tmp_path / "m.json"
    assert main(["evaluate", str(path), "--reference", str(ref), "--lang", "en", "--out", str(out), "--quiet",
                 "--bootstrap-reps", "20"]) == 0
    text = out.read_text()
    assert "NaN" not in text and "Infinity" not in text
    result = json.loads(text)
    assert set(result) >= {"length", "lexical", "memorization", "rhyme", "semantic"}
    if result["n_poems"] == 2:   # two identical poems: each is the other's nearest neighbour
        assert result["semantic"]["within"] == pytest.approx(1.0, abs=1e-5)
        assert result["memorization"]["couplet"] == 0.5   # "one two three" matches; the other couplet does not
        assert result["rhyme"]["distribution"]["abcd"] == 1.0 and result["rhyme"]["real_rhymes"] == 0.0
        assert result["rhyme"]["pair_real_rhymes"] is None   # no rhyme pair in an abcd quatrain
    else:   # one poem: no within-sample neighbour, and the skipped one is counted
        assert result["n_poems"] == 1 and result["skipped"] == {"not_4_lines": 1}
        assert result["semantic"]["within"] is None and result["rhyme"]["entropy"] == 0.0


@pytest.mark.parametrize("arch", ["deepspeare", "sa"])
def test_train_gives_a_port_its_own_training_block_never_the_shared_one(arch, root, monkeypatch, capsys):
    """params training, as the workflow passes it, does not reach a poetry port: the port gets its arch's
    own training defaults (the schema's default of models.<system>.training) with the system's own block
    over it, so config/scale/paper.yaml's LLM fine-tuning lr cannot retrain it. provenance expects the same
    training params in the port's stamp."""
    import yaml

    from poeval import config as schema
    from poeval.errors import PoevalError
    from poeval.generators import registry
    from poeval.jobs.train import train_job

    port = registry.module(arch)
    seen = {}
    monkeypatch.setattr(port, "train", lambda sonnets, dev, out, model, training, **kw: seen.update(training))
    training = {**yaml.safe_load((root / "params.yaml").read_text())["training"], "lr": 5e-5, "max_steps": 20000}
    model = {"arch": arch, "training": {"patience": 7}}
    assert main(["train", "--train", "t.jsonl", "--dev", "d.jsonl", "--out", "m", "--model", json.dumps(model),
                 "--training", json.dumps(training), "--sonnets", "s.jsonl", "--lang", "en"]) == 0
    assert f"arch {arch} ignores --training" in capsys.readouterr().err    # said, not silently dropped
    # by hand: the schema's $defs/<arch>_model training default with the system's patience; nothing shared
    expected = {**schema.defaults(f"#/$defs/{arch}_model")["training"], "patience": 7}
    assert seen == expected
    assert seen.get("lr") != 5e-5 and seen["max_steps"] != 20000 and "length_grouping" not in seen
    assert port.resolve_train_cfg(seen) == expected
    recorded = train_job(schema.fill({"models": {"p": model}, "training": training}), "en", "p").recorded()
    assert recorded["training"] == expected and recorded["model"]["arch"] == arch and "training" not in recorded["model"]
    with pytest.raises(PoevalError, match="length_grouping"):
        port.resolve_train_cfg({"length_grouping": 50})


# --- one dispatch: `poeval sample` picks the generator through the registry and hands it the sampling block whole

SAMPLING = {"n": 3, "batch_size": 2, "max_new_tokens": 40, "max_new_bytes": 120, "max_attempts": 9, "seed": 4}


def _sample_args(model_dir, *extra: str) -> list[str]:
    return ["sample", str(model_dir), "--decoding", '{"temperature": 0.9}', "--sampling", json.dumps(SAMPLING),
            "--out", "o.jsonl", "--stats", "o.json", "--threads", "2", "--id-prefix", "x-", *extra]


def _recorder(monkeypatch, module) -> dict:
    seen: dict = {}
    monkeypatch.setattr(module, "sample", lambda *args, **kw: seen.update(args=args, kw=kw))
    return seen


def _port_checkpoint(path: Path, arch: str) -> Path:
    """A directory the registry takes for a port's checkpoint: its manifest names the arch."""
    path.mkdir()
    (path / checkpoint.MANIFEST).write_text(json.dumps({"arch": arch, "config": {}, "vocab": []}))
    return path


@pytest.mark.parametrize("arch", ["deepspeare", "sa"])
def test_sample_hands_a_port_the_whole_sampling_block(arch, tmp_path, monkeypatch):
    """The block arrives whole (the sample job's, resolved by the schema), max_new_bytes included (it was dropped for the ports, and the block
    split into keyword arguments that each sample() put back together)."""
    seen = _recorder(monkeypatch, registry.module(arch))
    model = _port_checkpoint(tmp_path / "m", arch)
    assert main(_sample_args(model)) == 0
    assert seen["args"] == (str(model), parse_decoding({"temperature": 0.9}), resolve(SAMPLING), "o.jsonl", "o.json")
    assert seen["args"][2]["max_new_bytes"] == SAMPLING["max_new_bytes"]
    assert seen["kw"] == {"threads": 2, "id_prefix": "x-", "style": None, "prompt": None}


def test_sample_hands_a_transformers_checkpoint_the_block_and_the_style(tmp_path, monkeypatch):
    seen = _recorder(monkeypatch, registry.module("gpt2"))
    assert main(_sample_args(tmp_path, "--style", "abab")) == 0
    assert seen["args"] == (str(tmp_path), parse_decoding({"temperature": 0.9}), resolve(SAMPLING), "o.jsonl",
                            "o.json")
    assert seen["kw"] == {"threads": 2, "id_prefix": "x-", "style": "abab", "prompt": None}


def test_sample_by_hand_fills_the_sampling_keys_it_is_not_given(tmp_path, monkeypatch):
    """issue 44: `--sampling '{"n": 3}'` (or no --sampling) samples with the schema's values for the rest"""
    seen = _recorder(monkeypatch, registry.module("gpt2"))
    argv = _sample_args(tmp_path)
    assert main(argv[:argv.index("--sampling")] + ["--sampling", '{"n": 3}'] + argv[argv.index("--out"):]) == 0
    assert seen["args"][2] == {"n": 3, "batch_size": 100, "max_new_tokens": 100, "max_attempts": 4000, "give_up_after": 100,
                               "seed": 1, "procedure": "poeval"}
    assert main(argv[:argv.index("--sampling")] + argv[argv.index("--out"):]) == 0
    assert seen["args"][2]["n"] == 1000


def test_sample_refuses_a_style_for_a_port_and_an_unknown_arch(tmp_path, capsys):
    assert main(_sample_args(_port_checkpoint(tmp_path / "sa", "sa"), "--style", "abab")) == 2
    assert "--style prompts only the transformer generators" in capsys.readouterr().err
    assert main(_sample_args(_port_checkpoint(tmp_path / "x", "lstm"))) == 2
    assert "model arch 'lstm' is not supported" in capsys.readouterr().err


def test_evaluate_with_the_cached_memorization_index_equals_the_search_without(tmp_path, capsys):
    """`poeval index` once, then memorization cells read it: a HUMAN sample drawn from the reference is
    compared with the rest of it (its own quatrains excluded from the index), a model sample with all of it."""
    train = [{"id": f"t{i}", "lines": [f"the wind number {i % 7} blows", f"over hill {i % 5} and dale",
                                       f"the sea {i} is grey tonight", f"and the ships {i % 3} sail"]}
             for i in range(40)]
    train.append({"id": "dup", "lines": train[3]["lines"]})           # a copy survives excluding t3
    ref = tmp_path / "train.jsonl"
    ref.write_text("".join(json.dumps(q) + "\n" for q in train))
    human = tmp_path / "human.jsonl"
    human.write_text("".join(json.dumps(q) + "\n" for q in train[:6]))
    model = tmp_path / "model.jsonl"
    model.write_text("".join(json.dumps({"id": f"s{i}", "lines": q["lines"][:3] + ["a verse of its own"]}) + "\n"
                             for i, q in enumerate(train[10:16])))
    assert main(["index", str(ref), "--out", str(tmp_path / "index")]) == 0
    assert "verse: " in capsys.readouterr().out
    cells = {}
    for samples, human_flag in ((human, ["--exclude-sample-from-reference"]), (model, [])):
        results = []
        for cached in ([], ["--memorization-index", str(tmp_path / "index")]):
            out = tmp_path / "cell.json"
            assert main(["evaluate", str(samples), "--reference", str(ref), "--lang", "en", "--metrics",
                         "memorization", "--out", str(out), "--quiet", *human_flag, *cached]) == 0
            cell = json.loads(out.read_text())
            results.append((cell["memorization"], cell["provenance"]["params"]))
        assert results[0] == results[1]   # the numbers, and the stamp: the index is a cache, not a param
        cells[samples.stem] = results[1][0]
    # the HUMAN sample's own quatrains t0..t5 are never its matches; t3's copy "dup" is
    human_hits = {h["sample"]: h["train"] for h in cells["human"]["hits"]["quatrain"]}
    assert human_hits["t3"] == "dup" and not set(human_hits.values()) & {f"t{i}" for i in range(6)}
    assert (cells["model"]["quatrain"], cells["model"]["couplet"], cells["model"]["verse"]) == (1.0, 0.5, 0.75)
    ref.write_text(ref.read_text() + json.dumps({"id": "new", "lines": ["a", "b", "c", "d"]}) + "\n")
    assert main(["evaluate", str(model), "--reference", str(ref), "--lang", "en", "--metrics", "memorization",
                 "--out", str(tmp_path / "stale.json"), "--memorization-index", str(tmp_path / "index")]) == 2
    assert "rebuild it" in capsys.readouterr().err


# --- typed jobs (poeval.jobs): one JSON value from the rule, the same type back; by hand, the same type

def test_sample_by_hand_and_by_job_call_the_generator_alike(tmp_path, monkeypatch):
    from poeval.jobs.sample import SampleJob, from_options

    seen = _recorder(monkeypatch, registry.module("gpt2"))
    assert main(_sample_args(tmp_path, "--style", "abab")) == 0
    by_hand = dict(seen)
    job = from_options({"temperature": 0.9}, SAMPLING, "abab", "x-")
    assert SampleJob.from_dict(json.loads(job.to_json())) == job
    args = [a for a in _sample_args(tmp_path) if a not in ("--decoding", "--sampling", '{"temperature": 0.9}',
                                                           json.dumps(SAMPLING), "--id-prefix", "x-")]
    assert main([*args, "--job", job.to_json()]) == 0
    assert seen == by_hand and seen["kw"]["style"] == "abab"


def test_a_job_goes_alone_and_the_options_by_hand_go_together(tmp_path, capsys):
    from poeval.jobs.sample import from_options

    job = from_options({"temperature": 0.9}, SAMPLING, None, "x-").to_json()
    assert main(["sample", str(tmp_path), "--job", job, "--style", "abab", "--out", "o.jsonl", "--stats", "o.json"]) == 2
    assert "give it alone, not with --style" in capsys.readouterr().err
    assert main(["sample", str(tmp_path), "--sampling", json.dumps(SAMPLING), "--out", "o.jsonl",
                 "--stats", "o.json"]) == 2   # the decoding has no default: it names the cell
    assert "missing: --decoding" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:   # a bad job is a usage error naming the key (cli_args.job_option)
        main(["sample", str(tmp_path), "--job", job.replace('"style"', '"styles"'), "--out", "o.jsonl",
              "--stats", "o.json"])
    assert exit_.value.code == 2 and "unknown key 'styles'" in capsys.readouterr().err


def test_train_jobs_of_the_params_round_trip_and_carry_what_the_generator_takes(root):
    """Each system's train job, from the params as written (as the rule builds it): its JSON parses back
    to the same job, and it holds what the generator receives (registry.training_params)."""
    from poeval import config as schema
    from poeval.jobs.base import parse
    from poeval.jobs.sample import SampleJob, sample_job
    from poeval.jobs.train import TrainJob, train_job

    params = schema.read(root / "params.yaml", (root / "config" / "scale" / "tiny.yaml",))
    for system, entry in params["models"].items():
        if registry.is_supplied(entry):
            continue
        job = train_job(params, "en", system)
        assert parse(TrainJob, job.to_json()) == job and job.name == system and job.lang == "en"
        shared = {} if registry.is_poetic(entry) or registry.untrained(entry) else params["training"]
        model = schema.model_for_lang(entry, "en")
        assert (job.model, job.training) == registry.training_params(model, shared)
        for decoding in params["decoding"]:
            job = sample_job(params, "en", system, decoding)
            assert parse(SampleJob, job.to_json()) == job
            assert job.decoding == parse_decoding(params["decoding"][decoding])
            assert job.id_prefix == f"en-{system}-{decoding}-" and job.style is None
            assert job.sampling == resolve(registry.sampling_params(entry, params["sampling"]))


def test_the_help_describes_the_command_in_whole_sentences(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "so the CLI and the workflow share one code path; each subcommand is a thin wrapper around one library function." in text
