#!/bin/sh
# Replays the commands of "Where you train" in docs/{en,zh}/integration.md (section 7) in a
# fresh project holding the examples, and prints a transcript for fill_docs.py:
#
#   sh docs/tools/frameworks_transcript.sh > /tmp/frameworks.txt
#   .venv/bin/python docs/tools/fill_docs.py /tmp/frameworks.txt \
#       docs/en/integration.md docs/zh/integration.md
#
# Needs the integrations extra (mlflow-skinny, wandb, lightning, transformers). DEMO
# ($EXPDNA_DOCS_FRAMEWORKS_DEMO, default $TMPDIR/demo-frameworks) is deleted and rebuilt. About two minutes on 2 cores.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
DEMO="${EXPDNA_DOCS_FRAMEWORKS_DEMO:-${TMPDIR:-/tmp}/demo-frameworks}"
export PATH="$REPO/.venv/bin:$PATH" PYTHONWARNINGS=ignore OMP_NUM_THREADS=1
export WANDB_MODE=offline WANDB_SILENT=true HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
unset EXPDNA_STORE EXPDNA_INDEX_URL
rm -rf "$DEMO" && mkdir -p "$DEMO/project" && cd "$DEMO/project" || exit 1
for name in torchrun_tiny mlflow_tiny wandb_tiny lightning_tiny hf_trainer_tiny; do
    cp "$REPO/examples/$name.py" .
done
git init -q -b main && git add . && git -c user.name=demo -c user.email=demo@example.com \
    commit -q -m "Tiny training examples"
block() { printf '### %s\n' "$1"; }
# Launcher and framework banners (torchrun's OMP_NUM_THREADS notice, Lightning's tips) are
# left out; everything else is as printed.
NOISE='^W[0-9]* .*torch/distributed/run.py\|GPU available\|TPU available\|litlogger\|LeafSpec\|Writing model shards\| INFO \|^\[INFO\]'
run() {
    printf '$ %s\n' "$1"; sh -c "$1" > "$DEMO/out.txt" 2>&1; code=$?
    grep -v "$NOISE" "$DEMO/out.txt"; printf '[exit %s]\n' "$code"
}
SHOW='python -c "import json, sys; d = json.load(open(sys.argv[1])); print(json.dumps({k: d[k] for k in sys.argv[2:]}, indent=2))"'

block torchrun;        run "torchrun --standalone --nproc-per-node 2 torchrun_tiny.py --output-dir runs/ddp"
block torchrun-files;   run "ls runs/ddp"
block torchrun-runtime; run "$SHOW runs/ddp/manifest_*.json runtime"
P=$(python -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
TWO="torchrun --nnodes 2 --nproc-per-node 1 --master-addr 127.0.0.1 --master-port $P"
block torchrun-2nodes;  run "$TWO --node-rank 1 torchrun_tiny.py --output-dir runs/two > node1.log 2>&1 & $TWO --node-rank 0 torchrun_tiny.py --output-dir runs/two; wait; cat node1.log | grep rank"
block torchrun-2nodes-runtime; run "python -c \"import json, glob; d = json.load(open(glob.glob('runs/two/manifest_*.json')[0])); print(json.dumps([{k: n[k] for k in ('role', 'node_rank', 'resources', 'fingerprint')} for n in d['runtime']['nodes']], indent=2))\""

block mlflow;           run "python mlflow_tiny.py --output-dir runs/mlflow --tracking-uri sqlite:///mlflow.db"
block mlflow-tracking;  run "$SHOW runs/mlflow/manifest_*.json tracking"
block mlflow-record;     run "expdna --store store record runs/mlflow/manifest_*.json"
block mlflow-show;      run "expdna --store store show \$(ls runs/mlflow | sed 's/manifest_\\(.*\\).json/\\1/')"

block wandb;            run "python wandb_tiny.py --output-dir runs/wandb"

block lightning;        run "python lightning_tiny.py --output-dir runs/pl --store store"
block lightning-training; run "$SHOW runs/pl/manifest_*.json training metrics"
block lightning-which;  run "expdna --store store which runs/pl/checkpoints/*.ckpt"

block hf;               run "python hf_trainer_tiny.py --output-dir runs/hf --store store 2>&1 | tail -1"
block hf-training;      run "$SHOW runs/hf/manifest_*.json training"
block hf-which;         run "expdna --store store which runs/hf/checkpoint-4/model.safetensors"

# The benchmark only with EXPDNA_DOCS_BENCH=1 (its block keeps its recorded figures).
if [ "${EXPDNA_DOCS_BENCH:-0}" = 1 ]; then
  block bench; (cd "$REPO" && run "python benchmarks/integrations_bench.py --repeat 11")
fi
