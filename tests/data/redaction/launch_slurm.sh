#!/bin/bash
#SBATCH --job-name=vit-b16-in1k
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
#SBATCH --cpus-per-task=12
#SBATCH --time=72:00:00
#SBATCH --output=logs/%x-%j.out
set -euo pipefail
export NCCL_DEBUG=WARN
export NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_2,mlx5_3
export NCCL_SOCKET_IFNAME=ens
export TORCH_NCCL_ASYNC_ERROR_HANDLING=1
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
export CUBLAS_WORKSPACE_CONFIG=:4096:8
export HF_HUB_ENABLE_HF_TRANSFER=1
export HF_DATASETS_CACHE=/scratch/hf_cache/datasets
export WANDB_RUN_GROUP=vit-b16-in1k-300ep-augreg
export MASTER_PORT=29500
export TRITON_CACHE_DIR=/tmp/triton_cache_${SLURM_JOB_ID}
srun torchrun \
  --nnodes=$SLURM_NNODES --nproc_per_node=8 \
  --rdzv_backend=c10d --rdzv_endpoint=$MASTER_ADDR:$MASTER_PORT --rdzv_id=$SLURM_JOB_ID \
  train.py --config configs/vit_base_patch16_224.yaml \
  --model vit_base_patch16_224.augreg2_in21k_ft_in1k --checkpoint-hash 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 \
  --data-path /datasets/imagenet/ILSVRC2012 --output-dir /checkpoint/vit/b16_in1k_300ep \
  --run-id 2f1e4d5c-8b7a-4c3d-9e2f-1a0b9c8d7e6f --seed 42 --amp-dtype bfloat16
