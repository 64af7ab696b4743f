"""Datasets for the docs' data examples.

python make_data.py imagenet-mini DIR   5 small "images", two Parquet label tables, a README
python make_data.py shards DIR N        N files of 1 KiB
python make_data.py big DIR N MIB       N files of MIB MiB each
"""

import os
import random
import sys
from pathlib import Path


def imagenet_mini(root: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(0)
    for split, count in (("train", 3), ("val", 2)):
        (root / split).mkdir(parents=True, exist_ok=True)
        for i in range(count):
            (root / split / f"img_{i:04d}.jpg").write_bytes(rng.randbytes(2048 + 512 * i))
    labels = {"train": [3, 1, 4], "val": [1, 5]}
    for split, values in labels.items():
        table = pa.table(
            {
                "image": [f"{split}/img_{i:04d}.jpg" for i in range(len(values))],
                "label": pa.array(values, pa.int16()),
            }
        )
        pq.write_table(table, root / split / "labels.parquet")
    (root / "README.txt").write_text("imagenet-mini: 5 images, labels in Parquet\n")


def shards(root: Path, count: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(1)
    for i in range(count):
        (root / f"shard_{i:05d}.bin").write_bytes(rng.randbytes(1024))


def big(root: Path, count: int, mib: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    block = os.urandom(mib << 20)
    for i in range(count):
        (root / f"part_{i:03d}.bin").write_bytes(block[i:] + block[:i])


if __name__ == "__main__":
    kind, where = sys.argv[1], Path(sys.argv[2])
    if kind == "imagenet-mini":
        imagenet_mini(where)
    elif kind == "shards":
        shards(where, int(sys.argv[3]))
    else:
        big(where, int(sys.argv[3]), int(sys.argv[4]))
