"""The worked example of explain.md: 40 runs of one setup on six nodes, recorded in a store.

python explain_fleet.py STORE_DIR
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.fleets import record_fleet, vbios_fleet

from expdna.store import Store

with Store.open(sys.argv[1]) as store:
    record_fleet(store, vbios_fleet())
