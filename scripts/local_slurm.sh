#!/usr/bin/env bash
# A one-node Slurm "cluster" on this machine, to try profiles/slurm for real without a cluster.
# Debian packages (slurmctld, slurmd, slurm-client, munge; installed when missing), started by hand (no
# systemd), state and logs under $POEVAL_SLURM_DIR (default /tmp/poeval-slurm). Needs root. Meant for a
# throwaway machine or container: it links /etc/slurm/slurm.conf to its config (see below) and refuses
# to replace a slurm.conf that is not its own.
#
#   scripts/local_slurm.sh start     # install if needed, write the config, start munged, slurmctld, slurmd
#   eval "$(scripts/local_slurm.sh env)"   # the profile's partition/account variables (and SLURM_CONF)
#   sinfo; sbatch --wrap hostname; squeue
#   scripts/local_slurm.sh stop      # stop the daemons it started (by their pid files)
#   scripts/local_slurm.sh status
#
# The node is this machine, declared larger than it is (16 CPUs, 256 GB; SlurmdParameters=config_overrides
# keeps slurmd from draining it), so the profile's paper-scale requests (8 CPUs, 96 GB for a LLaMA train
# job) schedule unchanged; nothing enforces them (no cgroups). Override with POEVAL_SLURM_NODE_CPUS and
# POEVAL_SLURM_NODE_MEM_MB, and limit what really runs with snakemake's --jobs / --max-threads. One fake
# GPU (gres.conf: Name=gpu File=/dev/null): jobs that ask for --gpus=1 schedule, but no GPU is there.
# Partitions: `cpu` (default) and `gpu`, both on the one node. There is no slurmdbd: accounting is off, so
# `sacct` has no job records and the Slurm executor plugin must query job states with `squeue`
# (MinJobAge keeps finished jobs visible to squeue for 10 minutes); the profile's status command is
# switched with `--slurm-status-command squeue` (see docs/cluster.md "Running on a GPU cluster").
set -euo pipefail

DIR=${POEVAL_SLURM_DIR:-/tmp/poeval-slurm}
CONF=$DIR/etc/slurm.conf
HOST=$(hostname -s)
# Ports away from Slurm's defaults (6817/6818), so a real installation on the machine is not disturbed.
CTLD_PORT=${POEVAL_SLURMCTLD_PORT:-16817}
SLURMD_PORT=${POEVAL_SLURMD_PORT:-16818}
MUNGE_SOCKET=$DIR/munge/munge.socket

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

install_packages() {
  local missing=() p
  for p in slurmctld slurmd slurm-client munge; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing Debian packages: ${missing[*]}"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

write_config() {
  local cpus=${POEVAL_SLURM_NODE_CPUS:-16} mem=${POEVAL_SLURM_NODE_MEM_MB:-262144}
  mkdir -p "$DIR/etc" "$DIR/state" "$DIR/spool" "$DIR/log" "$DIR/munge"
  cat >"$CONF" <<EOF
# written by scripts/local_slurm.sh: one node ($HOST), no accounting database
ClusterName=poeval-local
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.txt
MpiDefault=none
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=600
SchedulerParameters=sched_interval=2
GresTypes=gpu
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem Gres=gpu:1 State=UNKNOWN
PartitionName=cpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=ALL MaxTime=INFINITE State=UP
EOF
  cat >"$DIR/etc/gres.conf" <<EOF
# a fake GPU: jobs can ask for one, nothing is behind it
NodeName=$HOST Name=gpu File=/dev/null
EOF
}

# The job step inside each Slurm job (snakemake-executor-plugin-slurm-jobstep) drops every SLURM_*
# variable but a fixed few, SLURM_CONF included, so `srun` there only finds the config at Slurm's default
# path (or through DNS SRV records): link it there.
link_default_config() {
  local default=/etc/slurm/slurm.conf
  if [ -e "$default" ] && [ "$(readlink -f "$default")" != "$(readlink -f "$CONF")" ]; then
    echo "$default exists and is not this script's; not replacing it (srun inside jobs would use it)" >&2
    return 1
  fi
  as_root mkdir -p /etc/slurm
  as_root ln -sfn "$CONF" "$default"
}

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

start() {
  install_packages
  write_config
  link_default_config
  export SLURM_CONF=$CONF
  if ! pid_alive "$DIR/munge/munged.pid"; then
    chown munge:munge "$DIR/munge"
    as_root runuser -u munge -- /usr/sbin/munged --socket="$MUNGE_SOCKET" --pid-file="$DIR/munge/munged.pid" \
      --log-file="$DIR/munge/munged.log" --seed-file="$DIR/munge/munged.seed" --key-file=/etc/munge/munge.key
  fi
  pid_alive "$DIR/slurmctld.pid" || as_root /usr/sbin/slurmctld -f "$CONF"
  pid_alive "$DIR/slurmd.pid" || as_root /usr/sbin/slurmd -f "$CONF" -N "$HOST"
  local i
  for i in $(seq 1 30); do
    if sinfo -h -N -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
      sinfo
      echo "Slurm is up. In your shell: eval \"\$($0 env)\""
      return 0
    fi
    sleep 1
  done
  echo "Slurm did not come up; logs in $DIR/log:" >&2
  tail -n 20 "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log" >&2 || true
  return 1
}

stop() {
  local f
  for f in "$DIR/slurmd.pid" "$DIR/slurmctld.pid" "$DIR/munge/munged.pid"; do
    if pid_alive "$f"; then as_root kill "$(cat "$f")"; fi
  done
  case "$(readlink /etc/slurm/slurm.conf 2>/dev/null)" in "$CONF") as_root rm -f /etc/slurm/slurm.conf ;; esac
  echo "stopped (state and logs stay in $DIR; remove it for a clean start)"
}

env_lines() {
  cat <<EOF
export SLURM_CONF=$CONF
export POEVAL_SLURM_PARTITION=cpu POEVAL_SLURM_GPU_PARTITION=gpu POEVAL_SLURM_ACCOUNT=
EOF
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env) env_lines ;;
  status) export SLURM_CONF=$CONF; sinfo; squeue ;;
  *) echo "usage: $0 start|stop|env|status" >&2; exit 2 ;;
esac
