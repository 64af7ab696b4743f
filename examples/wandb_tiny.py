"""A W&B run (offline here) with the experiment DNA in its config and the manifest in its files.

    WANDB_MODE=offline python examples/wandb_tiny.py --output-dir runs/wandb

The hook finds ``wandb.run`` by itself (the script imported wandb): ``config["expdna"]``
gets the DNA, the family digest, the run id and the section digests, and
``expdna/manifest.json`` is saved with the run; the manifest records the W&B run under
``tracking.wandb``. ``wandb sync`` later uploads it all with the run.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import wandb

import expdna


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", type=Path, required=True)
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()

    with wandb.init(project="tiny", dir=Path.cwd(), config={"lr": args.lr}) as tracked:
        with expdna.track(args, output_dir=args.output_dir) as run:
            loss = 1.0 / (1.0 + args.lr)  # the training
            tracked.log({"loss": loss})
            run.log_final(loss=loss)
        summary = dict(tracked.config)["expdna"]
        saved = Path(tracked.dir) / "expdna" / "manifest.json"
    summary["sections"] = {k: v[:12] for k, v in summary["sections"].items()}
    summary.update(dna=summary["dna"][:12], family=summary["family"][:12])
    print(json.dumps({"config.expdna": summary}, indent=2))
    print(
        "saved with the run:",
        saved.relative_to(Path.cwd()) if saved.is_relative_to(Path.cwd()) else saved,
    )
    print("manifest tracking:", json.loads(saved.read_text())["tracking"])


if __name__ == "__main__":
    main()
