"""One call from a store and the options to the answer (the CLI and the web view share it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from expdna.errors import NotFoundError
from expdna.explain.outcome import Asked
from expdna.manifest.display import printable
from expdna.store.queries import Filter

if TYPE_CHECKING:
    from expdna.explain.report import Explanation
    from expdna.store.explain import Fleet
    from expdna.store.facade import Store


def explain_runs(
    store: Store, asked: Asked, *, same_setup: str | None = None, where: Sequence[Filter] = ()
) -> Explanation:
    """Explain ``asked`` over the runs of ``same_setup``'s setup that match ``where``."""
    return explain_fleet(store, asked, same_setup=same_setup, where=where)[1]


def explain_fleet(
    store: Store, asked: Asked, *, same_setup: str | None = None, where: Sequence[Filter] = ()
) -> tuple[Fleet, Explanation]:
    """:func:`explain_runs`, and the fleet it read (the web view draws its metric)."""
    from expdna.explain.report import explain
    from expdna.store.explain import read_fleet, setup_runs, unset_setups

    setup = setup_runs(store, same_setup) if same_setup is not None else None
    fleet = read_fleet(store, setup=setup, filters=where, metric=asked.metric, state=asked.state)
    split = asked.split(fleet.outcome)
    notes = split.notes
    unset = unset_setups(store) if setup is not None else 0
    if unset:
        notes += (
            f"{unset} runs in the store have no setup digest, so --same-setup cannot select "
            "them: expdna db upgrade fills it in",
        )
    report = explain(len(fleet.runs), asked.outcome, split.values, fleet.fields, notes)
    return fleet, _with_setup(report, setup)


def check_answered(store: Store, report: Explanation, where: Sequence[Filter] = ()) -> None:
    """Raise :class:`NotFoundError` where no selected run has the outcome, or a bad/good
    split leaves no bad run or no good one: a negative answer, not an empty table. Where
    no run matched ``where``, the error names each path no recorded run has and the
    nearest paths some run has (a typo in ``--where``)."""
    nothing = report.nothing_to_explain()
    if nothing is None:
        return
    unknown = store.unknown_paths(where) if where and not report.runs else None
    if unknown:
        hints = "; ".join(
            f"no run has {path}" + (f" (did you mean {', '.join(near)}?)" if near else "")
            for path, near in unknown.items()
        )
        raise NotFoundError(f"no runs to explain: {hints}")
    raise NotFoundError(printable(nothing))


def _with_setup(report: Explanation, setup: str | None) -> Explanation:
    from dataclasses import replace

    return replace(report, setup=setup)
