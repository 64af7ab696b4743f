"""Recompute a DNA test vector's section digests and DNA from its projections."""

import json
import sys

import rfc8785
from blake3 import blake3

with open(sys.argv[1], encoding="utf-8") as fh:
    vector = json.load(fh)
sections = {
    name: blake3(rfc8785.dumps(projection)).hexdigest()
    for name, projection in vector["projections"].items()
}
dna = blake3(rfc8785.dumps({"version": vector["dna_version"], "sections": sections})).hexdigest()
for name, digest in sections.items():
    print(f"{name:<12} {digest[:12]}  {'ok' if digest == vector['sections'][name] else 'MISMATCH'}")
print(f"dna          {dna}  {'ok' if dna == vector['dna'] else 'MISMATCH'}")
