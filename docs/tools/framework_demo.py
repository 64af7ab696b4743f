"""A training script's view: torch is imported and set up before expdna collects.

Writes manifests/framework.json and prints what the framework collector saw, the library
versions the gpu collector took from the loaded torch, and what of it enters the DNA.
"""

import json
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")  # CPU wheel, no numpy

import torch  # noqa: E402

import expdna  # noqa: E402
from expdna.manifest.dna import projections  # noqa: E402

torch.use_deterministic_algorithms(True)
torch.manual_seed(1234)

path, manifest = expdna.generate(
    ["python", "train.py", "--lr", "3e-4"], output="manifests/framework.json"
)
doc = manifest.to_dict()
print(json.dumps({"environment.framework": doc["environment"]["framework"]}, indent=2))
versions = {k: v for k, v in doc["hardware"].items() if k.startswith(("cuda", "cudnn", "nccl"))}
print(json.dumps({"hardware (library versions)": versions}, indent=2))
print(json.dumps({"in the DNA": projections(manifest)["environment"]["framework"]}, indent=2))
