"""object-storage.md's manifests: N synthetic runs (tests/factories.py: run ids
20260805_143025_1c8e2fb_000000 on, every two runs one DNA), written as files to record.

    python docs/tools/s3_runs.py DIR N      # DIR/manifest_00000.json ...
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.factories import manifest_of, synthetic_doc

from expdna.manifest.io import write_manifest

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
for i in range(int(sys.argv[2])):
    write_manifest(manifest_of(synthetic_doc(i, setup=i // 2)), out / f"manifest_{i:05d}.json")
