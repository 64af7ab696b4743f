#!/bin/sh
# Regenerates every real-output block of the docs, in English and Chinese, with one command:
#   sh docs/tools/regen.sh
# It runs every transcript (docs/tools/pages.py --list: the guide's, the integration
# pages', the frameworks', the store pages', the replayed ones') side by side, each in a demo directory of its
# own at the fixed path the pages show, then fills each page's <!-- out:NAME --> /
# <!-- file:PATH --> blocks from the transcript that holds its blocks (names are per
# transcript: the walkthrough has a diff-lr of its own; pages.py says which page is whose).
# About two minutes on 2 idle cores, four on a loaded machine.
#   EXPDNA_DOCS_BENCH=1   also reruns the benchmarks (their blocks say "recorded=DATE")
#   EXPDNA_DOCS_RAY=1     also reruns the two-node Ray cluster (block ray, "recorded=DATE")
# Without them those blocks keep their recorded output. A transcript that fails stops the
# script before any page is touched. tests/integration/test_docs_outputs.py runs the same
# transcripts and fails when any out: block no longer matches, or a real-output block has
# no marker.
set -e
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
PY="${PYTHON:-$REPO/.venv/bin/python}"
# The venv's commands (expdna, python, torchrun) first, whatever the caller's PATH holds.
PATH="$(dirname "$PY"):$PATH"
export PATH
# The transcripts see a clean environment: what the pages show (selected variables, the
# store, the demo paths) must not depend on the shell regen.sh was started from.
clean() {
  env -i HOME="$HOME" PATH="$PATH" LANG=C.UTF-8 TMPDIR="${TMPDIR:-/tmp}" \
    EXPDNA_DOCS_BENCH="${EXPDNA_DOCS_BENCH:-0}" EXPDNA_DOCS_RAY="${EXPDNA_DOCS_RAY:-0}" "$@"
}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/expdna-docs.XXXXXX")
# Every transcript (pages.py --list: name, script, demo variable, demo path), side by side.
LIST=$("$PY" docs/tools/pages.py --list)
pids=""
while read -r name script var demo; do
  clean "$var=$demo" sh "docs/tools/$script" > "$OUT/$name.txt" 2> "$OUT/$name.err" &
  pids="$pids $!"
done <<EOF
$LIST
EOF
failed=0
for pid in $pids; do wait "$pid" || failed=1; done
[ "$failed" = 0 ] || { echo "a transcript failed; stderr in $OUT/*.err" >&2; exit 1; }
# A broken set-up (no venv command, a missing extra) must not end up on the pages.
if grep -n ': [0-9][0-9]*: .*: not found\|^ModuleNotFoundError' "$OUT"/*.txt >&2; then
  echo "a documented command could not run (above); no page was changed" >&2
  exit 1
fi
echo "$LIST" | while read -r name _; do
  # shellcheck disable=SC2046
  "$PY" docs/tools/fill_docs.py "$OUT/$name.txt" $("$PY" docs/tools/pages.py "$name")
done
echo "transcripts kept in $OUT" >&2
