#!/usr/bin/env bash
# launch-trn1.sh: node launch script for stack trn1-finetune, pool trn1
# (1 x trn1.2xlarge, xla).
# Rendered by `accelstack render` from templates/neuron-xla-node.sh.j2; re-render instead of editing.
# Training path: xla, PyTorch/XLA on Neuron (torch-neuronx 2.9, the legacy training path) (maintenance).
# Run once per node. It sets the environment, checks the fabric, pre-compiles the graphs once, then starts
# torchrun with one process per NeuronCore at the LNC setting.
# Where this node sits in the job comes from the orchestrator (ACCELSTACK_ORCHESTRATOR,
# default auto): pytorchjob (PET_NNODES/WORLD_SIZE, PET_NODE_RANK/RANK,
# MASTER_ADDR, MASTER_PORT), slurm (SLURM_NNODES, SLURM_NODEID, SLURM_JOB_NODELIST) or
# standalone (ACCELSTACK_NNODES, ACCELSTACK_NODE_RANK, ACCELSTACK_HEAD_ADDR,
# ACCELSTACK_RDZV_PORT); auto tries them in that order. Node rank 0 hosts the rendezvous.
set -euo pipefail

die() {
  echo "accelstack: error: $*" >&2
  exit 2
}

# ---- environment: every variable with the reason it is set -------------------------------
# No EFA on this pool: collectives between nodes (if any) go over TCP.
# Neuron runtime
export NEURON_RT_NUM_CORES=1  # NeuronCores per process: torchrun starts one process per core
export NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS=3  # let the runtime queue a few executions ahead of the host
export NEURON_RT_STOCHASTIC_ROUNDING_EN=1  # unbiased rounding of low-precision weight updates
export NEURON_FUSE_SOFTMAX=1  # compile softmax as one fused kernel
export MALLOC_ARENA_MAX=64  # cap glibc malloc arenas: many host threads otherwise bloat host memory
# No XLA_DOWNCAST_BF16: deprecated after SDK 2.24 and it overrides per-op precision; cast in the model.
export ACCELSTACK_DIST_BACKEND=xla  # for the training script: torch.distributed backend of this path
# Neuron compiler and compile cache
# The compile-cache bucket is created at deploy time: render with --bucket NAME, or set
# ACCELSTACK_COMPILE_CACHE_URL=s3://BUCKET/neuron-cache/trn1/ on every node.
export NEURON_COMPILE_CACHE_URL="${ACCELSTACK_COMPILE_CACHE_URL:?set ACCELSTACK_COMPILE_CACHE_URL=s3://BUCKET/neuron-cache/trn1/ (the compile-cache bucket of the stack) or render with --bucket}"  # compiled graphs shared by every node of pool trn1
export NEURON_CC_FLAGS="--model-type=transformer --distribution-strategy=llm-training"  # compiler tuned for transformer training; no --cache_dir: it would override NEURON_COMPILE_CACHE_URL

# ---- durable checkpoints (docs/checkpoints.md: save here, resume from the newest complete one) --
if [[ -z "${ACCELSTACK_CHECKPOINT_DIR:-}" ]]; then
  [[ -n "${ACCELSTACK_CHECKPOINT_URL:-}" ]] || die "no checkpoint location: set ACCELSTACK_CHECKPOINT_DIR (a directory) or ACCELSTACK_CHECKPOINT_URL (s3://BUCKET/checkpoints/, the stack's checkpointUrl output; EKS pods read it from ConfigMap trn1-finetune-checkpoint)"
  ACCELSTACK_CHECKPOINT_DIR="${ACCELSTACK_CHECKPOINT_URL%/}/trn1-finetune/"
fi
export ACCELSTACK_CHECKPOINT_DIR  # the job's checkpoint prefix in S3 (write with an S3 client; pods have the Pod Identity role): survives node faults
case "$ACCELSTACK_CHECKPOINT_DIR" in
  s3://*) ;;
  *) mkdir -p "$ACCELSTACK_CHECKPOINT_DIR" ;;
esac

# ---- fabric self-check: a mis-wired node stops here instead of training slowly ---------------
# Expected on trn1.2xlarge (catalog): 0 EFA interface(s), 1 AWS Trainium device(s).
# ACCELSTACK_SKIP_FABRIC_CHECK=1 skips it. ACCELSTACK_TEST_SYSROOT is for the test suite only:
# a directory standing in for / when counting /sys/class/infiniband and /dev entries.
if [[ "${ACCELSTACK_SKIP_FABRIC_CHECK:-0}" == 1 ]]; then
  echo "accelstack: fabric check skipped (ACCELSTACK_SKIP_FABRIC_CHECK=1)" >&2
else
  sysroot="${ACCELSTACK_TEST_SYSROOT:-}"
  count_args() { echo "$#"; }
  shopt -s nullglob
  accel_found="$(count_args "$sysroot"/dev/neuron[0-9]*)"
  [[ "$accel_found" == 1 ]] \
    || die "fabric check: ${accel_found:-0} AWS Trainium device(s) visible, trn1.2xlarge has 1 (pool trn1)"
  shopt -u nullglob
  echo "accelstack: fabric check passed (0 EFA, 1 accelerators)" >&2
fi

# ---- where this node sits in the job -------------------------------------------------------
orchestrator="${ACCELSTACK_ORCHESTRATOR:-auto}"
if [[ "$orchestrator" == auto ]]; then
  if [[ -n "${MASTER_ADDR:-}" && -n "${PET_NNODES:-${WORLD_SIZE:-}}" ]]; then
    orchestrator=pytorchjob
  elif [[ -n "${SLURM_JOB_ID:-}" && -n "${SLURM_NNODES:-}" ]]; then
    orchestrator=slurm
  elif [[ -n "${ACCELSTACK_HEAD_ADDR:-}" || -n "${ACCELSTACK_NNODES:-}" ]]; then
    orchestrator=standalone
  else
    die "cannot tell where this node sits in the job: no PyTorchJob variables (MASTER_ADDR, WORLD_SIZE), no Slurm allocation (SLURM_JOB_ID) and no standalone variables (ACCELSTACK_NNODES, ACCELSTACK_NODE_RANK, ACCELSTACK_HEAD_ADDR); set ACCELSTACK_ORCHESTRATOR or those variables"
  fi
fi
case "$orchestrator" in
  pytorchjob)
    # The training operator sets PET_NNODES/PET_NODE_RANK (v1.7+); older ones WORLD_SIZE/RANK per pod.
    nnodes="${PET_NNODES:-${WORLD_SIZE:?PyTorchJob: neither PET_NNODES nor WORLD_SIZE is set}}"
    node_rank="${PET_NODE_RANK:-${RANK:?PyTorchJob: neither PET_NODE_RANK nor RANK is set}}"
    head_addr="${MASTER_ADDR:?PyTorchJob: MASTER_ADDR is not set}"
    rdzv_port="${MASTER_PORT:?PyTorchJob: MASTER_PORT is not set}"
    rdzv_id="${ACCELSTACK_RDZV_ID:-trn1-finetune}"
    ;;
  slurm)
    nnodes="${SLURM_NNODES:?Slurm: SLURM_NNODES is not set}"
    node_rank="${SLURM_NODEID:?Slurm: SLURM_NODEID is not set}"
    command -v scontrol >/dev/null || die "Slurm: scontrol is not on PATH"
    # read every line: `| head -n 1` would SIGPIPE scontrol and fail under pipefail
    mapfile -t slurm_hosts < <(scontrol show hostnames "${SLURM_JOB_NODELIST:?Slurm: SLURM_JOB_NODELIST is not set}")
    head_addr="${slurm_hosts[0]:-}"
    rdzv_port="${ACCELSTACK_RDZV_PORT:-29500}"
    rdzv_id="${ACCELSTACK_RDZV_ID:-${SLURM_JOB_ID:-trn1-finetune}}"
    ;;
  standalone)
    nnodes="${ACCELSTACK_NNODES:-1}"
    if [[ "$nnodes" == 1 ]]; then
      node_rank="${ACCELSTACK_NODE_RANK:-0}"
      head_addr="${ACCELSTACK_HEAD_ADDR:-127.0.0.1}"
    else
      node_rank="${ACCELSTACK_NODE_RANK:?standalone: set ACCELSTACK_NODE_RANK (0 on the head node)}"
      head_addr="${ACCELSTACK_HEAD_ADDR:?standalone: set ACCELSTACK_HEAD_ADDR (the head node address)}"
    fi
    rdzv_port="${ACCELSTACK_RDZV_PORT:-29500}"
    rdzv_id="${ACCELSTACK_RDZV_ID:-trn1-finetune}"
    ;;
  *)
    die "ACCELSTACK_ORCHESTRATOR='$orchestrator' is not one of auto, pytorchjob, slurm, standalone"
    ;;
esac
[[ "$nnodes" =~ ^[1-9][0-9]*$ ]] || die "node count '$nnodes' is not a positive whole number"
[[ "$node_rank" =~ ^[0-9]+$ ]] || die "node rank '$node_rank' is not a whole number"
(( node_rank < nnodes )) || die "node rank $node_rank is not below the node count $nnodes"
[[ -n "$head_addr" ]] || die "rendezvous host is empty"
[[ "$rdzv_port" =~ ^[0-9]+$ ]] || die "rendezvous port '$rdzv_port' is not a number"
if [[ "$nnodes" != 1 ]]; then
  echo "accelstack: note: running on $nnodes node(s); pool trn1 has 1" >&2
fi

# Node rank 0 hosts the c10d rendezvous store (set explicitly: torchrun's hostname match fails
# for DNS names such as a headless-Service address); the others wait for it up to
# ACCELSTACK_RDZV_TIMEOUT seconds (a head pod can be slow to pull its image).
is_host=0
if (( node_rank == 0 )); then
  is_host=1
fi
rdzv_timeout="${ACCELSTACK_RDZV_TIMEOUT:-900}"
[[ "$rdzv_timeout" =~ ^[1-9][0-9]*$ ]] || die "ACCELSTACK_RDZV_TIMEOUT '$rdzv_timeout' is not a number of seconds"

torchrun_bin="${ACCELSTACK_TORCHRUN:-torchrun}"
torchrun_args=(
  --nproc_per_node=2
  --nnodes="$nnodes"
  --node_rank="$node_rank"
  --rdzv_backend=c10d
  --rdzv_endpoint="$head_addr:$rdzv_port"
  --rdzv_conf="is_host=$is_host,read_timeout=$rdzv_timeout,join_timeout=$rdzv_timeout"
)
entrypoint=finetune.py
workload_args=(
  --dataset
  s3://example-datasets/instructions/
  --epochs
  2
)
echo "accelstack: $orchestrator node $node_rank of $nnodes, rendezvous $head_addr:$rdzv_port, 2 processes per node" >&2

# ---- pre-compile: a one-shot phase that builds every graph before training ---------------
# neuron_parallel_compile runs the job for a few steps with NEURON_EXTRACT_GRAPHS_ONLY=1: the
# XLA graphs are extracted and empty stubs with zero outputs run in their place (a script can
# read NEURON_EXTRACT_GRAPHS_ONLY to skip its output checks); the graphs are then compiled in
# parallel into the compile cache, and training below loads them instead of compiling.
# ACCELSTACK_MAX_STEPS tells the training script how many steps to run in this phase, and
# workload.precompile_args are appended here only. The phase runs once per job: its marker
# in ACCELSTACK_STATE_DIR makes a restarted worker go straight to the training rendezvous
# (delete the marker, or use another ACCELSTACK_RDZV_ID, to pre-compile again).
state_dir="${ACCELSTACK_STATE_DIR:-/var/tmp/accelstack}"
precompile_marker="$state_dir/precompiled-$rdzv_id"
precompile_args=(
)
if [[ "${ACCELSTACK_SKIP_PRECOMPILE:-0}" == 1 ]]; then
  echo "accelstack: pre-compile skipped (ACCELSTACK_SKIP_PRECOMPILE=1)" >&2
elif [[ -e "$precompile_marker" ]]; then
  echo "accelstack: pre-compile already done for $rdzv_id ($precompile_marker): straight to training" >&2
else
  command -v neuron_parallel_compile >/dev/null \
    || die "neuron_parallel_compile is not on PATH (it ships with torch-neuronx); set ACCELSTACK_SKIP_PRECOMPILE=1 to skip"
  echo "accelstack: pre-compiling (5 steps)" >&2
  ACCELSTACK_MAX_STEPS=5 neuron_parallel_compile "$torchrun_bin" "${torchrun_args[@]}" \
    --rdzv_id="$rdzv_id-precompile" "$entrypoint" "${workload_args[@]}" "${precompile_args[@]}"
  mkdir -p "$state_dir"
  touch "$precompile_marker"
  echo "accelstack: pre-compile finished" >&2
fi

# ---- training ------------------------------------------------------------------------------
echo "accelstack: training" >&2
exec "$torchrun_bin" "${torchrun_args[@]}" --rdzv_id="$rdzv_id" "$entrypoint" "${workload_args[@]}"
