"""``/api/...``: each page's answer as JSON, in the shape the CLI's ``--json`` prints.

``/api/runs`` is ``expdna runs --json``, ``/api/runs/{ref}`` ``show --json``,
``/api/runs/{ref}/manifest`` ``show --manifest``, ``/api/dna/{prefix}`` ``twins --json``,
``/api/stability/{prefix}`` ``stability --json``, ``/api/diff`` ``diff --json``,
``/api/find`` ``find --json``, ``/api/lineage/{ref}`` ``lineage --json`` and
``/api/checkpoints/{target}`` ``which --json``. ``/api/fleet`` has no command: the counts
the fleet page shows. Errors are ``{"error": MESSAGE}`` with the CLI's message.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from expdna.errors import InvalidInputError, NotFoundError
from expdna.store.facade import Store
from expdna.ui import reads
from expdna.ui.openapi import document
from expdna.ui.params import any_given, find_filters, flag, runs_query, text, whole


def _store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def runs(request: Request) -> Response:
    asked = runs_query(request.query_params, form=False)
    with _store(request).index.read() as conn:
        page = reads.runs_page(
            conn,
            dna_prefix=asked.dna_prefix,
            filters=asked.filters,
            since=asked.since,
            until=asked.until,
            page=asked.page,
            per_page=asked.limit,
        )
    headers = {}
    if page.has_next:
        from urllib.parse import urlencode

        headers["link"] = f'</api/runs?{urlencode(asked.link(asked.page + 1))}>; rel="next"'
    return JSONResponse([r.to_dict() for r in page.runs], headers=headers)


def run(request: Request) -> Response:
    return JSONResponse([_store(request).get(request.path_params["ref"]).to_dict()])


def manifest(request: Request) -> Response:
    return JSONResponse(_store(request).show(request.path_params["ref"]))


def twins(request: Request) -> Response:
    store = _store(request)
    across = flag(request.query_params, "across_seeds")
    dna = store.resolve_dna(request.path_params["prefix"])
    return JSONResponse([r.to_dict() for r in store.twins(dna, across_seeds=across)])


def stability(request: Request) -> Response:
    from expdna.store.stability import stability as stability_of

    store = _store(request)
    prefix = request.path_params["prefix"]
    store.resolve_dna(prefix)  # a DNA prefix only, as the page's URL says
    report = stability_of(
        store,
        prefix,
        metrics=request.query_params.getlist("metric"),
        across_seeds=flag(request.query_params, "across_seeds"),
    )
    return JSONResponse(report.to_dict())


def diff(request: Request) -> Response:
    from expdna.compare.diff import diff_manifests

    a, b = (text(request.query_params, name, form=False) for name in ("a", "b"))
    if a is None or b is None:
        raise InvalidInputError("give two runs to compare: a=RUN and b=RUN")
    store = _store(request)
    return JSONResponse(diff_manifests(store.load(a), store.load(b)).to_dict())


def find(request: Request) -> Response:
    filters, given = find_filters(request.query_params, form=False)
    if not any_given(given):
        raise InvalidInputError("give at least one filter (--vbios, --driver, ..., --where)")
    limit = whole(request.query_params, "limit", 200, high=10_000, form=False)
    found = _store(request).find(*filters, limit=limit)
    return JSONResponse([r.to_dict() for r in found])


def fleet(request: Request) -> Response:
    with _store(request).index.read() as conn:
        counts = reads.fleet(conn)
    return JSONResponse(
        {
            option: [{"value": value, "runs": n} for value, n in values]
            for option, values in counts.items()
        }
    )


def lineage(request: Request) -> Response:
    report = _store(request).lineage(request.path_params["ref"])
    return JSONResponse([e.to_dict() for e in (*report.ancestors, *report.descendants)])


def checkpoints(request: Request) -> Response:
    target = request.path_params["target"]
    with _store(request).index.read() as conn:
        found = reads.checkpoint(conn, target)
    if not found:
        raise NotFoundError(f"not found: no recorded run pinned {target!r}")
    return JSONResponse([{"target": target, **pin.to_dict()} for pin in found])


def openapi(request: Request) -> Response:
    return JSONResponse(document())


routes = [
    Route("/api/runs", runs, methods=["GET"]),
    Route("/api/runs/{ref}", run, methods=["GET"]),
    Route("/api/runs/{ref}/manifest", manifest, methods=["GET"]),
    Route("/api/dna/{prefix}", twins, methods=["GET"]),
    Route("/api/stability/{prefix}", stability, methods=["GET"]),
    Route("/api/diff", diff, methods=["GET"]),
    Route("/api/find", find, methods=["GET"]),
    Route("/api/fleet", fleet, methods=["GET"]),
    Route("/api/lineage/{ref}", lineage, methods=["GET"]),
    Route("/api/checkpoints/{target:path}", checkpoints, methods=["GET"]),
    Route("/api/openapi.json", openapi, methods=["GET"]),
]
