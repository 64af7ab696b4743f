"""The web view at scale: server time of each page and its weight, on histories built as
``store_bench.py`` builds them (every DNA shared by 2 runs, 1 % of runs on one VBIOS, 20
drivers; tests/history.py), next to the library call that answers the same question.

    python benchmarks/ui_bench.py [--sizes 20000,200000] [--dir DIR] [--keep]

Server time is the app's own ``Server-Timing`` (request in, first byte of the response
out), requests made in process through Starlette's test client; the median of --repeat
requests, each page on different runs or DNAs where it takes one. Weight: the HTML plus
the stylesheet (the only other file a page loads). The ratio column is the page's time
over the bare library call's (what rendering and the HTTP layer add).

Targets (issue "The web view"): on 1M runs `/` and `/dna/{prefix}` < 100 ms, `/find`
(the fleet) < 300 ms; every page < 200 KB. Building 1M runs takes ~15 minutes on 2 idle
cores (store_bench.py), so --sizes 1000000 works but is not a default.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.history import DRIVERS, RARE_VBIOS, record_history, run_id

from expdna.store import Store
from expdna.store.config import StoreConfig
from expdna.store.queries import named_filter
from expdna.ui import reads
from expdna.ui.app import create_app

with warnings.catch_warnings():  # Starlette 1.x asks for httpx2 behind its test client
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

TARGET_MS = {"/": 100.0, "/dna/{prefix}": 100.0, "/find": 300.0}
WEIGHT = 200 * 1024


def server_ms(client: TestClient, url: str) -> tuple[float, int]:
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code, response.text[:200])
    timing = response.headers["server-timing"]
    return float(timing.split("dur=")[1]), len(response.content)


def median(values: list[float]) -> float:
    return statistics.median(values)


def call_ms(fn: Callable[[], Any], repeat: int) -> float:
    fn()
    samples = []
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - began) * 1000)
    return median(samples)


def measure(root: Path, size: int, repeat: int) -> None:
    rng = random.Random(size)
    store = Store.open_for_reading(root)
    client = TestClient(create_app(StoreConfig(path=root)))
    css = len(client.get("/static/expdna.css").content)
    ids = [run_id(rng.randrange(size)) for _ in range(repeat)]
    dnas = [store.get(i).dna[:12] for i in ids]
    pages: dict[str, tuple[list[str], Callable[[], Any]]] = {
        "/": (["/"] * repeat, lambda: store.runs(limit=50)),
        "/?page=20": (["/?page=20"] * repeat, lambda: store.runs(limit=1000)),
        "/?where=driver": (
            [f"/?where=hardware.driver_version={DRIVERS[rng.randrange(20)]}"] * repeat,
            lambda: store.runs(where=[named_filter("driver", DRIVERS[3])], limit=50),
        ),
        "/dna/{prefix}": ([f"/dna/{d}" for d in dnas], lambda: store.twins(dnas[0])),
        "/runs/{id}": ([f"/runs/{i}" for i in ids], lambda: store.show(ids[0], inline=True)),
        "/diff": (
            [f"/diff?a={a}&b={b}" for a, b in zip(ids, reversed(ids), strict=True)],
            lambda: (store.load(ids[0]), store.load(ids[1])),
        ),
        "/find": (["/find"] * repeat, lambda: _fleet(store)),
        "/find?vbios": (
            [f"/find?vbios={RARE_VBIOS}"] * repeat,
            lambda: store.find(named_filter("vbios", RARE_VBIOS), limit=201),
        ),
        "/api/runs": (["/api/runs"] * repeat, lambda: store.runs(limit=50)),
    }
    print(f"\n{size:,} runs (median of {repeat}; weight = HTML + {css:,} B stylesheet)")
    print(f"  {'page':<16}{'server ms':>10}{'library ms':>12}{'ratio':>7}{'weight KB':>11}  target")
    for name, (urls, library) in pages.items():
        server_ms(client, urls[0])  # warm the statement cache and the pages
        timed = [server_ms(client, url) for url in urls]
        took = median([t for t, _ in timed])
        weight = max(n for _, n in timed) + css
        bare = call_ms(library, max(3, repeat // 2))
        target = TARGET_MS.get(name)
        verdict = ""
        if target is not None:
            verdict = f"< {target:.0f} ms: {'ok' if took < target else 'MISSED'}"
        heavy = " (over 200 KB)" if weight > WEIGHT else ""
        line = (
            f"  {name:<16}{took:>10.1f}{bare:>12.1f}{took / bare:>7.1f}"
            f"{weight / 1024:>11.1f}  {verdict}{heavy}"
        )
        print(line.rstrip())
    store.close()


def _fleet(store: Store) -> Any:
    with store.index.read() as conn:
        return reads.fleet(conn)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="20000,200000")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--dir", type=Path, default=None, help="where to build the stores")
    parser.add_argument("--keep", action="store_true", help="keep the stores afterwards")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="ui_bench_", dir=args.dir))
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            root = scratch / f"store_{size}"
            began = time.perf_counter()
            with Store.open(root) as store:
                record_history(store, size)
            print(f"built {size:,} runs in {time.perf_counter() - began:.0f} s", flush=True)
            measure(root, size, args.repeat)
    finally:
        if args.keep:
            print(f"stores kept in {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
