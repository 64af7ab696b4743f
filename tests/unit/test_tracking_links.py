"""The tracker runs a manifest records: redacted like the rest, outside the DNA, shown by show."""

from __future__ import annotations

from typing import Any

import expdna
from expdna.cli.query import tracker_lines
from expdna.integrations.trackers import Link, summary, with_links
from expdna.manifest.dna import compute_dna


def _link(**info: Any) -> Link:
    return Link("mlflow", info, lambda manifest, facts: None)


def test_a_tracker_link_is_redacted_and_leaves_the_dna_alone() -> None:
    manifest = expdna.collect(collectors=["config"], resolved_args={"lr": 0.1})
    tied = with_links(
        manifest,
        {"mlflow": _link(run_id="a" * 32, tracking_uri="https://bob:s3cret@mlflow.example.com")},
    )
    assert tied.to_dict()["tracking"] == {
        "mlflow": {"run_id": "a" * 32, "tracking_uri": "https://***@mlflow.example.com"}
    }
    assert "tracking.mlflow.tracking_uri" in tied.collection.redacted
    assert compute_dna(tied) == compute_dna(manifest) == manifest.dna
    facts = summary(tied)
    assert manifest.dna is not None
    assert (facts["dna"], facts["run_id"]) == (manifest.dna.value, manifest.run_id)
    assert facts["sections"] == manifest.dna.sections


def test_show_names_each_tracker_run() -> None:
    tracking = {
        "wandb": {"run_id": "eh32cv2g", "project": "tiny", "entity": None},
        "mlflow": {"run_id": "3ad8", "tracking_uri": "sqlite:///mlflow.db"},
        "other": "not a mapping",
    }
    assert tracker_lines(tracking) == [
        "mlflow     3ad8 (sqlite:///mlflow.db)",
        "wandb      eh32cv2g (tiny)",
    ]
    assert tracker_lines(None) == []
