"""An MLflow run with the experiment DNA as tags and the manifest as an artifact.

    python examples/mlflow_tiny.py --output-dir runs/mlflow --tracking-uri sqlite:///runs/mlflow.db

The hook finds the active MLflow run by itself (the script imported mlflow): the run gets
``expdna.dna``, ``expdna.family``, ``expdna.run_id`` and ``expdna.section.*`` tags and the
artifact ``expdna/manifest.json``; the manifest records the MLflow run under
``tracking.mlflow``. Then MLflow's own search finds every run of the same setup.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import mlflow

import expdna


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", type=Path, required=True)
    parser.add_argument("--tracking-uri", default="sqlite:///mlflow.db")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    mlflow.set_tracking_uri(args.tracking_uri)
    with mlflow.start_run(), expdna.track(args, output_dir=args.output_dir) as run:
        mlflow.log_param("lr", args.lr)
        loss = 1.0 / (1.0 + args.lr)  # the training
        mlflow.log_metric("loss", loss)
        run.log_final(loss=loss)

    twins = mlflow.search_runs(
        filter_string=f"tags.\"expdna.dna\" = '{run.dna}'",
        search_all_experiments=True,
        output_format="list",
    )
    print("expdna run ", run.run_id, "dna", (run.dna or "")[:12])
    print("MLflow runs with this DNA:", sorted(r.info.run_id for r in twins))
    tags = mlflow.MlflowClient().get_run(twins[0].info.run_id).data.tags
    for name in sorted(t for t in tags if t.startswith("expdna.")):
        value = tags[name]
        print(f"  {name} = {value[:12] + '…' if len(value) == 64 else value}")


if __name__ == "__main__":
    main()
