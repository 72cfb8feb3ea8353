"""The REST API serves the same scoped reads as the MCP tools, to the same credentials."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
import yaml
from django.test import Client
from jsonschema import Draft202012Validator

from memory.services import fact_create
from tests.conftest import Tenant


@pytest.fixture
def api(tenant: Tenant) -> tuple[Client, Tenant]:
    fact_create(
        project=tenant.projects["platform"], kind="decision", text="We deploy blue-green.", actor="maria"
    )
    fact_create(
        project=tenant.projects["platform"],
        kind="fact",
        text="The deploy key rotation is restricted.",
        actor="owner",
        data_class="restricted",
    )
    token, _ = tenant.issue()
    return Client(headers={"Authorization": f"Bearer {token}"}), tenant


def test_projects_context_and_search_match_the_credential(api: tuple[Client, Tenant]) -> None:
    client, _ = api
    projects = client.get("/api/v1/projects/").json()["projects"]
    assert [p["id"] for p in projects] == ["handbook", "platform"]

    bundle = client.get("/api/v1/projects/platform/context/", {"task": "deploy a service"}).json()
    assert [f["text"] for f in bundle["facts"]] == ["We deploy blue-green."]
    assert bundle["identity"]["actor"] == "agent@tests"

    page = client.get("/api/v1/projects/platform/search/", {"q": "deploy"}).json()
    assert [r["excerpt"] for r in page["results"]] == ["We **deploy** blue-green."]


def test_errors_are_problem_json_with_stable_codes(api: tuple[Client, Tenant]) -> None:
    client, _ = api
    forbidden = client.get("/api/v1/projects/payroll/context/", {"task": "x"})
    assert forbidden.status_code == 403
    assert forbidden["Content-Type"] == "application/problem+json"
    assert forbidden.json()["code"] == "forbidden_scope"
    unknown = client.get("/api/v1/projects/nope/search/", {"q": "x"})
    assert (unknown.status_code, unknown.json()["code"]) == (404, "unknown_project")
    missing = client.get("/api/v1/projects/platform/context/")
    assert (missing.status_code, missing.json()["code"]) == (400, "invalid_request")
    assert "task" in missing.json()["detail"]


@pytest.mark.parametrize("header", [None, "Bearer nope", "Bearer unf_" + "x" * 43, "Basic abc"])
def test_bad_credentials_get_401_with_resource_metadata(tenant: Tenant, header: str | None) -> None:
    client = Client(headers={"Authorization": header} if header else {})
    response = client.get("/api/v1/projects/")
    assert response.status_code == 401
    assert 'resource_metadata="' in response["WWW-Authenticate"]
    assert response["Content-Type"] == "application/problem+json"
    problem = response.json()
    assert (problem["status"], problem["code"]) == (401, "unauthorized")
    assert problem["type"].endswith("#unauthorized")
    assert problem["action"].startswith("Stop.")


def test_every_refusal_is_problem_json(api: tuple[Client, Tenant]) -> None:
    client, _ = api
    refused = client.post("/api/v1/projects/")
    assert refused.status_code == 405
    assert refused["Content-Type"] == "application/problem+json"
    assert refused.json()["code"] == "invalid_request"


def test_timestamps_are_iso_with_an_explicit_offset_as_on_mcp(api: tuple[Client, Tenant]) -> None:
    client, _ = api
    projects = client.get("/api/v1/projects/").json()["projects"]
    bundle = client.get("/api/v1/projects/platform/context/", {"task": "deploy"}).json()
    stamps = [p["updated_at"] for p in projects] + [bundle["freshness"]["replica_at"]]
    stamps.append(bundle["freshness"]["compiled_at"])
    for stamp in stamps:
        assert stamp.endswith("+00:00"), stamp
        assert datetime.fromisoformat(stamp).utcoffset() == timedelta(0)


def test_openapi_schema_is_served(client: Client) -> None:
    response = client.get("/api/v1/schema/")
    assert response.status_code == 200
    assert b"/api/v1/projects/{project_id}/context/" in response.content


def test_openapi_describes_every_response_and_they_hold(api: tuple[Client, Tenant]) -> None:
    client, _ = api
    document = yaml.safe_load(Client().get("/api/v1/schema/").content)
    calls = {
        "/api/v1/projects/": ({}, ["401", "429"]),
        "/api/v1/projects/{project_id}/context/": ({"task": "deploy"}, ["400", "401", "403", "404", "429"]),
        "/api/v1/projects/{project_id}/search/": ({"q": "deploy"}, ["400", "401", "403", "404", "429"]),
    }
    for path, (query, errors) in calls.items():
        responses = document["paths"][path]["get"]["responses"]
        assert sorted(responses) == sorted(["200", *errors])
        for status in errors:
            problem = responses[status]["content"]["application/problem+json"]["schema"]
            assert {"code", "action", "detail", "status"} <= set(problem["required"])
        body = client.get(path.replace("{project_id}", "platform"), query).json()
        ok = responses["200"]["content"]["application/json"]["schema"]
        assert list(Draft202012Validator(ok).iter_errors(body)) == []
    forbidden = client.get("/api/v1/projects/payroll/context/", {"task": "x"}).json()
    problem = document["paths"]["/api/v1/projects/{project_id}/context/"]["get"]["responses"]["403"]
    validator = Draft202012Validator(problem["content"]["application/problem+json"]["schema"])
    assert list(validator.iter_errors(forbidden)) == []
