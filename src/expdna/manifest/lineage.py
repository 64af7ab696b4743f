"""Lineage edges: the relations a run may have to an earlier run, and what makes an edge valid.

One rule for every writer of an edge: a manifest's ``lineage`` list (checked when the store
records it), ``expdna.start(lineage=...)`` and ``expdna link``.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from expdna.errors import quoted
from expdna.manifest.runid import RUN_ID

#: child <relation> parent
Relation = Literal["resumed_from", "rerun_of", "derived_from"]
#: Every :data:`Relation`, in its order.
RELATIONS: tuple[str, ...] = get_args(Relation)


def edge_problem(relation: Any, parent: Any, run_id: str) -> str | None:
    """Why a ``lineage`` edge of run ``run_id`` cannot be recorded, or None when it can."""
    if relation not in RELATIONS:
        return f"lineage relation {quoted(relation)} is not one of {', '.join(RELATIONS)}"
    if not isinstance(parent, str) or RUN_ID.fullmatch(parent) is None:
        return f"lineage parent {quoted(parent)} is not a run id"
    if parent == run_id:
        return "lineage names the run itself as its parent"
    return None
