"""Seal a manifest with a DNA of version 2, as an expdna before DNA version 3 wrote it.

    python docs/tools/dna_v2.py MANIFEST.json OUT.json

check-and-rerun.md's story of a manifest from an older expdna: ``expdna generate`` writes
version 3 only, so the transcript takes a real run's manifest and replaces its ``dna`` block
with the one version 2 gives (command left out), computed by the DNA specification's
reference code (reference_dna.py, without expdna). ``expdna check`` then verifies it in
version 2, as it verifies any older manifest.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reference_dna import dna

doc = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
value, sections = dna(doc, 2)
doc["dna"] = {"version": 2, "value": value, "sections": sections}
Path(sys.argv[2]).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
