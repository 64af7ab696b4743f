#!/bin/sh
# sh signal_after.sh SIGNAL CMD ...: start CMD, send it SIGNAL once it has printed its
# "started" line (the run is written by then; at most a minute's wait), wait for it; CMD's
# output as it came, and its exit status.
sig=$1; shift
log=$(mktemp)
"$@" > "$log" 2>&1 &
pid=$!
tries=0
until grep -q '^started' "$log" || [ "$tries" -ge 600 ]; do sleep 0.1; tries=$((tries + 1)); done
kill -"$sig" "$pid"
wait "$pid" 2>/dev/null; code=$?  # no "Killed" notice: the exit code says it
cat "$log"; rm -f "$log"
exit "$code"
