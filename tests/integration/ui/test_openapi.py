"""The API against its own OpenAPI document: schemathesis generates requests from it (bad
ones included) and checks each answer: no server error, a documented status, a body of the
documented shape."""

from __future__ import annotations

import warnings

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tests.integration.ui.conftest import UiStore

with warnings.catch_warnings():  # Starlette 1.x asks for httpx2 behind its test client
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx`")


# Operations of the document, tested one by one; hypothesis draws the requests. (The
# pytest plugin's lazy fixture form does not run under pytest 9, so the loop is ours.)
EXAMPLES = 12
#: Operations with no request that breaks their schema for hypothesis to find: the fleet has
#: no parameter, and a checkpoint's only bad form, ``blake3:`` and no digest, is a case in
#: test_routes.py.
NO_NEGATIVE = ("/api/fleet", "/api/checkpoints/{target}")


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_api_conforms_to_its_openapi_document(ui_store: UiStore, mode: GenerationMode) -> None:
    from expdna.ui.app import create_app
    from expdna.ui.hosts import allowed_hosts

    # schemathesis's ASGI client addresses the app as `testserver`.
    app = create_app(ui_store.config, hosts=allowed_hosts(extra=["testserver"]))
    schema = schemathesis.openapi.from_asgi("/api/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 10
    for operation in operations:
        if mode is GenerationMode.NEGATIVE and operation.path in NO_NEGATIVE:
            continue

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def conforms(case: schemathesis.Case) -> None:
            # `find` with no filter at all is a usage error (as the CLI's), which a
            # parameter list cannot say: that request is documented as a 400 instead.
            find = case.operation.path == "/api/find"
            case.call_and_validate(excluded_checks=[positive_data_acceptance] if find else [])

        conforms()


def test_the_document_names_every_api_route(ui_store: UiStore) -> None:
    from expdna.ui import api
    from expdna.ui.app import create_app

    with TestClient(create_app(ui_store.config), base_url="http://localhost") as client:
        document = client.get("/api/openapi.json").json()
    documented = {path.replace("{target}", "{target:path}") for path in document["paths"]}
    served = {route.path for route in api.routes} - {"/api/openapi.json"}
    assert documented == served
