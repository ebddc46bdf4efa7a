# Reference embeddings: computed once per (encoder, training split) and reused by every semantic cell.
rule embed_reference:
    input:
        paths.pattern(paths.train),
    output:
        npy=paths.pattern(paths.embeddings),
        meta=paths.pattern(paths.embeddings_meta),
    log:
        paths.log("embed", "{lang}"),
    params:
        encoder=lambda wc: poeval_config.for_lang(P["metrics"]["semantic"]["encoder"], wc.lang),
        batch_size=P["metrics"]["semantic"]["batch_size"],
        backend=P["metrics"]["semantic"]["backend"],
    threads: P["threads"]
    shell:
        "poeval embed {input:q} --encoder {params.encoder:q} --batch-size {params.batch_size:q} --backend {params.backend:q}"
        " --out {output.npy:q} --threads {threads} > {log:q} 2>&1"


# Memorization index: the training split's units, deduplicated, sorted and projected once per language
# (poeval.metrics.memorization), reused by every memorization cell.
rule memorization_index:
    input:
        paths.pattern(paths.train),
    output:
        directory(paths.pattern(paths.memorization_index)),
    log:
        paths.log("index", "{lang}"),
    shell:
        "poeval index {input:q} --out {output:q} > {log:q} 2>&1"


# Topic model (not in the paper): an LDA model of the training split, trained once per language
# (poeval.metrics.topics), reused by every topics cell; top_words.tsv beside it shows what the topics are.
rule topic_model:
    input:
        paths.pattern(paths.train),
    output:
        directory(paths.pattern(paths.topic_model)),
    log:
        paths.log("topics", "{lang}"),
    params:
        topics=as_json(config["metrics"].get("topics", {})),
    threads: 1
    shell:
        "poeval topics {input:q} --lang {wildcards.lang:q} --options {params.topics:q} --out {output:q} > {log:q} 2>&1"


# One file per table cell: a metric family of one sample (lang x system x decoding config).
rule metric_cell:
    input:
        unpack(cell_inputs),
    output:
        paths.pattern(paths.cell),
    log:
        paths.log("metrics", "{lang}", "{system}", "{decoding}", "{family}"),
    params:
        options=cell_options,
        reps=bootstrap_reps,
        seed=P["metrics"]["bootstrap"]["seed"],
        # a HUMAN sample is compared with the rest of train; the whole training set (HUMAN/train) with itself
        human=lambda wc: "--exclude-sample-from-reference" if wc.system == HUMAN and wc.decoding != TRAIN else "",
        embeddings=lambda wc, input: shlex.join(["--reference-embeddings", input.embeddings]) if "embeddings" in input.keys() else "",
        index=lambda wc, input: shlex.join(["--memorization-index", input.index]) if "index" in input.keys() else "",
        topic_model=lambda wc, input: shlex.join(["--topic-model", input.topic_model]) if "topic_model" in input.keys() else "",
    threads: lambda wc: P["threads"] if wc.family in ("memorization", "semantic", "diversity") else 1
    shell:
        "poeval evaluate {input.samples:q} --reference {input.reference:q} --lang {wildcards.lang:q}"
        " --metrics {wildcards.family:q} --options {params.options:q} {params.embeddings} {params.index} {params.topic_model}"
        " --bootstrap-reps {params.reps:q} --seed {params.seed:q} --threads {threads} {params.human}"
        # --allow-empty: a model that wrote no valid quatrain under a decoding config is a result (an empty
        # cell beside its sampling stats), not a failure of the run
        " --cell {wildcards.lang:q}/{wildcards.system:q}/{wildcards.decoding:q} --allow-empty --out {output:q} --quiet > {log:q} 2>&1"
