#!/bin/sh
# Regenerates every real-output block of the docs, in English and Chinese, with one command:
#   sh docs/tools/regen.sh
# It runs the three transcripts (the guide's, the integration pages', the frameworks') and
# fills each page's <!-- out:NAME --> / <!-- file:PATH --> blocks from the transcript that holds
# its blocks (names are per transcript: the walkthrough has a diff-lr of its own). A few
# minutes on 2 cores; EXPDNA_DOCS_BENCH=1 also reruns the benchmarks (see README.md here).
# tests/integration/test_docs_outputs.py fails when a documented output no longer matches.
set -e
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
PY="${PYTHON:-$REPO/.venv/bin/python}"
OUT="${TMPDIR:-/tmp}/expdna-docs"
mkdir -p "$OUT"
sh docs/tools/transcript.sh > "$OUT/guide.txt"
sh docs/tools/integration_transcript.sh > "$OUT/integration.txt"
sh docs/tools/frameworks_transcript.sh > "$OUT/frameworks.txt"
for name in integration frameworks guide; do
  # shellcheck disable=SC2046
  "$PY" docs/tools/fill_docs.py "$OUT/$name.txt" $("$PY" docs/tools/pages.py "$name")
done
