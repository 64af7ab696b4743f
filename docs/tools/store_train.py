"""A training run against a store (store-internals.md): start, a checkpoint pinned, finish.

Run with EXPDNA_STORE set (or --store DIR): the run, the pin and the final metrics go to the
store as files (objects and log entries); the index learns of them when it is next opened.
"""

import argparse
from pathlib import Path

import expdna

parser = argparse.ArgumentParser()
parser.add_argument("--store", default=None)
args = parser.parse_args()
run = expdna.start(
    args, output_dir="out", store=args.store, dna_ignore=["config.resolved_args.store"]
)
Path("out").mkdir(exist_ok=True)
Path("out/best.pt").write_bytes(b"the weights of the best epoch\n")
run.pin("out/best.pt", name="best.pt")
run.finish({"loss": 0.25})
