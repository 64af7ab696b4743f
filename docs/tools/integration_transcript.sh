#!/bin/sh
# Replays the commands of the integration pages (docs/{en,zh}/integrations/walkthrough.md, hook.md,
# ray.md, concepts/store.md, commands/stability.md, run-status.md) in a fresh demo and prints a
# transcript for fill_docs.py, as transcript.sh does for the guide. DEMO (default
# /tmp/expdna-demo, the path the pages show) is deleted and rebuilt. Needs the `test` extra
# (torch on CPU, Ray) and, for the PostgreSQL blocks, a server at 127.0.0.1:5432 with trust
# auth (skipped without `psql`). The two-node Ray cluster runs only with EXPDNA_DOCS_RAY=1.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
DEMO="${EXPDNA_DOCS_INTEGRATION_DEMO:-/tmp/expdna-demo}"
export PATH="$REPO/.venv/bin:$PATH"
block() { printf '### %s\n' "$1"; }
run() { printf '$ %s\n' "$1"; sh -c "$1" 2>&1; printf '[exit %s]\n' "$?"; }
export GIT_AUTHOR_DATE=2026-11-29T10:00:00Z GIT_COMMITTER_DATE=2026-11-29T10:00:00Z GIT_AUTHOR_NAME='Li Wei' GIT_AUTHOR_EMAIL=liwei@example.com GIT_COMMITTER_NAME='Li Wei' GIT_COMMITTER_EMAIL=liwei@example.com
rm -rf "$DEMO" && mkdir -p "$DEMO/tiny" && cd "$DEMO/tiny" || exit 1
cp "$REPO/examples/train_tiny.py" .
printf 'runs/\n' > .gitignore
git init -q -b main && git add . && git commit -qm "tiny MLP example"
export EXPDNA_STORE="$DEMO/store" EXPDNA_CACHE_DIR="$DEMO/cache" PYTHONWARNINGS=ignore
unset EXPDNA_INDEX_URL
# The scripts the pages show (<!-- code:NAME --> blocks) are the scripts that run, with
# the demo's path in place of the one the pages show (the docs test runs elsewhere).
python - "$REPO" "$DEMO" <<'PY'
import re, sys
from pathlib import Path
for page in ("integrations/ray.md", "commands/stability.md"):
    text = Path(sys.argv[1], "docs/en", page).read_text(encoding="utf-8")
    for name, body in re.findall(r"<!-- code:([\w.]+) -->\n```\w*\n(.*?)\n```", text, re.S):
        body = body.replace("/tmp/expdna-demo", sys.argv[2])
        Path(name).write_text(body + "\n", encoding="utf-8")
PY
short() { python -c "import glob, json; print(json.load(open(glob.glob('$1/manifest_*.json')[0]))['dna']['value'][:12])"; }

# ---- walkthrough -------------------------------------------------------------------------
block setup-git;  run "git log --oneline && git status --short"
block run-a;      run "python train_tiny.py --output-dir runs/a"
block run-b;      run "python train_tiny.py --output-dir runs/b"
block run-c;      run "python train_tiny.py --output-dir runs/c --lr 0.01"
block ls-a;       run "ls runs/a"
block runs;       run "expdna runs"
DNA=$(short runs/a)
block twins;      run "expdna twins $DNA"
block which;      run "expdna which runs/a/tiny_mlp_${DNA}_final.pt"
cp "runs/a/tiny_mlp_${DNA}_final.pt" "$DEMO/best.pt"
block which-copy; run "expdna which $DEMO/best.pt"
block stability;  run "expdna stability $DNA --metric val_loss"
block diff-lr;    run "expdna diff runs/a/manifest_*.json runs/c/manifest_*.json"
block run-s1;     run "python train_tiny.py --output-dir runs/s1 --seed 1"
block run-s2;     run "python train_tiny.py --output-dir runs/s2 --seed 2"
block stability-seeds; run "expdna stability $DNA --metric val_loss --ignore config.resolved_args.seed --ignore training.seeds.seed"
block stability-json;  run "expdna stability $DNA --ignore config.resolved_args.seed --ignore training.seeds.seed --json"
RUN_C=$(python -c "import glob, json; print(json.load(open(glob.glob('runs/c/manifest_*.json')[0]))['run_id'])")
block show;       run "expdna show $RUN_C"
block find;       run "expdna find --where config.resolved_args.lr=0.01"
block stability-api; run "python stability_api.py"
block runtime-local; run "python -c \"import json, glob; m = json.load(open(glob.glob('runs/a/manifest_*.json')[0])); print(json.dumps(m['runtime']))\""
block warning;    run "EXPDNA_INDEX_URL=postgresql+psycopg://nobody@127.0.0.1:1/nowhere python train_tiny.py --output-dir runs/w --epochs 3"

# ---- the store ---------------------------------------------------------------------------
block fsck;       run "expdna fsck"
block gc;         run "expdna gc --dry-run"
block db-current; run "expdna db current"
block store-json; run "expdna fsck --json"; run "expdna db current --json"
block store-missing; run "expdna --store /nonexistent/deep/store runs"
block store-where;  run "expdna find --where config.resolved_args.lr=1e-2 --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'"; run "expdna find --where hardware.gpu.vbios_version=96.00.5A.00.01"
# Bad files in a scan, then a lost index rebuilt: a store of their own, three runs, a pin.
(
  mkdir -p "$DEMO/scan" && cd "$DEMO/scan" || exit 1
  export EXPDNA_STORE="$DEMO/scan/store"
  python "$REPO/docs/tools/bad_runs.py" runs "$DEMO"/tiny/runs/a/manifest_*.json "$DEMO"/tiny/runs/b/manifest_*.json "$DEMO"/tiny/runs/c/manifest_*.json
  block store-scan-bad; run "expdna record --scan runs"; run "expdna record --quiet --scan runs"
  cp "$DEMO/best.pt" best.pth && expdna pin best.pth --run "$(ls runs/manifest_*_????.json | head -1 | sed 's/.*manifest_\(.*\)\.json/\1/')" > /dev/null
  block store-fsck;    run "expdna fsck"
  block store-reindex; run "rm $DEMO/scan/store/index.sqlite"; run "expdna fsck"; run "expdna gc"; run "expdna reindex"; run "expdna which best.pth"; run "expdna fsck"
)
if command -v psql >/dev/null 2>&1; then
  # EXPDNA_DOCS_PG_DB: the docs test uses a database of its own (the pages show expdna_guide).
  PGDB="${EXPDNA_DOCS_PG_DB:-expdna_guide}"
  PG=postgresql+psycopg://postgres@127.0.0.1:5432/$PGDB
  psql -q -h 127.0.0.1 -U postgres -c "DROP DATABASE IF EXISTS $PGDB" -c "CREATE DATABASE $PGDB" >/dev/null 2>&1
  block pg-runs;    run "expdna --store $DEMO/shared-objects --index-url $PG runs"
  block pg-upgrade; run "expdna --store $DEMO/shared-objects --index-url $PG db upgrade"
  block pg-record;  run "expdna --store $DEMO/shared-objects --index-url $PG record --scan runs"
  block pg-stability; run "EXPDNA_INDEX_URL=$PG expdna --store $DEMO/shared-objects stability $DNA --metric val_loss"
fi

# ---- one setup across seeds (commands/stability.md): three seeds, a store of their own -----
(
  export EXPDNA_STORE="$DEMO/seeds/store"
  for s in 1 2 3; do python train_tiny.py --output-dir "$DEMO/seeds/seed$s" --seed $s > /dev/null; done
  SEED1=$(short "$DEMO/seeds/seed1")
  block seeds-twins;     run "expdna twins $SEED1"
  block seeds-family;    run "expdna twins --across-seeds $SEED1"
  block seeds-stability; run "expdna stability $SEED1 --metric val_loss --across-seeds"
  block seeds-ignore;    run "expdna stability $SEED1 --metric val_loss --ignore config.resolved_args.seed"
)

# ---- how runs end (run-status.md): a checkout and a store of its own ----------------------
(
  mkdir -p "$DEMO/status/proj" && cd "$DEMO/status/proj" || exit 1
  cp "$REPO/docs/tools/run_status/train.py" "$REPO/docs/tools/run_status/legacy.py" \
    "$REPO/docs/tools/run_status/sleepy.py" "$REPO/docs/tools/run_status/signal_after.sh" .
  printf 'out/\nsignal_after.sh\n' > .gitignore
  git init -q -b main && git add . && git commit -qm "three scripts"
  export EXPDNA_STORE="$DEMO/status/store"
  # A second between runs: `expdna runs` lists them by the second they started, then by
  # run id, so runs of one second would come in an order of chance.
  block status-ok;      run "python train.py --lr 0.1"; sleep 1.1
  block status-crash;   run "CRASH=1 python train.py --lr 0.1"; sleep 1.1
  block status-json;    python -c "import glob, json; ds = [json.load(open(p)) for p in glob.glob('out/manifest_*.json')]; print(json.dumps(next(d for d in ds if d['status']['state'] == 'failed')['status'], indent=2))"
  block status-legacy;  run "expdna run --record --output-dir out -- python legacy.py --lr 0.1"; sleep 1.1
  block status-term;    run "sh signal_after.sh TERM expdna run --record --output-dir out -- python sleepy.py"; sleep 1.1
  block status-kill;    run "sh signal_after.sh KILL python sleepy.py"
  block status-runs;    run "expdna runs"; run "expdna runs --where status.state=failed"
  sleep 1.1
  block status-unfinished; run "EXPDNA_UNFINISHED_AFTER=1 expdna runs --where status.state=unfinished"; run "EXPDNA_UNFINISHED_AFTER=1 expdna fsck"
  DNA=$(python -c "import glob, json; print(next(d for d in (json.load(open(p)) for p in glob.glob('out/manifest_*.json')) if d['status']['state'] == 'completed')['dna']['value'][:12])")
  block status-stability; run "expdna stability $DNA"
)

# ---- Ray (a two-node cluster on this machine: slow, so only with EXPDNA_DOCS_RAY=1) ------
if [ "${EXPDNA_DOCS_RAY:-0}" = 1 ]; then
  block ray;        run "python ray_two_nodes.py"
fi
