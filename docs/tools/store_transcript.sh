#!/bin/sh
# Replays the commands of the pages about a store's inside and its edges
# (docs/{en,zh}/store-internals.md, team-setup.md, explain.md) in a fresh demo, and prints
# a transcript for fill_docs.py as transcript.sh does for the guide. DEMO ($EXPDNA_DOCS_STORE_DEMO, default
# /tmp/expdna-demo-store, the path the pages show) is deleted and rebuilt. Needs PostgreSQL
# at 127.0.0.1:5432 with trust auth (team-setup.md) and root's `unshare -m` for a
# read-only mount (store-internals.md). The benchmarks run only with EXPDNA_DOCS_BENCH=1.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
TOOLS="$REPO/docs/tools"
DEMO="${EXPDNA_DOCS_STORE_DEMO:-/tmp/expdna-demo-store}"
export PATH="$REPO/.venv/bin:/usr/local/bin:/usr/bin:/bin" PYTHONWARNINGS=ignore LANG=C.UTF-8
export GIT_AUTHOR_DATE=2026-11-30T10:00:00Z GIT_COMMITTER_DATE=2026-11-30T10:00:00Z GIT_AUTHOR_NAME='Li Wei' GIT_AUTHOR_EMAIL=liwei@example.com GIT_COMMITTER_NAME='Li Wei' GIT_COMMITTER_EMAIL=liwei@example.com
unset EXPDNA_STORE EXPDNA_INDEX_URL PYTHONPATH VIRTUAL_ENV
export EXPDNA_CACHE_DIR="$DEMO/cache"
rm -rf "$DEMO" && mkdir -p "$DEMO" || exit 1
block() { printf '### %s\n' "$1"; }
run() { printf '$ %s\n' "$1"; sh -c "$1" 2>&1; printf '[exit %s]\n' "$?"; }
free_port() { python -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"; }

# ---- store-internals.md: a training run writes files, the index catches up ---------------
mkdir -p "$DEMO/exp" && cd "$DEMO/exp" || exit 1
cp "$TOOLS/store_train.py" train.py
git init -q -b main && printf 'out/\nstore/\nst/\n*.json\n' > .gitignore && git add . && git commit -qm "a training script"
export EXPDNA_STORE="$DEMO/exp/store"
# A store made first (through its index, once); the training runs then write only files.
expdna generate --record -o first.json -- true > /dev/null 2>&1
block si-pending;  run "python train.py && ls store/objects/log/pending"
block si-which;    run "expdna which best.pt"; run "ls store/objects/log/pending | wc -l"
block si-record;   run "expdna record \$(ls -t out/manifest_*.json | head -1)"
block si-fsck;     run "expdna fsck"
block si-missing;  run "rm store/index.sqlite && expdna runs"; run "expdna db current"; run "expdna reindex"
FIFO=$(python -c "print('1' * 62)")
mkdir -p store/objects/aa
block si-fifo;     run "mkfifo store/objects/aa/$FIFO && expdna fsck"
rm -f "store/objects/aa/$FIFO"
sqlite3 store/index.sqlite "UPDATE alembic_version SET version_num = 'f0f0f0f0f0f0'"
block si-newer;    run "expdna reindex"; run "expdna reindex --force"
# A read-only mount of a store (a mount namespace of its own: needs root, or unshare -r).
expdna --store st generate --record -o first.json -- true > /dev/null 2>&1
block si-readonly; run "unshare -m sh -c 'mount --bind st st && mount -o remount,bind,ro st && expdna --store st generate --record -o g.json -- true'"
PORT=$(free_port)
python -c "import socket, time; s = socket.socket(); s.bind(('127.0.0.1', $PORT)); s.listen(); time.sleep(60)" &
BUSY=$!
sleep 1
block si-ui-busy;  run "expdna ui --port $PORT"
kill "$BUSY"
unset EXPDNA_STORE

# ---- team-setup.md: one PostgreSQL index, one object directory, mounted anywhere ----------
# EXPDNA_DOCS_PG_DB: the docs test uses databases of its own (the page shows expdna_guide_team).
TEAMDB="${EXPDNA_DOCS_PG_DB:-expdna_guide}_team"
psql -q -h 127.0.0.1 -U postgres -c "DROP DATABASE IF EXISTS $TEAMDB" -c "CREATE DATABASE $TEAMDB" > /dev/null 2>&1
mkdir -p "$DEMO/team" && cd "$DEMO/team" || exit 1
cp "$TOOLS/store_train.py" train.py
git init -q -b main && printf 'out/\n' > .gitignore && git add . && git commit -qm "a training script"
export EXPDNA_INDEX_URL="postgresql+psycopg://postgres@127.0.0.1:5432/$TEAMDB"
block team-upgrade; run "expdna --store $DEMO/nfs/expdna db upgrade"
for i in 1 2 3; do python train.py --store "$DEMO/nfs/expdna" > /dev/null 2>&1; sleep 1.1; done
M=$(ls out/manifest_*.json | head -1)
RUN=$(python -c "import json, sys; print(json.load(open(sys.argv[1]))['run_id'])" "$M")
block team-record-own; run "expdna --store $DEMO/my-store record $M"
block team-show-own;   run "expdna --store $DEMO/my-store show --inline $RUN"
# the team's directory at another path (another machine's mount point)
mkdir -p "$DEMO/mnt" && ln -s "$DEMO/nfs/expdna" "$DEMO/mnt/expdna"
block team-fsck-mount; run "expdna --store $DEMO/mnt/expdna fsck"
unset EXPDNA_INDEX_URL

# ---- explain.md: the worked example (tests/fleets.py's 40 runs on six nodes) ---------------
mkdir -p "$DEMO/fleet" && cd "$DEMO/fleet" || exit 1
python "$TOOLS/explain_fleet.py" store
export EXPDNA_STORE="$DEMO/fleet/store"
block explain-vbios; run "expdna explain --same-setup 20261201_100000_1c8e2fb_000000 --status failed"
unset EXPDNA_STORE

# ---- explain.md: twelve runs a hooked torch script recorded (tests/package_fleet.py) -----
mkdir -p "$DEMO/pkgfleet" && cd "$DEMO/pkgfleet" || exit 1
export EXPDNA_STORE="$DEMO/pkgfleet/store"
python "$TOOLS/explain_package_fleet.py" "$DEMO/pkgfleet" || exit 1
RUN=$(expdna runs --json --limit 1 | python -c "import json, sys; print(json.load(sys.stdin)[0]['run_id'])")
block explain-package; run "expdna explain --status failed --same-setup $RUN"
unset EXPDNA_STORE

if [ "${EXPDNA_DOCS_BENCH:-0}" = 1 ]; then
  cd "$REPO" || exit 1
  block hook-bench; run "python benchmarks/hook_bench.py --store-only --repeat 3"
  block cli-bench;  run "python benchmarks/cli_bench.py --repeat 5"
  block store-bench-pg; run "python benchmarks/store_bench.py --postgres --dir $DEMO/bench-store"
fi
