"""poeval.paths: the artifact layout, written out here by hand (the rest of the tests build their paths
with the module, so this is where a change of the layout shows)."""

from poeval import paths


def test_the_layout_is_the_documented_one():
    assert [paths.quatrains("en"), paths.corpus_report("en"), paths.labelled("en"), paths.train("en"),
            paths.dev("en"), paths.human("en", paths.human_id(3)), paths.split_report("en"), paths.sonnets("en"),
            paths.dev_sonnets("en"), paths.sonnets_report("en"), paths.word2vec("en")] == [
        "data/en/quatrains.jsonl", "data/en/corpus_report.json", "data/en/labelled.jsonl", "data/en/train.jsonl",
        "data/en/dev.jsonl", "data/en/human/human3.jsonl", "data/en/split_report.json", "data/en/sonnets.jsonl",
        "data/en/dev_sonnets.jsonl", "data/en/sonnets_report.json", "data/en/word2vec.txt"]
    assert [paths.model_dir("de", "gpt2-s"), paths.training_log("de", "gpt2-s"), paths.samples("de", "gpt2-s", "v"),
            paths.stats("de", "gpt2-s", "v"), paths.embeddings("de"), paths.embeddings_meta("de"),
            paths.memorization_index("de"), paths.cell("de", "gpt2-s", "v", "rhyme"), paths.curve("de", "gpt2-s")] == [
        "models/de/gpt2-s", "models/de/gpt2-s/training_log.json", "results/samples/de/gpt2-s/v.jsonl",
        "results/samples/de/gpt2-s/v.stats.json", "results/embeddings/de/train.npy",
        "results/embeddings/de/train.npy.json", "results/index/de/train", "results/metrics/de/gpt2-s/v/rhyme.json",
        "results/curves/de/gpt2-s.tsv"]
    assert [paths.table("table2"), paths.table_ci("table2"), paths.figure("figure3")] == [
        "results/tables/table2.tsv", "results/tables/table2.ci.tsv", "results/figures/figure3.png"]
    assert [paths.adherence_samples("en", "s", "abab"), paths.adherence_stats("en", "s", "abab"),
            paths.adherence_cell("en", "s", "prompted")] == [
        "results/adherence/en/s/samples/abab.jsonl", "results/adherence/en/s/samples/abab.stats.json",
        "results/adherence/en/s/prompted.json"]
    assert [paths.limericks(), paths.limericks_report(), paths.bpomp_pairs("t"), paths.bpomp_pairs_report("t"),
            paths.mlm_dir("en", "bert-s"), paths.bpomp_scores("b", "t"), paths.bpomp_score_stats("b", "t"),
            paths.bpomp_accuracy("b", "t"), paths.bpomp_bigrams(), paths.bpomp_errors("b")] == [
        "results/bpomp/limericks.jsonl", "results/bpomp/limericks_report.json", "results/bpomp/pairs/t.jsonl",
        "results/bpomp/pairs/t.report.json", "results/bpomp/models/en/bert-s", "results/bpomp/scores/b/t.jsonl",
        "results/bpomp/scores/b/t.stats.json", "results/bpomp/accuracy/b/t.json", "results/bpomp/bigrams.json",
        "results/bpomp/errors/b.json"]
    assert paths.log("train", "en", "gpt2-s") == "logs/train/en/gpt2-s.log"


def test_a_cell_reads_the_samples_of_its_row():
    assert paths.cell_samples("en", "HUMAN", "train") == "data/en/train.jsonl"          # the paper's HUMAN row
    assert paths.cell_samples("en", "HUMAN", "human0") == "data/en/human/human0.jsonl"
    assert paths.cell_samples("en", "gpt2-s", "train") == "results/samples/en/gpt2-s/train.jsonl"


def test_a_pattern_names_the_wildcards_after_the_parameters():
    assert paths.pattern(paths.cell) == "results/metrics/{lang}/{system}/{decoding}/{family}.json"
    assert paths.pattern(paths.mlm_dir) == "results/bpomp/models/{lang}/{mlm}"
    assert paths.pattern(paths.limericks) == paths.limericks()
