# Sourced by transcript.sh: a clean, predictable environment for the docs' real runs.
# Needs REPO (the checkout) and DEMO (the demo directory) set by the caller.
export PATH="$REPO/.venv/bin:/usr/local/bin:/usr/bin:/bin"
export NCCL_DEBUG=INFO OMP_NUM_THREADS=8 CUDA_VISIBLE_DEVICES=0,1
export HF_TOKEN=hf_aQ7rT2mX9pL4vK8nB3cZ6wY1dF5gH0jS2e
# A digest cache and a store of the demo's own, so every refresh starts from nothing.
export EXPDNA_CACHE_DIR="$DEMO/cache" EXPDNA_STORE="$DEMO/store"
unset PYTHONPATH VIRTUAL_ENV
