"""MLflow: the active MLflow run gets the DNA as tags and the manifest as an artifact.

The hook does this by itself when an MLflow run is active at ``start()`` or ``finish()``
(and the script imported ``mlflow``); :func:`log` ties a run explicitly. The MLflow run
gets the tags ``expdna.dna``, ``expdna.family``, ``expdna.run_id`` and
``expdna.section.<name>`` (full 64-hex digests) and the artifact ``expdna/manifest.json``;
the manifest records ``tracking.mlflow`` (``run_id``, ``experiment_id``, the redacted
``tracking_uri``). Then an MLflow search finds a run's twins::

    mlflow.search_runs(filter_string=f"tags.\\"expdna.dna\\" = '{dna}'")

Only the public client API is used (``mlflow.active_run``, ``mlflow.get_tracking_uri``,
``MlflowClient.log_batch``, ``MlflowClient.log_text``), and mlflow is imported only here,
which the hook imports only when the script imported mlflow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from expdna.integrations.trackers import Link, log_to, summary
from expdna.manifest.io import fit_to_cap
from expdna.manifest.model import Manifest

if TYPE_CHECKING:
    from expdna.integrations.hook import RunHandle

ARTIFACT = "expdna/manifest.json"
TAG_PREFIX = "expdna."


def tags(facts: dict[str, Any]) -> dict[str, str]:
    """The MLflow tags of a run summarised by :func:`expdna.integrations.trackers.summary`."""
    found = {f"{TAG_PREFIX}{k}": str(facts[k]) for k in ("dna", "family", "run_id")}
    for name, digest in facts["sections"].items():
        found[f"{TAG_PREFIX}section.{name}"] = digest
    return found


def _link(run_id: str, experiment_id: str | None, tracking_uri: str) -> Link:
    def send(manifest: Manifest, facts: dict[str, Any]) -> None:
        from mlflow import MlflowClient
        from mlflow.entities import RunTag

        client = MlflowClient(tracking_uri=tracking_uri)
        client.log_batch(run_id, tags=[RunTag(k, v) for k, v in tags(facts).items()])
        text, _ = fit_to_cap(manifest)
        client.log_text(run_id, text.decode("utf-8"), ARTIFACT)

    info = {"run_id": run_id, "experiment_id": experiment_id, "tracking_uri": tracking_uri}
    return Link("mlflow", info, send)


def active_link() -> Link | None:
    """A link to the MLflow run active in this process, or ``None``."""
    import mlflow

    run = mlflow.active_run()
    if run is None:
        return None
    return _link(run.info.run_id, run.info.experiment_id, mlflow.get_tracking_uri())


def log(handle: RunHandle | None, run_id: str | None = None) -> str | None:
    """Tie ``handle``'s run to an MLflow run (the active one, or ``run_id``) now.

    Tags and artifact as the module says; the manifest gets ``tracking.mlflow`` (written
    with the manifest next time the hook writes it). Returns the MLflow run id, or
    ``None`` with a warning when there is no run to tie to or MLflow failed; never raises.
    """

    def find() -> Link | None:
        if run_id is None:
            return active_link()
        import mlflow

        found = mlflow.get_run(run_id)
        return _link(run_id, found.info.experiment_id, mlflow.get_tracking_uri())

    return log_to(handle, "mlflow", find, "no active MLflow run and no run_id given")


__all__ = ["ARTIFACT", "active_link", "log", "summary", "tags"]
