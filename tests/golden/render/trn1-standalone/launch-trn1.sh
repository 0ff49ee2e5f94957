#!/usr/bin/env bash
# launch-trn1.sh: node launch script for stack trn1-standalone, pool trn1
# (2 x trn1.32xlarge, torch-neuronx).
# Rendered by `accelstack render` from templates/neuron-node.sh.j2; re-render instead of editing.
# Run once per node. It sets the environment, pre-compiles the graphs, then starts
# torchrun with one process per NeuronCore.
# Where this node sits in the job comes from the orchestrator (ACCELSTACK_ORCHESTRATOR,
# default standalone): pytorchjob (PET_NNODES/WORLD_SIZE, PET_NODE_RANK/RANK,
# MASTER_ADDR, MASTER_PORT), slurm (SLURM_NNODES, SLURM_NODEID, SLURM_JOB_NODELIST) or
# standalone (ACCELSTACK_NNODES, ACCELSTACK_NODE_RANK, ACCELSTACK_HEAD_ADDR,
# ACCELSTACK_RDZV_PORT); auto tries them in that order. Node rank 0 hosts the rendezvous.
set -euo pipefail

die() {
  echo "accelstack: error: $*" >&2
  exit 2
}

# ---- environment: every variable with the reason it is set -------------------------------
# EFA: 8 interfaces on trn1.32xlarge
export FI_PROVIDER=efa  # libfabric must use the EFA provider for collectives between nodes
export FI_EFA_USE_DEVICE_RDMA=1  # let EFA read and write device memory directly (RDMA)
export FI_EFA_FORK_SAFE=1  # data loader workers fork; keep libfabric's registered memory fork-safe
# Neuron runtime
export NEURON_RT_NUM_CORES=1  # NeuronCores per process: torchrun starts one process per core
export NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS=3  # let the runtime queue a few executions ahead of the host
export NEURON_RT_STOCHASTIC_ROUNDING_EN=1  # unbiased rounding of low-precision weight updates
export NEURON_FUSE_SOFTMAX=1  # compile softmax as one fused kernel
export MALLOC_ARENA_MAX=64  # cap glibc malloc arenas: many host threads otherwise bloat host memory
export XLA_DOWNCAST_BF16=1  # workload.precision is bf16: XLA keeps FP32 tensors as BF16 on device
# Neuron compiler and compile cache
# The compile-cache bucket is created at deploy time: render with --bucket NAME, or set
# ACCELSTACK_COMPILE_CACHE_URL=s3://BUCKET/neuron-cache/trn1/ on every node.
export NEURON_COMPILE_CACHE_URL="${ACCELSTACK_COMPILE_CACHE_URL:?set ACCELSTACK_COMPILE_CACHE_URL=s3://BUCKET/neuron-cache/trn1/ (the compile-cache bucket of the stack) or render with --bucket}"  # compiled graphs shared by every node of pool trn1
export NEURON_CC_FLAGS="--model-type=transformer --distribution-strategy=llm-training"  # compiler tuned for transformer training; no --cache_dir: it would override NEURON_COMPILE_CACHE_URL

# ---- where this node sits in the job -------------------------------------------------------
orchestrator="${ACCELSTACK_ORCHESTRATOR:-standalone}"
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
    rdzv_id="${ACCELSTACK_RDZV_ID:-trn1-standalone}"
    ;;
  slurm)
    nnodes="${SLURM_NNODES:?Slurm: SLURM_NNODES is not set}"
    node_rank="${SLURM_NODEID:?Slurm: SLURM_NODEID is not set}"
    command -v scontrol >/dev/null || die "Slurm: scontrol is not on PATH"
    # read every line: `| head -n 1` would SIGPIPE scontrol and fail under pipefail
    mapfile -t slurm_hosts < <(scontrol show hostnames "${SLURM_JOB_NODELIST:?Slurm: SLURM_JOB_NODELIST is not set}")
    head_addr="${slurm_hosts[0]:-}"
    rdzv_port="${ACCELSTACK_RDZV_PORT:-29500}"
    rdzv_id="${ACCELSTACK_RDZV_ID:-${SLURM_JOB_ID:-trn1-standalone}}"
    ;;
  standalone)
    nnodes="${ACCELSTACK_NNODES:-2}"
    if [[ "$nnodes" == 1 ]]; then
      node_rank="${ACCELSTACK_NODE_RANK:-0}"
      head_addr="${ACCELSTACK_HEAD_ADDR:-127.0.0.1}"
    else
      node_rank="${ACCELSTACK_NODE_RANK:?standalone: set ACCELSTACK_NODE_RANK (0 on the head node)}"
      head_addr="${ACCELSTACK_HEAD_ADDR:?standalone: set ACCELSTACK_HEAD_ADDR (the head node address)}"
    fi
    rdzv_port="${ACCELSTACK_RDZV_PORT:-29500}"
    rdzv_id="${ACCELSTACK_RDZV_ID:-trn1-standalone}"
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
if [[ "$nnodes" != 2 ]]; then
  echo "accelstack: note: running on $nnodes node(s); pool trn1 has 2" >&2
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
  --nproc_per_node=32
  --nnodes="$nnodes"
  --node_rank="$node_rank"
  --rdzv_backend=c10d
  --rdzv_endpoint="$head_addr:$rdzv_port"
  --rdzv_conf="is_host=$is_host,read_timeout=$rdzv_timeout,join_timeout=$rdzv_timeout"
)
entrypoint=/home/ubuntu/code/train_llama3.py
workload_args=(
  --model
  meta-llama/Meta-Llama-3-8B
  --tensor-parallel-size
  8
)
echo "accelstack: $orchestrator node $node_rank of $nnodes, rendezvous $head_addr:$rdzv_port, 32 processes per node" >&2

# ---- pre-compile: build every graph before training starts -----------------------------
# neuron_parallel_compile runs the job for a few steps while only extracting and compiling
# graphs into the compile cache; training below then loads them instead of compiling.
# ACCELSTACK_MAX_STEPS tells the training script how many steps to run in this phase.
if [[ "${ACCELSTACK_SKIP_PRECOMPILE:-0}" == 1 ]]; then
  echo "accelstack: pre-compile skipped (ACCELSTACK_SKIP_PRECOMPILE=1)" >&2
else
  command -v neuron_parallel_compile >/dev/null \
    || die "neuron_parallel_compile is not on PATH (it ships with torch-neuronx); set ACCELSTACK_SKIP_PRECOMPILE=1 to skip"
  echo "accelstack: pre-compiling (5 steps)" >&2
  ACCELSTACK_MAX_STEPS=5 neuron_parallel_compile "$torchrun_bin" "${torchrun_args[@]}" \
    --rdzv_id="$rdzv_id-precompile" "$entrypoint" "${workload_args[@]}"
  echo "accelstack: pre-compile finished" >&2
fi

# ---- training ------------------------------------------------------------------------------
echo "accelstack: training" >&2
exec "$torchrun_bin" "${torchrun_args[@]}" --rdzv_id="$rdzv_id" "$entrypoint" "${workload_args[@]}"
