"""The runner's five statuses, with collectors written for the purpose.

A registry of its own (the built-in ``command`` collector plus four small ones) is run
by ``expdna.collect`` with a 0.5 s deadline. It prints the ``collection`` block, the
sections the collectors filled, and how long ``collect`` took.
"""

import json
import time

import expdna
from expdna.collectors import CollectContext, NotAvailable, Partial, Registry
from expdna.collectors.command import collect_command

registry = Registry()
registry.register("command", "command")(collect_command)


@registry.register("lustre", "storage")
def lustre(ctx: CollectContext) -> dict[str, object]:
    raise NotAvailable("no Lustre client on this machine")  # -> skipped


@registry.register("nodes", "storage")
def nodes(ctx: CollectContext) -> dict[str, object]:
    found = {"node-a": "ok"}
    raise Partial(found, "node-b did not answer")  # -> partial, the part is kept


@registry.register("quota", "storage")
def quota(ctx: CollectContext) -> dict[str, object]:
    return {"quota_tb": 1 / 0}  # -> failed


@registry.register("licence", "storage")
def licence(ctx: CollectContext) -> dict[str, object]:
    time.sleep(30)  # -> timeout: abandoned at the deadline, never waited for
    return {"licence": "never seen"}


start = time.perf_counter()
manifest = expdna.collect(["python", "train.py"], registry=registry, deadline_s=0.5)
took = time.perf_counter() - start
doc = manifest.to_dict()
print(json.dumps({"storage": doc["storage"], "collection": doc["collection"]}, indent=2))
print(f"collect() returned after {took:.2f} s")
