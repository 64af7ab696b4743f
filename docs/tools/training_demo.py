"""Teach the training collector a launcher's own argument names."""

import json

import expdna
from expdna.collectors.training import register_training_field

register_training_field("parallel_topology.sequence", "--sp", "--sequence-parallel-size")
register_training_field("seeds.seed", "--rng-seed", first=True)

manifest = expdna.collect(
    ["python", "train.py", "--sp", "2", "--tp", "4", "--rng-seed", "9", "--seed", "1"],
    collectors=["training"],
)
print(json.dumps(manifest.to_dict()["training"], indent=2))
