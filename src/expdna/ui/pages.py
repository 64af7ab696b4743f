"""The HTML pages, one function each; each renders one template from the CLI's answers."""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from expdna.errors import ExpdnaError, InvalidInputError, NotFoundError
from expdna.store import queries
from expdna.store.facade import Store
from expdna.store.queries import parse_where
from expdna.ui import reads
from expdna.ui.app import error_status, render
from expdna.ui.params import any_given, find_filters, flag, runs_query, text, values, whole
from expdna.ui.svg import Strip, lineage_graph, strip, strips_per_value

if TYPE_CHECKING:
    from expdna.explain.report import Finding
    from expdna.store.explain import Fleet

#: Lines and characters of a patch shown on a run's page, so a page stays under 200 KB;
#: the whole patch is in the stored manifest (/api/runs/RUN/manifest and its patch object).
MAX_PATCH_LINES = 1500
MAX_PATCH_CHARS = 100_000
#: Most runs a table of runs lists on one page (about 110 KB of HTML).
MAX_ROWS = 200
#: Twins listed on one DNA page, and runs of its family (the counts are always whole): with
#: the stability plots a DNA page of any number of twins stays under 200 KB.
TWINS_PER_PAGE = 100
MAX_FAMILY = 100
#: Twins offered as "compare with" links on a run's page.
COMPARE_LINKS = 5


def _store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def runs_page(request: Request) -> Response:
    asked = runs_query(request.query_params, most=MAX_ROWS)
    store = _store(request)
    with store.index.read() as conn:
        page = reads.runs_page(
            conn,
            dna_prefix=asked.dna_prefix,
            filters=asked.filters,
            since=asked.since,
            until=asked.until,
            page=asked.page,
            per_page=asked.limit,
        )
    return render(request, "runs.html", {"asked": asked, "result": page})


def _patch_lines(text: str) -> tuple[list[tuple[str, str]], int]:
    """(css class, line) of a patch, at most :data:`MAX_PATCH_LINES`; and the line count."""
    lines = text.splitlines()
    shown = []
    budget = MAX_PATCH_CHARS
    for line in lines[:MAX_PATCH_LINES]:
        budget -= len(line) + 1
        if budget < 0:
            break
        if line.startswith(("+++", "---", "diff ", "index ")):
            kind = "meta"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        shown.append((kind, line))
    return shown, len(lines)


def run_page(request: Request) -> Response:
    store = _store(request)
    record = store.get(request.path_params["ref"])
    doc = store.show(record.run_id, inline=True)
    patches: dict[str, Any] = {}
    code = doc.get("code")
    if isinstance(code, dict):
        for repo, state in code.items():
            patch = state.get("patch") if isinstance(state, dict) else None
            if isinstance(patch, dict) and isinstance(patch.get("text"), str):
                patches[repo] = _patch_lines(patch.pop("text"))
    data = doc.get("data")
    datasets = data.get("datasets") if isinstance(data, dict) else None
    with store.index.read() as conn:
        pins = reads.run_pins(conn, record.run_id)
        twins = [
            t
            for t in queries.select_runs(conn, dna=record.dna, limit=COMPARE_LINKS + 1)
            if t.run_id != record.run_id
        ][:COMPARE_LINKS]
    context = {
        "record": record,
        "rows": reads.tree({k: v for k, v in doc.items() if k != "dna"}),
        "patches": patches,
        "datasets": datasets if isinstance(datasets, list) else [],
        "pins": pins,
        "lineage": store.lineage(record.run_id),
        "metrics": store.metrics(record.run_id),
        "twins": twins,
        "trackers": _trackers(doc.get("tracking")),
    }
    return render(request, "run.html", context)


def _trackers(tracking: Any) -> list[dict[str, str | None]]:
    """The MLflow / W&B runs this run is tied to (``tracking``, written by the integrations):
    name, run id, where it lives, and an MLflow UI link when the tracking server is HTTP."""
    if not isinstance(tracking, dict):
        return []
    found = []
    for name, info in sorted(tracking.items()):
        if not isinstance(info, dict) or not isinstance(info.get("run_id"), str):
            continue
        where = info.get("tracking_uri") or info.get("project")
        where = where if isinstance(where, str) else None
        link = None
        experiment = info.get("experiment_id")
        http = where is not None and where.startswith(("http://", "https://"))
        if name == "mlflow" and where is not None and http and isinstance(experiment, str):
            link = f"{where.rstrip('/')}/#/experiments/{experiment}/runs/{info['run_id']}"
        found.append({"name": name, "run_id": info["run_id"], "where": where, "link": link})
    return found


def dna_page(request: Request) -> Response:
    from expdna.store.stability import stability

    store = _store(request)
    dna = store.resolve_dna(request.path_params["prefix"])
    # Stability pools completed runs only, unless ?include_failed=1 (as the CLI's flag).
    include_failed = flag(request.query_params, "include_failed")
    page = whole(request.query_params, "page", 1, form=False)
    with store.index.read() as conn:
        twins = reads.runs_page(conn, dna_prefix=dna, page=page, per_page=TWINS_PER_PAGE)
        twin_count = reads.count_runs(conn, dna=dna)
        newest = queries.select_runs(conn, dna=dna, limit=1)
        family = newest[0].family if newest else None
        relatives = queries.select_runs(conn, family=family, limit=MAX_FAMILY) if family else []
        family_count = reads.count_runs(conn, family=family) if family else 0
    groups = []
    for title, across in (("This DNA", False), ("Across seeds (family)", True)):
        if across and family is None:
            continue
        report = stability(store, dna, across_seeds=across, include_failed=include_failed)
        with store.index.read() as conn:
            values = reads.metric_values(conn, report.runs)
        plots = {name: strip(values.get(name, []), s) for name, s in report.metrics.items()}
        groups.append((title, report, plots))
    context = {
        "dna": dna,
        "twins": twins,
        "twin_count": twin_count,
        "per_page": TWINS_PER_PAGE,
        "family": family,
        "relatives": relatives,
        "family_count": family_count,
        "groups": groups,
        "include_failed": include_failed,
    }
    return render(request, "dna.html", context)


def diff_page(request: Request) -> Response:
    from expdna.compare.diff import diff_manifests

    a, b = text(request.query_params, "a"), text(request.query_params, "b")
    if a is None and b is None:
        return render(request, "diff.html", {"a": "", "b": "", "report": None})
    if a is None or b is None:
        raise InvalidInputError("give two runs to compare: a=RUN and b=RUN")
    store = _store(request)
    report = diff_manifests(store.load(a), store.load(b))
    return render(request, "diff.html", {"a": a, "b": b, "report": report.to_dict()})


def find_page(request: Request) -> Response:
    filters, given = find_filters(request.query_params)
    store = _store(request)
    if not any_given(given):
        with store.index.read() as conn:
            counts = reads.fleet(conn)
        return render(request, "fleet.html", {"fleet": reads.FLEET, "counts": counts})
    limit = whole(request.query_params, "limit", MAX_ROWS, high=MAX_ROWS)
    runs = store.find(*filters, limit=limit + 1)
    context = {"given": given, "runs": runs[:limit], "more": len(runs) > limit, "limit": limit}
    return render(request, "find.html", context)


#: Findings drawn as strips on /explain (the table lists every finding).
EXPLAIN_DRAWN = 5


def explain_page(request: Request) -> Response:
    """``expdna explain`` as a form and its answer: the ranked table, the top sentence, the
    limits, and a strip of the metric per value of each top field.

    Bad input (400) and a negative answer (404) come back as the form again, filled with
    what was sent and the CLI's message above it, so it can be corrected in place."""
    params = request.query_params
    form = {
        name: text(params, name) or ""
        for name in ("metric", "same_setup", "bad", "worst", "status")
    }
    where = values(params, "where")
    context: dict[str, Any] = {
        "form": form,
        "where": where,
        "report": None,
        "plots": [],
        "error": None,
    }
    if not any(form.values()) and not where:
        return render(request, "explain.html", context)
    try:
        context.update(_explained(_store(request), form, where))
    except ExpdnaError as exc:
        status = error_status(exc)
        if status == 500:
            raise  # the store failed, not the question: the app's handler logs it
        context["error"] = str(exc)
        return render(request, "explain.html", context, status_code=status)
    return render(request, "explain.html", context)


def _explained(store: Store, form: dict[str, str], where: list[str]) -> dict[str, Any]:
    """The explain page's answer to the filled ``form`` and ``where``, as the CLI decides it:
    the same errors for bad input and for no run with the outcome."""
    from expdna.explain.outcome import asked as parse_asked

    # found, not imported: only the exact test of a small fleet imports it
    if importlib.util.find_spec("scipy") is None:
        raise InvalidInputError("the explain view needs SciPy: pip install 'expdna[explain]'")
    from expdna.explain import load_numpy

    load_numpy()
    from expdna.explain.query import check_answered, explain_fleet
    from expdna.explain.report import limits, sentence

    asked = parse_asked(
        form["metric"] or None, form["bad"] or None, form["worst"] or None, form["status"] or None
    )
    filters = [parse_where(w) for w in where]
    if not form["same_setup"] and not filters:
        raise InvalidInputError("give the runs to explain: same_setup=RUN or where=PATH=VALUE")
    fleet, report = explain_fleet(
        store, asked, same_setup=form["same_setup"] or None, where=filters
    )
    check_answered(store, report, filters)  # the CLI's negative answer, not an empty table
    plots = []
    if asked.metric is not None:
        plots = [(f, _strips(fleet, f)) for f in report.findings[:EXPLAIN_DRAWN]]
    return {
        "report": report,
        "plots": plots,
        "top": sentence(report),
        "limits": limits(report),
        "metric": asked.metric,
    }


def _strips(fleet: Fleet, finding: Finding) -> list[tuple[str, Strip]]:
    """The metric of the runs of each value of ``finding``'s first field, one strip each.

    Runs are grouped by the value's code in the field's column, not by its text: two
    values can read alike (a VBIOS recorded as "A|B", and two GPUs' "A" and "B" joined;
    a value "(absent)" and no value) and still be two values."""
    codes = fleet.fields[finding.fields[0]].codes.tolist()
    groups = [
        (
            v.value,
            [
                (run, m)
                for run, m, code in zip(fleet.runs, fleet.outcome, codes, strict=True)
                if m is not None and code == v.code
            ],
        )
        for v in finding.values
    ]
    return strips_per_value(groups)


def checkpoint_page(request: Request) -> Response:
    target = request.path_params["target"]
    store = _store(request)
    with store.index.read() as conn:
        found = reads.checkpoint(conn, target)
    if not found:
        raise NotFoundError(f"not found: no recorded run pinned {target!r}")
    return render(request, "checkpoint.html", {"target": target, "pins": found})


def lineage_page(request: Request) -> Response:
    report = _store(request).lineage(request.path_params["ref"])
    return render(request, "lineage.html", {"report": report, "graph": lineage_graph(report)})


routes = [
    Route("/", runs_page, methods=["GET"]),
    Route("/runs/{ref}", run_page, methods=["GET"]),
    Route("/dna/{prefix}", dna_page, methods=["GET"]),
    Route("/diff", diff_page, methods=["GET"]),
    Route("/find", find_page, methods=["GET"]),
    Route("/explain", explain_page, methods=["GET"]),
    Route("/checkpoints/{target:path}", checkpoint_page, methods=["GET"]),
    Route("/lineage/{ref}", lineage_page, methods=["GET"]),
]
