"""Sampling through an OpenAI-compatible endpoint beside in-process sampling, measured in the same run.

One model, one decoding (ancestral, temperature 1.0, no top-k/top-p), ``--attempts`` attempts in each
variant (``n`` = attempts + 1 and ``max_attempts`` = attempts, so every variant makes exactly that many
generations or requests whatever their validity):

1. in-process, ``poeval.generators.lm.sample`` on the model folder, ``batch_size`` = attempts (capped at 100);
2. in-process, ``batch_size`` 1 (one generation at a time: the per-request equivalent; the reference of the
   ratios);
3. ``poeval.generators.endpoint.sample`` against ``transformers serve`` of the same folder, ``max_concurrency`` 1;
4. the same at ``max_concurrency`` 4.

In-process sampling runs with ``--threads`` torch threads (default 1); the server is started by this script
on 127.0.0.1 on a free port with OMP_NUM_THREADS=1 (tests/servers.py ``Served``), and sent one warm-up
request before any timing. Requests use the completions api, the prompt text being the model's BOS text (an
empty prompt crashes transformers serve), as the in-process sampler starts from BOS.

The model is by default the SmolLM2-135M release (``poeval import smollm2-135m``, imported once into
``--work`` and reused from there); ``--model DIR`` takes another folder. SmolLM2-135M is the instruct
model: from BOS alone it rarely writes a valid quatrain, which does not matter here: the figures are the
cost per attempt.

Reported per variant: the seconds of the sampling loop (``elapsed_s`` of the stats: the in-process model
load and the endpoint's /v1/models check are outside it; the whole call's seconds are kept too), attempts/s,
generated tokens and tokens/s (in-process: counted from the generated ids, up to the stop token or the
fifth verse's start, where the sampler ends a row; endpoint: the server's ``usage.completion_tokens``), valid
quatrains, each rate as a ratio to the in-process batch-1 run, and the concurrency-4 speed-up over
concurrency 1. The table is printed (markdown) and written with the context (``uptime`` before and after,
the commit, the command line, the CPU count, versions) to ``--out`` (JSON).

Example::

    PYTHONPATH=src python benchmarks/bench_endpoint.py --work /tmp/bench-endpoint --out /tmp/bench-endpoint.json
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")   # never reach a model hub
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))   # tests/servers.py: Served, the transformers serve the tests use

DECODING = {"temperature": 1.0, "top_k": 0, "top_p": 1.0}
SEED = 1


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def git_head() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        return out.stdout.strip() + ("-dirty" if dirty else "")
    except OSError:
        return "unknown"


def import_smollm2(work: Path) -> Path:
    """The SmolLM2-135M release imported into ``work`` (once; reused if there)."""
    folder = work / "smollm2-135m"
    if (folder / "config.json").exists():
        print(f"model: {folder} (imported before)", flush=True)
        return folder
    start = time.perf_counter()
    cmd = [sys.executable, "-m", "poeval.cli", "import", "smollm2-135m", "--out", str(folder)]
    subprocess.run(cmd, check=True)
    print(f"model: imported to {folder} in {time.perf_counter() - start:.1f} s", flush=True)
    return folder


def sampling_block(attempts: int, batch_size: int, max_new_tokens: int) -> dict:
    return {"n": attempts + 1, "max_attempts": attempts, "batch_size": batch_size,
            "max_new_tokens": max_new_tokens, "seed": SEED}


def in_process(model_dir: Path, work: Path, attempts: int, batch_size: int, max_new_tokens: int,
               threads: int) -> dict:
    """``lm.sample`` with a count of the generated tokens (``generate_batch`` wrapped)."""
    from poeval.generators.lm import generation

    tokens = {"generated": 0}
    original = generation.generate_batch

    def counting(model, prompt, decoding, max_new_tokens, stops, pad, counts=None, min_new_tokens=0):
        seqs = original(model, prompt, decoding, max_new_tokens, stops, pad, counts, min_new_tokens)
        for row in seqs[:, prompt.shape[1]:].tolist():
            tokens["generated"] += row_length(row, stops, pad)
        return seqs

    out = work / f"inprocess-b{batch_size}"
    generation.generate_batch = counting
    try:
        start = time.perf_counter()
        stats = generation.sample(str(model_dir), DECODING, sampling_block(attempts, batch_size, max_new_tokens),
                                  f"{out}.jsonl", f"{out}.stats.json", threads=threads, progress=False)
        call = time.perf_counter() - start
    finally:
        generation.generate_batch = original
    return row_of(stats, call, tokens["generated"])


def row_length(row: list[int], stops: list[int], pad: int) -> int:
    """Generated tokens of one row: up to and including the first stop token; a row the sampler ended at a
    fifth verse is padded with ``pad`` after it (trailing pads are not counted when ``pad`` is no stop)."""
    for i, tok in enumerate(row):
        if tok in stops:
            return i + 1
    end = len(row)
    while end and row[end - 1] == pad:
        end -= 1
    return end


def through_endpoint(served, model_dir_out: Path, bos: str, attempts: int, concurrency: int,
                     max_new_tokens: int, timeout: float) -> dict:
    from poeval.generators import endpoint
    from poeval.generators.interface import TrainInputs
    from poeval.generators.prompting import prompt_for

    entry = {"arch": "endpoint", "base_url": served.base_url, "model": served.model, "api": "completions",
             "server": "transformers", "max_concurrency": concurrency, "max_retries": 2, "timeout": timeout,
             "prompt": {"text": bos}}
    folder = model_dir_out / f"endpoint-c{concurrency}"
    start = time.perf_counter()
    endpoint.fit(TrainInputs(None, None), str(folder / "model"), entry, "none", lang="en", name=f"c{concurrency}",
                 progress=False)
    stats = endpoint.sample(str(folder / "model"), DECODING, sampling_block(attempts, 1, max_new_tokens),
                            str(folder / "samples.jsonl"), str(folder / "samples.stats.json"), progress=False,
                            prompt=prompt_for(entry, "en"))
    call = time.perf_counter() - start
    requests = stats["requests"]
    if requests["sent_now"] != attempts or requests["failed_now"]:
        raise SystemExit(f"endpoint c{concurrency}: {requests['sent_now']} requests sent, "
                         f"{requests['failed_now']} failed; expected {attempts} and 0")
    return row_of(stats, call, (requests.get("usage") or {}).get("completion_tokens"))


def warm_up(served, bos: str) -> float:
    """One short request, so that the first timed one pays no lazy load."""
    body = json.dumps({"model": served.model, "prompt": bos, "max_tokens": 4}).encode()
    request = urllib.request.Request(f"{served.base_url}/completions", body, {"Content-Type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=300) as resp:
        resp.read()
    return time.perf_counter() - start


def row_of(stats: dict, call: float, tokens: int | None) -> dict:
    secs = stats["elapsed_s"]
    return {"attempts": stats["attempts"], "valid": stats["valid"], "wall_s": secs, "call_s": call,
            "attempts_per_s": stats["attempts"] / secs, "tokens": tokens,
            "tokens_per_s": tokens / secs if tokens is not None else None,
            "invalid": stats.get("invalid") or stats.get("reasons")}


def table(rows: dict[str, dict], ref: str) -> str:
    base = rows[ref]
    lines = ["| variant | attempts | wall s | attempts/s | × batch 1 | tokens | tokens/s | × batch 1 | valid |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, r in rows.items():
        tps = f"{r['tokens_per_s']:.1f}" if r["tokens_per_s"] is not None else "—"
        tps_x = (f"{r['tokens_per_s'] / base['tokens_per_s']:.2f}"
                 if r["tokens_per_s"] is not None and base["tokens_per_s"] else "—")
        lines.append(f"| {name} | {r['attempts']} | {r['wall_s']:.1f} | {r['attempts_per_s']:.3f} | "
                     f"{r['attempts_per_s'] / base['attempts_per_s']:.2f} | {r['tokens'] if r['tokens'] is not None else '—'} | "
                     f"{tps} | {tps_x} | {r['valid']} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="model folder (default: the SmolLM2-135M release, imported into --work)")
    ap.add_argument("--work", help="folder for the imported model and the samples (default: a temporary one; "
                                   "the import is reused from a given folder)")
    ap.add_argument("--attempts", type=int, default=100, help="generations / requests per variant")
    ap.add_argument("--max-new-tokens", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1, help="torch threads of the in-process sampler")
    ap.add_argument("--concurrency", type=int, nargs=2, default=[1, 4], metavar=("LOW", "HIGH"))
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per request (queued requests wait)")
    ap.add_argument("--out", help="write the table and its context here (JSON)")
    args = ap.parse_args()

    from servers import Served

    import torch
    import transformers

    context = {"command": shlex.join([os.path.relpath(sys.argv[0], ROOT) if sys.argv[0] else "", *sys.argv[1:]]),
               "commit": git_head(), "cpus": os.cpu_count(), "uptime_before": uptime(),
               "torch": torch.__version__, "transformers": transformers.__version__, "python": sys.version.split()[0],
               "attempts": args.attempts, "max_new_tokens": args.max_new_tokens, "threads": args.threads,
               "decoding": DECODING, "seed": SEED}
    print(f"before: {context['uptime_before']}; commit {context['commit']}; {context['cpus']} CPUs", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-endpoint-") as tmp:
        work = Path(args.work) if args.work else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        model_dir = Path(args.model) if args.model else import_smollm2(work)
        runs = work / f"runs-{time.strftime('%Y%m%d-%H%M%S')}"
        runs.mkdir()
        context["model"] = str(model_dir) if args.model else "smollm2-135m (poeval import)"
        rows: dict[str, dict] = {}
        batch = min(args.attempts, 100)
        for size in (batch, 1):
            name = f"in-process, batch_size {size}"
            rows[name] = in_process(model_dir, runs, args.attempts, size, args.max_new_tokens, args.threads)
            print(f"{name}: {json.dumps(rows[name])}  [{uptime()}]", flush=True)
        with Served(model_dir, runs / "logs", timeout=300) as served:
            context["serve_started_s"] = served.started_in
            bos = served.bos
            context["prompt_text"] = bos
            context["warm_up_request_s"] = warm_up(served, bos)
            print(f"transformers serve on port {served.port}: up in {served.started_in:.1f} s, warm-up "
                  f"{context['warm_up_request_s']:.1f} s; prompt {bos!r}", flush=True)
            for c in args.concurrency:
                name = f"endpoint, max_concurrency {c}"
                rows[name] = through_endpoint(served, runs, bos, args.attempts, c, args.max_new_tokens,
                                              args.timeout)
                print(f"{name}: {json.dumps(rows[name])}  [{uptime()}]", flush=True)
            context["server_posts"] = served.requests()
    context["uptime_after"] = uptime()
    ref = "in-process, batch_size 1"
    low, high = (rows[f"endpoint, max_concurrency {c}"] for c in args.concurrency)
    ratios = {
        "attempts_per_s_vs_batch1": {k: r["attempts_per_s"] / rows[ref]["attempts_per_s"] for k, r in rows.items()},
        "tokens_per_s_vs_batch1": {k: (r["tokens_per_s"] / rows[ref]["tokens_per_s"]
                                       if r["tokens_per_s"] and rows[ref]["tokens_per_s"] else None)
                                   for k, r in rows.items()},
        "wall_vs_batch1": {k: r["wall_s"] / rows[ref]["wall_s"] for k, r in rows.items()},
        f"concurrency_{args.concurrency[1]}_over_{args.concurrency[0]}": {
            "attempts_per_s": high["attempts_per_s"] / low["attempts_per_s"],
            "tokens_per_s": (high["tokens_per_s"] / low["tokens_per_s"]
                             if high["tokens_per_s"] and low["tokens_per_s"] else None),
            "wall": high["wall_s"] / low["wall_s"]},
    }
    md = table(rows, ref)
    speed = ratios[f"concurrency_{args.concurrency[1]}_over_{args.concurrency[0]}"]
    print()
    print(md)
    print(f"\nmax_concurrency {args.concurrency[1]} / {args.concurrency[0]}: attempts/s ×{speed['attempts_per_s']:.2f}"
          + (f", tokens/s ×{speed['tokens_per_s']:.2f}" if speed["tokens_per_s"] else ""))
    print(f"after: {context['uptime_after']}")
    if args.out:
        Path(args.out).write_text(json.dumps({"context": context, "rows": rows, "ratios": ratios, "table": md},
                                             indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
