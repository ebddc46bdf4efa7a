"""The cluster profiles (profiles/slurm, profiles/kubernetes), without a cluster.

The Slurm test runs Snakemake with the Slurm executor plugin against fake `sbatch`, `sacct`, `squeue`,
`scontrol`, `sinfo`, `sacctmgr` and `sshare` commands that record what they are asked and report every
job COMPLETED without running it, so its outputs are missing, Snakemake resubmits each job once (the
profile's `retries: 1`, with more memory and time) and stops. The inputs of the submitted jobs are empty
placeholder files. A real one-node Slurm run is
scripts/local_slurm.sh (docs/cluster.md "Running on a GPU cluster").
"""

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PROFILES = ROOT / "profiles"
GPU_RULES = ("train", "sample", "adherence_sample")


def _workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "config" / "scale").mkdir(parents=True)
    for name in ("params.yaml", "config/scale/tiny.yaml"):
        (work / name).write_text((ROOT / name).read_text())
    return work


def _rules() -> set[str]:
    names = set()
    for path in (ROOT / "workflow" / "rules").glob("*.smk"):
        names |= set(re.findall(r"^(?:rule|checkpoint) (\w+):", path.read_text(), flags=re.M))
    return names


def _profile(name: str) -> dict:
    return yaml.safe_load((PROFILES / name / "config.yaml").read_text())


@pytest.mark.parametrize("name,executor", [("slurm", "slurm"), ("kubernetes", "kubernetes")])
def test_profile_parses_and_names_only_existing_rules(name, executor):
    profile = _profile(name)
    assert profile["executor"] == executor
    for key in ("jobs", "retries", "default-resources", "set-resources", "set-threads"):
        assert key in profile, f"{name}: {key} missing"
    for key in ("mem_mb", "runtime"):
        assert key in profile["default-resources"], f"{name}: default-resources.{key} missing"
    rules = _rules()
    for key in ("set-resources", "set-threads"):
        unknown = set(profile[key]) - rules
        assert not unknown, f"{name}: {key} names rules the workflow does not have: {sorted(unknown)}"
    for rule in GPU_RULES:   # their rules size them from the system's arch: the profile overrides none of it
        sized = {"gpu", "gres", "mem_mb", "runtime", "disk_mb", "slurm_partition"}
        assert not sized & set(profile["set-resources"].get(rule, {})), f"{name}: {rule}"
    for rule, res in profile["set-resources"].items():
        if rule not in GPU_RULES:
            assert "gpu" not in res and "gres" not in res, f"{name}: CPU rule {rule} asks for a GPU"
    if name == "kubernetes":
        assert profile["default-storage-provider"] == "s3"
        assert profile["default-storage-prefix"] and profile["container-image"]
        for rule in GPU_RULES:   # Kubernetes needs a limit on nvidia.com/gpu: scale 0 sets requests = limits
            assert profile["set-resources"][rule]["gpu_manufacturer"] == "nvidia", rule
            assert profile["set-resources"][rule]["scale"] == 0


FAKE_SLURM = r'''#!PYTHON
"""Fake Slurm client command: records its argv, reports every submitted job COMPLETED (none runs)."""
import json, os, sys
from pathlib import Path
state = Path(os.environ["FAKE_SLURM_DIR"])
cmd, args = Path(sys.argv[0]).name, sys.argv[1:]
with open(state / "calls.jsonl", "a") as f:
    f.write(json.dumps({"cmd": cmd, "argv": args}) + "\n")
jobs = state / "jobs.txt"
ids = jobs.read_text().split() if jobs.exists() else []
if cmd == "sbatch":
    new = str(len(ids) + 1)
    with open(jobs, "a") as f:
        f.write(new + "\n")
    print(new)
elif cmd == "sacct" and any(a.startswith("--format=JobIdRaw") for a in args):
    print("\n".join(f"{i}|COMPLETED" for i in ids))
elif cmd == "squeue":
    print("\n".join(f"{i}|COMPLETED" for i in ids))
elif cmd == "sinfo":
    print("PARTITION\ncpu-test*\ngpu-test")
elif cmd in ("sacctmgr", "sshare"):
    print(os.environ.get("POEVAL_SLURM_ACCOUNT", ""))
'''


def _fake_slurm(tmp_path: Path) -> tuple[Path, Path]:
    bin_dir, state = tmp_path / "fakebin", tmp_path / "fakeslurm"
    bin_dir.mkdir()
    state.mkdir()
    for cmd in ("sbatch", "sacct", "squeue", "scontrol", "sinfo", "sacctmgr", "sshare", "srun"):
        path = bin_dir / cmd
        path.write_text(FAKE_SLURM.replace("PYTHON", sys.executable))
        path.chmod(0o755)
    return bin_dir, state


def _jobs(out: str) -> list[dict]:
    """Jobs of a dry run: rule, wildcards, outputs (Snakemake's per-job report)."""
    jobs = []
    for block in re.split(r"\n(?=rule \w+:\n)", out):
        m = re.match(r"rule (\w+):\n", block)
        if not m:
            continue
        fields = dict(re.findall(r"^    (\w+): (.*)$", block, flags=re.M))
        jobs.append({"rule": m.group(1), "output": fields.get("output", ""), "block": block})
    return jobs


def _sbatch_options(argv: list[str]) -> dict[str, str]:
    """sbatch argv -> {option: value}; flags without a value map to ''."""
    opts, i = {}, 0
    takes_value = {"--job-name", "--output", "--comment", "-A", "-p", "-t", "--mem", "-D", "-C", "--mem-per-cpu"}
    while i < len(argv):
        a = argv[i]
        if a in takes_value:
            opts[a] = argv[i + 1]
            i += 2
            continue
        key, _, value = a.partition("=")
        opts[key] = value
        i += 1
    return opts


# Targets whose jobs are the first ones to run once their inputs exist: a training run, a sampling run
# of another (already "trained") system, and two metric cells of an existing sample.
TARGETS = (
    "models/en/gpt2-s",
    "results/samples/en/bygpt5-s-cond/vanilla.jsonl",
    "results/metrics/en/bygpt5-s-cond/contrastive-k6-a0.7/lexical.json",
    "results/metrics/en/bygpt5-s-cond/contrastive-k6-a0.7/memorization.json",
)


def test_slurm_profile_submissions(tmp_path):
    work = _workdir(tmp_path)
    bin_dir, state = _fake_slurm(tmp_path)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}",
               HF_HUB_OFFLINE="1", FAKE_SLURM_DIR=str(state), POEVAL_SLURM_PARTITION="cpu-test",
               POEVAL_SLURM_GPU_PARTITION="gpu-test", POEVAL_SLURM_ACCOUNT="proj123")
    env.pop("SLURM_JOB_ID", None)
    base = [str(BIN / "snakemake"), "--snakefile", str(ROOT / "Snakefile"), "--directory", str(work),
            "--profile", str(PROFILES / "slurm")]
    tiny = ("--configfile", "config/scale/tiny.yaml")   # last: --configfile takes every argument after it

    # 1. The dry run lists the target jobs and everything upstream; create the upstream outputs as empty
    #    placeholders, oldest first, so that only the target jobs are left to run.
    dry = subprocess.run([*base, "-n", *TARGETS, *tiny], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert dry.returncode == 0, dry.stderr[-3000:] + dry.stdout[-3000:]
    jobs = _jobs(dry.stdout + dry.stderr)
    upstream = [j for j in jobs if not set(j["output"].split(", ")) & set(TARGETS)]
    assert {j["rule"] for j in jobs} >= {"train", "sample", "metric_cell"}
    stamp = time.time() - 3600
    for job in upstream:
        stamp += 1
        for out in job["output"].split(", "):
            path = work / out
            if not Path(out).suffix:                  # directory() output (a model checkpoint)
                path.mkdir(parents=True, exist_ok=True)
                path = path / ".snakemake_timestamp"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
            os.utime(path, (stamp, stamp))

    # 2. The run: every job goes to the fake sbatch, "completes" without its outputs, is resubmitted once
    #    (attempt 2) and fails again.
    fast = ("--slurm-init-seconds-before-status-checks", "1", "--seconds-between-status-checks", "1",
            "--latency-wait", "1")
    proc = subprocess.run([*base, *TARGETS, *fast, *tiny],
                          cwd=work, env=env, capture_output=True, text=True, timeout=300)
    log = proc.stdout + proc.stderr
    calls = [json.loads(line) for line in (state / "calls.jsonl").read_text().splitlines()]
    submissions = [_sbatch_options(c["argv"]) for c in calls if c["cmd"] == "sbatch"]
    assert proc.returncode != 0, "the fake jobs all fail"
    by_job: dict[str, list[dict]] = {}
    for opts in submissions:
        by_job.setdefault(opts["--comment"], []).append(opts)
    expected = {
        "rule_train_wildcards_en_gpt2-s": dict(gpu=True, partition="gpu-test", cpus="8", mem=32000, runtime=240),
        "rule_sample_wildcards_en_bygpt5-s-cond_vanilla": dict(gpu=True, partition="gpu-test", cpus="4",
                                                                mem=16000, runtime=60),
        "rule_metric_cell_wildcards_en_bygpt5-s-cond_contrastive-k6-a0.7_lexical":
            dict(gpu=False, partition="cpu-test", cpus="1", mem=8000, runtime=60),
        "rule_metric_cell_wildcards_en_bygpt5-s-cond_contrastive-k6-a0.7_memorization":
            dict(gpu=False, partition="cpu-test", cpus="4", mem=8000, runtime=60),
    }
    assert set(by_job) == set(expected), f"submitted: {sorted(by_job)}\n{log[-3000:]}"
    for job, want in expected.items():
        attempts = by_job[job]
        assert len(attempts) == 2, f"{job}: {len(attempts)} submissions, expected a retry"
        for attempt, opts in enumerate(attempts, start=1):
            shown = {k: v for k, v in opts.items() if k not in ("--wrap", "--output", "--job-name")}
            gpu = opts.get("--gpus") == "1" or "gpu" in opts.get("--gres", "")
            assert gpu == want["gpu"], f"{job}: GPU request {gpu}, expected {want['gpu']}: {shown}"
            assert opts["-p"] == want["partition"] and opts["-A"] == "proj123", shown
            assert opts["--cpus-per-task"] == want["cpus"], shown
            assert int(opts["--mem"]) == want["mem"] * attempt, f"{job} attempt {attempt}: {shown}"
            assert int(opts["-t"]) == want["runtime"] * attempt, f"{job} attempt {attempt}: {shown}"
            assert opts["-D"] == str(work)
            wrap = shlex.split(opts["--wrap"])
            assert "--target-jobs" in wrap and "slurm-jobstep" in wrap, wrap


def test_slurm_placeholders_reach_the_jobs_unset(tmp_path):
    """Without the variables, the placeholder itself is the partition, so sbatch names what is missing."""
    work = _workdir(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("POEVAL_SLURM")}
    env.update(PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", HF_HUB_OFFLINE="1")
    proc = subprocess.run([str(BIN / "snakemake"), "--snakefile", str(ROOT / "Snakefile"),
                           "--directory", str(work), "--profile", str(PROFILES / "slurm"),
                           "-n", "models/en/gpt2-s", "--configfile", "config/scale/tiny.yaml"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    train = next(j for j in _jobs(proc.stdout + proc.stderr) if j["rule"] == "train")
    assert "slurm_partition=$POEVAL_SLURM_GPU_PARTITION" in train["block"]
    assert "slurm_account=$POEVAL_SLURM_ACCOUNT" in train["block"]


# Systems whose names mislead: the resources of their jobs follow their archs (the generator registry's
# train and sample jobs), never their names
MISLEADING = """
models:
  deepspeare-like: {arch: gpt2, size: S, init: scratch, name_or_path: null, conditioned: false, vocab_size: 500,
                    n_layer: 1, n_embd: 64, n_head: 2, n_positions: 96, dropout: 0.0}
  gpt2-like: {arch: sa, size: S, init: scratch, conditioned: false, hidden: 32, pretrain: null}
  mine: {arch: llama, size: S, init: scratch, name_or_path: null, conditioned: false, vocab_size: 500, n_layer: 1,
         n_embd: 64, n_head: 2, n_positions: 96, dropout: 0.0}
systems: [deepspeare-like, gpt2-like, mine]
"""


def test_slurm_jobs_are_sized_by_the_systems_arch(tmp_path):
    work = _workdir(tmp_path)
    (work / "misleading.yaml").write_text(MISLEADING)
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", HF_HUB_OFFLINE="1",
               POEVAL_SLURM_PARTITION="cpu-x", POEVAL_SLURM_GPU_PARTITION="gpu-x", POEVAL_SLURM_ACCOUNT="")
    targets = [f"models/en/{s}" for s in ("deepspeare-like", "gpt2-like", "mine")]
    targets += ["results/samples/en/gpt2-like/vanilla.jsonl", "results/samples/en/mine/vanilla.jsonl"]
    proc = subprocess.run([str(BIN / "snakemake"), "--snakefile", str(ROOT / "Snakefile"),
                           "--directory", str(work), "--profile", str(PROFILES / "slurm"), "-n", *targets,
                           "--configfile", "config/scale/tiny.yaml", "misleading.yaml"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = {}
    for job in _jobs(proc.stdout + proc.stderr):
        if job["rule"] in ("train", "sample"):
            system = re.search(r"system=([^,\n]+)", job["block"]).group(1)
            res = dict(re.findall(r"(\w+)=([^,\n]+)", re.search(r"resources: (.*)", job["block"]).group(1)))
            got[job["rule"], system] = tuple(res[k] for k in ("gpu", "slurm_partition", "mem_mb", "runtime"))
    assert got == {("train", "deepspeare-like"): ("1", "gpu-x", "32000", "240"),
                   ("train", "gpt2-like"): ("0", "cpu-x", "32000", "240"),
                   ("train", "mine"): ("1", "gpu-x", "96000", "720"),
                   ("sample", "gpt2-like"): ("0", "cpu-x", "16000", "60"),
                   ("sample", "mine"): ("1", "gpu-x", "64000", "180")}


MOTO_SNAKEMAKE = """
import sys
import boto3
from moto import mock_aws

with mock_aws():  # an in-process S3: the dry run checks which outputs exist under the prefix
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="poeval-test")
    from snakemake.cli import main
    sys.argv = ["snakemake", *sys.argv[1:]]
    main()
"""


def test_kubernetes_profile_dry_run_against_s3(tmp_path):
    pytest.importorskip("snakemake_executor_plugin_kubernetes")
    pytest.importorskip("snakemake_storage_plugin_s3")
    pytest.importorskip("moto")
    work = _workdir(tmp_path)
    script = tmp_path / "snakemake_moto.py"
    script.write_text(MOTO_SNAKEMAKE)
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", HF_HUB_OFFLINE="1",
               POEVAL_IMAGE="example.org/poeval:test", POEVAL_S3_PREFIX="s3://poeval-test/run",
               AWS_DEFAULT_REGION="us-east-1")
    proc = subprocess.run([sys.executable, str(script), "--snakefile", str(ROOT / "Snakefile"),
                           "--directory", str(work), "--profile", str(PROFILES / "kubernetes"),
                           "-n", "models/en/gpt2-s", "results/metrics/en/gpt2-s/vanilla/lexical.json",
                           "--configfile", "config/scale/tiny.yaml"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    jobs = {j["rule"]: j["block"] for j in _jobs(out)}
    assert "s3://poeval-test/run/models/en/gpt2-s (send to storage)" in jobs["train"]
    assert re.search(r"resources: .*mem_mb=32000, .*gpu=1, .*gpu_manufacturer=nvidia, scale=0", jobs["train"]), jobs["train"]
    assert "gpu=" not in jobs["metric_cell"]
