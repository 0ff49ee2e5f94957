#!/usr/bin/env bash
# launch-h100.sh: node launch script for stack llama3-70b-p5, pool h100
# (16 x p5.48xlarge, torch-cuda).
# Rendered by `accelstack render` from templates/cuda-node.sh.j2; re-render instead of editing.
# Training path: torch-cuda, PyTorch with CUDA and NCCL (EFA through aws-ofi-nccl).
# Run once per node. It sets the environment, checks the fabric, then starts
# torchrun with one process per GPU.
# Where this node sits in the job comes from the orchestrator (ACCELSTACK_ORCHESTRATOR,
# default auto): trainjob (Kubeflow Trainer: PET_NNODES, PET_NODE_RANK,
# PET_MASTER_ADDR, PET_MASTER_PORT), pytorchjob (PET_NNODES/WORLD_SIZE, PET_NODE_RANK/RANK,
# MASTER_ADDR, MASTER_PORT), slurm (SLURM_NNODES, SLURM_NODEID, SLURM_JOB_NODELIST) or
# standalone (ACCELSTACK_NNODES, ACCELSTACK_NODE_RANK, ACCELSTACK_HEAD_ADDR,
# ACCELSTACK_RDZV_PORT); auto tries them in that order. Node rank 0 hosts the rendezvous.
set -euo pipefail

die() {
  echo "accelstack: error: $*" >&2
  exit 2
}

# ---- environment: every variable with the reason it is set -------------------------------
# EFA: 32 interfaces on p5.48xlarge (NCCL uses them through aws-ofi-nccl)
export FI_PROVIDER=efa  # libfabric must use the EFA provider, not TCP
export FI_EFA_USE_DEVICE_RDMA=1  # GPUDirect RDMA: EFA reads and writes GPU memory directly
export FI_EFA_FORK_SAFE=1  # data loader workers fork; keep libfabric's registered memory fork-safe
export FI_EFA_SET_CUDA_SYNC_MEMOPS=0  # do not set the CUDA sync-memops attribute on every EFA memory registration (slow with CUDA)
export NCCL_NET_PLUGIN=ofi  # load aws-ofi-nccl by name (libnccl-net-ofi.so)
export NCCL_NET=Libfabric  # only the plugin's network: a missing plugin fails at start instead of falling back to TCP sockets
# NCCL and PyTorch (NCCL_DEBUG stays unset unless you set it: NCCL_DEBUG=INFO names the transport)
export NCCL_SOCKET_IFNAME='^lo,docker'  # bootstrap over the host network, never loopback or docker bridges
export TORCH_NCCL_ASYNC_ERROR_HANDLING=1  # a failed collective aborts the job instead of hanging
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True  # fewer out-of-memory errors from fragmentation
# PyTorch's NCCL flight recorder, as awsome-distributed-training's EKS jobs set it (aws-samples/awsome-distributed-training@7217859f67bc693c52ff175ccc6082c41dbd7a1b 3.test_cases/pytorch/FSDP/kubernetes/fsdp.yaml-template:66-73)
export TORCH_NCCL_TRACE_BUFFER_SIZE=20000  # every rank keeps its last 20000 collectives in a ring buffer (0 turns the recorder off)
export TORCH_NCCL_DUMP_ON_TIMEOUT=1  # a collective that times out makes every rank write its buffer: which rank, which collective stopped
export TORCH_NCCL_ENABLE_MONITORING=1  # a rank whose NCCL watchdog hangs is aborted by the heartbeat monitor, after its dump, instead of hanging the job
nccl_trace_dir="${ACCELSTACK_NCCL_TRACE_DIR:-${ACCELSTACK_STATE_DIR:-/fsx/.accelstack/h100}/nccl-trace/llama3-70b-p5}"
if ! mkdir -p "$nccl_trace_dir" 2>/dev/null; then
  echo "accelstack: warning: cannot create $nccl_trace_dir: NCCL flight-recorder dumps go to /tmp" >&2
  nccl_trace_dir=/tmp
fi
export TORCH_NCCL_DEBUG_INFO_TEMP_FILE="$nccl_trace_dir/rank_"  # where each rank writes its dump (its rank appended): FSx, kept after the pod
export ACCELSTACK_DIST_BACKEND=nccl  # for the training script: torch.distributed backend of this path

# ---- durable checkpoints (docs/checkpoints.md: save here, resume from the newest complete one) --
export ACCELSTACK_CHECKPOINT_DIR="${ACCELSTACK_CHECKPOINT_DIR:-/fsx/checkpoints/llama3-70b-p5/}"  # FSx path linked to the S3 prefix (data repository association): survives node faults and the file system
case "$ACCELSTACK_CHECKPOINT_DIR" in
  s3://*) ;;
  *) mkdir -p "$ACCELSTACK_CHECKPOINT_DIR" ;;
esac

# ---- fabric self-check: a mis-wired node stops here instead of training slowly ---------------
# Expected on p5.48xlarge (catalog): 32 EFA interface(s), 8 NVIDIA H100 80GB SXM device(s).
# It counts what this container was given, not what the host has: EFA as the uverbs devices the
# EFA device plugin mounts (/dev/infiniband/uverbs*; /sys/class/infiniband lists every device of
# the host even inside a container), accelerators as the device files or GPUs visible here.
# ACCELSTACK_SKIP_FABRIC_CHECK=1 skips it. ACCELSTACK_TEST_SYSROOT is for the test suite only:
# a directory standing in for / when counting /dev entries.
if [[ "${ACCELSTACK_SKIP_FABRIC_CHECK:-0}" == 1 ]]; then
  echo "accelstack: fabric check skipped (ACCELSTACK_SKIP_FABRIC_CHECK=1)" >&2
else
  sysroot="${ACCELSTACK_TEST_SYSROOT:-}"
  count_args() { echo "$#"; }
  shopt -s nullglob
  fi_info_bin="$(command -v fi_info || echo /opt/amazon/efa/bin/fi_info)"
  "$fi_info_bin" -p efa >/dev/null 2>&1 \
    || die "fabric check: libfabric has no EFA provider ('fi_info -p efa' failed): install the EFA software or fix the image; collectives would fall back to TCP"
  efa_found="$(count_args "$sysroot"/dev/infiniband/uverbs[0-9]*)"
  [[ "$efa_found" == 32 ]] \
    || die "fabric check: $efa_found EFA device(s) in /dev/infiniband, p5.48xlarge has 32 (pool h100): request all 32 vpc.amazonaws.com/efa"
  # NCCL loads its network plugin by name; a missing or broken library would make NCCL stop
  # (NCCL_NET is pinned), so say which library and why here, before torchrun starts
  nccl_plugin="libnccl-net-ofi.so"
  "${ACCELSTACK_PYTHON:-python3}" -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "$nccl_plugin" 2>/dev/null \
    || die "fabric check: the NCCL network plugin $nccl_plugin (aws-ofi-nccl) does not load: install aws-ofi-nccl in the image or add its lib directory to LD_LIBRARY_PATH"
  accel_found="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)"
  [[ "$accel_found" == 8 ]] \
    || die "fabric check: ${accel_found:-0} NVIDIA H100 80GB SXM device(s) visible, p5.48xlarge has 8 (pool h100)"
  shopt -u nullglob
  echo "accelstack: fabric check passed (32 EFA, 8 accelerators)" >&2
fi

# ---- where this node sits in the job -------------------------------------------------------
orchestrator="${ACCELSTACK_ORCHESTRATOR:-auto}"
if [[ "$orchestrator" == auto ]]; then
  if [[ -n "${PET_MASTER_ADDR:-}" && -n "${PET_NNODES:-}" ]]; then
    orchestrator=trainjob
  elif [[ -n "${MASTER_ADDR:-}" && -n "${PET_NNODES:-${WORLD_SIZE:-}}" ]]; then
    orchestrator=pytorchjob
  elif [[ -n "${SLURM_JOB_ID:-}" && -n "${SLURM_NNODES:-}" ]]; then
    orchestrator=slurm
  elif [[ -n "${ACCELSTACK_HEAD_ADDR:-}" || -n "${ACCELSTACK_NNODES:-}" ]]; then
    orchestrator=standalone
  else
    die "cannot tell where this node sits in the job: no TrainJob variables (PET_MASTER_ADDR, PET_NNODES), no PyTorchJob variables (MASTER_ADDR, WORLD_SIZE), no Slurm allocation (SLURM_JOB_ID) and no standalone variables (ACCELSTACK_NNODES, ACCELSTACK_NODE_RANK, ACCELSTACK_HEAD_ADDR); set ACCELSTACK_ORCHESTRATOR or those variables"
  fi
fi
case "$orchestrator" in
  trainjob)
    # Kubeflow Trainer's torch plugin sets these on the trainer container; the node rank is
    # the Job completion index, the master is node 0's stable DNS name
    nnodes="${PET_NNODES:?TrainJob: PET_NNODES is not set}"
    node_rank="${PET_NODE_RANK:?TrainJob: PET_NODE_RANK is not set}"
    head_addr="${PET_MASTER_ADDR:?TrainJob: PET_MASTER_ADDR is not set}"
    rdzv_port="${PET_MASTER_PORT:?TrainJob: PET_MASTER_PORT is not set}"
    rdzv_id="${ACCELSTACK_RDZV_ID:-llama3-70b-p5}"
    ;;
  pytorchjob)
    # The training operator sets PET_NNODES/PET_NODE_RANK (v1.7+); older ones WORLD_SIZE/RANK per pod.
    nnodes="${PET_NNODES:-${WORLD_SIZE:?PyTorchJob: neither PET_NNODES nor WORLD_SIZE is set}}"
    node_rank="${PET_NODE_RANK:-${RANK:?PyTorchJob: neither PET_NODE_RANK nor RANK is set}}"
    head_addr="${MASTER_ADDR:?PyTorchJob: MASTER_ADDR is not set}"
    rdzv_port="${MASTER_PORT:?PyTorchJob: MASTER_PORT is not set}"
    rdzv_id="${ACCELSTACK_RDZV_ID:-llama3-70b-p5}"
    ;;
  slurm)
    nnodes="${SLURM_NNODES:?Slurm: SLURM_NNODES is not set}"
    node_rank="${SLURM_NODEID:?Slurm: SLURM_NODEID is not set}"
    command -v scontrol >/dev/null || die "Slurm: scontrol is not on PATH"
    # read every line: `| head -n 1` would SIGPIPE scontrol and fail under pipefail
    mapfile -t slurm_hosts < <(scontrol show hostnames "${SLURM_JOB_NODELIST:?Slurm: SLURM_JOB_NODELIST is not set}")
    head_addr="${slurm_hosts[0]:-}"
    rdzv_port="${ACCELSTACK_RDZV_PORT:-29500}"
    rdzv_id="${ACCELSTACK_RDZV_ID:-${SLURM_JOB_ID:-llama3-70b-p5}}"
    ;;
  standalone)
    nnodes="${ACCELSTACK_NNODES:-16}"
    if [[ "$nnodes" == 1 ]]; then
      node_rank="${ACCELSTACK_NODE_RANK:-0}"
      head_addr="${ACCELSTACK_HEAD_ADDR:-127.0.0.1}"
    else
      node_rank="${ACCELSTACK_NODE_RANK:?standalone: set ACCELSTACK_NODE_RANK (0 on the head node)}"
      head_addr="${ACCELSTACK_HEAD_ADDR:?standalone: set ACCELSTACK_HEAD_ADDR (the head node address)}"
    fi
    rdzv_port="${ACCELSTACK_RDZV_PORT:-29500}"
    rdzv_id="${ACCELSTACK_RDZV_ID:-llama3-70b-p5}"
    ;;
  *)
    die "ACCELSTACK_ORCHESTRATOR='$orchestrator' is not one of auto, trainjob, pytorchjob, slurm, standalone"
    ;;
esac
[[ "$nnodes" =~ ^[1-9][0-9]*$ ]] || die "node count '$nnodes' is not a positive whole number"
[[ "$node_rank" =~ ^[0-9]+$ ]] || die "node rank '$node_rank' is not a whole number"
(( node_rank < nnodes )) || die "node rank $node_rank is not below the node count $nnodes"
[[ -n "$head_addr" ]] || die "rendezvous host is empty"
[[ "$rdzv_port" =~ ^[0-9]+$ ]] || die "rendezvous port '$rdzv_port' is not a number"
if [[ "$nnodes" != 16 ]]; then
  echo "accelstack: note: running on $nnodes node(s); pool h100 has 16" >&2
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
  --nproc_per_node=8
  --nnodes="$nnodes"
  --node_rank="$node_rank"
  --rdzv_backend=c10d
  --rdzv_endpoint="$head_addr:$rdzv_port"
  --rdzv_conf="is_host=$is_host,read_timeout=$rdzv_timeout,join_timeout=$rdzv_timeout"
)
entrypoint=/workspace/train_llama3.py
workload_args=(
  --model
  meta-llama/Meta-Llama-3-70B
  --tp
  8
  --pp
  4
)
echo "accelstack: $orchestrator node $node_rank of $nnodes, rendezvous $head_addr:$rdzv_port, 8 processes per node" >&2

# ---- training ------------------------------------------------------------------------------
echo "accelstack: training" >&2
exec "$torchrun_bin" "${torchrun_args[@]}" --rdzv_id="$rdzv_id" "$entrypoint" "${workload_args[@]}"
