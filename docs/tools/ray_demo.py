"""The runtime collector inside a real Ray cluster of two nodes on this machine.

Prints the runtime section and its DNA projection.
"""

import json
import logging

import ray
from ray.cluster_utils import Cluster

import expdna
from expdna.manifest.dna import projections

cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
cluster.add_node(num_cpus=2, resources={"accel": 1})
cluster.wait_for_nodes()
ray.init(address=cluster.address, logging_level=logging.ERROR, log_to_driver=False)
try:
    manifest = expdna.collect(["python", "train.py"], collectors=["runtime"])
    print(json.dumps({"runtime": manifest.to_dict()["runtime"]}, indent=2))
    print(json.dumps({"in the DNA": projections(manifest)["runtime"]}, indent=2))
finally:
    ray.shutdown()
    cluster.shutdown()
