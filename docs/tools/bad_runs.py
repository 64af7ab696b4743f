"""A directory of manifests for `record --scan` (concepts/store.md): three good ones, an
edited one, one holding a NUL character, and a JSON file that is not a manifest.

python bad_runs.py RUNS_DIR MANIFEST [MANIFEST ...]
"""

import json
import shutil
import sys
from pathlib import Path

from expdna.manifest.dna import compute_dna
from expdna.manifest.io import manifest_from_dict, write_manifest

runs = Path(sys.argv[1])
runs.mkdir(parents=True, exist_ok=True)
for source in sys.argv[2:]:
    shutil.copy(source, runs / Path(source).name)
(runs / "tokenizer.json").write_text('{"vocab_size": 32000}\n', encoding="utf-8")
doc = json.loads(Path(sys.argv[2]).read_text(encoding="utf-8"))
# An edit after the file was written: its DNA no longer matches its content.
edited = json.loads(json.dumps(doc))
edited["environment"]["python_version"] = "3.0.0"
(runs / "manifest_edited.json").write_text(json.dumps(edited, indent=2), encoding="utf-8")
# A NUL character in a config string, its DNA computed over it: a valid manifest no index holds.
doc["run_id"] = doc["run_id"][:-4] + "nul0"
doc["config"]["resolved_args"]["name"] = "a\x00b"
doc.pop("dna", None)
manifest = manifest_from_dict(doc)
manifest.dna = compute_dna(manifest)
write_manifest(manifest, runs / "manifest_nul.json")
