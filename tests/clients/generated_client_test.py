#!/usr/bin/env python3
"""Drives a running Liteset through a client generated from its own OpenAPI document.

tests/tests/clients.rs generates the package with openapi-python-client (pinned in
generator-requirements.txt) from the live ``GET /api/v1/_openapi`` and runs this script with
it. Every call goes through a generated ``api.<tag>.<operation>.sync_detailed`` with typed
body models, and every answer is checked as the typed model the generated code parsed it
into (so a response that does not match the document fails here). The client is strict:
``raise_on_unexpected_status=True`` turns a status the document does not list into an error.

Steps: log in (and a wrong password, parsed as the documented 401 model), get a CSRF token;
create a database on ANALYTICS_URI, a dataset on ``public.sales``, a dashboard and a table
chart on it; read, update (title), list with a filter and export the dashboard; list charts,
dashboards, datasets and databases; read one chart and one dashboard; ``_info``,
``related`` and ``distinct``; bad bodies answered 400/422 parsed into ``MessageError``;
unknown ids answered 404; then delete what was created.

Environment:
  LITESET_URL              server base URL, e.g. http://127.0.0.1:8088
  LITESET_USER             admin username
  LITESET_PASSWORD         admin password
  ANALYTICS_URI            postgresql://... of a database holding
                           public.sales(id serial pk, region text, amount numeric, sold_at timestamp)
  PYTHONPATH               must hold the directory of the generated package ``liteset_client``
  LITESET_EXPECT_EXAMPLES  1 when the server has the embedded examples (the "Sales overview"
                           dashboard and its charts), 0 otherwise

Output: one line per step, ``[genclient] step: ok (details)``; on failure
``FAIL [genclient] step: reason`` (with the traceback and the HTTP answer) on stderr and exit
status 1. Standard library plus the generated package (httpx, attrs, python-dateutil).
"""

from __future__ import annotations

import io
import json
import os
import sys
import traceback
import uuid
import zipfile
from collections.abc import Callable
from typing import Any

# The generated package (found through PYTHONPATH): ``api`` functions, typed ``models``, the
# two client classes.
from liteset_client import AuthenticatedClient, Client
from liteset_client.api.chart import (
    chart_delete,
    chart_get,
    chart_info,
    chart_list,
    chart_post,
    chart_related,
)
from liteset_client.api.current_user import me_get
from liteset_client.api.dashboard import (
    dashboard_charts,
    dashboard_delete,
    dashboard_distinct,
    dashboard_export,
    dashboard_get,
    dashboard_info,
    dashboard_list,
    dashboard_post,
    dashboard_put,
    dashboard_related,
)
from liteset_client.api.database import (
    database_delete,
    database_get,
    database_list,
    database_post,
)
from liteset_client.api.dataset import (
    dataset_delete,
    dataset_distinct,
    dataset_get,
    dataset_list,
    dataset_post,
    dataset_related,
)
from liteset_client.api.security import security_csrf_token, security_login
from liteset_client.models import (
    ChartList,
    ChartPostBody,
    ChartSaved,
    ChartShow,
    CsrfTokenResponse,
    DashboardDetail,
    DashboardList,
    DashboardPostBody,
    DashboardPutBody,
    DashboardSaved,
    DatabaseList,
    DatabasePostBody,
    DatabaseSaved,
    DatasetList,
    DatasetPostBody,
    DatasetSaved,
    DistinctResponse,
    InfoResponse,
    LoginRequest,
    LoginResponse,
    MeResponse,
    Message,
    MessageError,
    RelatedResponse,
    ResultOfListDashboardChart,
)
from liteset_client.types import UNSET, File, Response

TAG = "genclient"


class StepFailed(Exception):
    pass


def check(cond: Any, message: str) -> None:
    if not cond:
        raise AssertionError(message)


def step(name: str, fn: Callable[[], str | None]) -> None:
    """Runs one step; prints ``[genclient] name: ok (detail)`` or raises StepFailed."""
    try:
        detail = fn()
    except Exception as exc:  # every failure is reported with its step
        reason = f"{type(exc).__name__}: {exc}"
        last = LAST_RESPONSE.get("r")
        if last is not None:
            reason += f" | last answer: HTTP {int(last.status_code)} body={last.content[:800]!r}"
        print(f"FAIL [{TAG}] {name}: {reason}", file=sys.stderr)
        traceback.print_exc()
        raise StepFailed(name) from exc
    print(f"[{TAG}] {name}: ok" + (f" ({detail})" if detail else ""), flush=True)


LAST_RESPONSE: dict[str, Response[Any]] = {}


def expect(resp: Response[Any], status: int, model: type) -> Any:
    """The parsed body of ``resp``, which must have ``status`` and be a ``model``."""
    LAST_RESPONSE["r"] = resp
    check(
        int(resp.status_code) == status,
        f"HTTP {int(resp.status_code)}, expected {status}: {resp.content[:800]!r}",
    )
    check(
        isinstance(resp.parsed, model),
        f"parsed as {type(resp.parsed).__name__}, expected {model.__name__}: {resp.parsed!r}",
    )
    return resp.parsed


def is_str(value: Any) -> bool:
    return isinstance(value, str) and value is not UNSET


def first_page(endpoint: Any, client: Any, model: type, name: str) -> Any:
    """A list endpoint's first 100 records, typed as `model`, with a positive integer count
    and `name` a string on every item."""
    listed = expect(endpoint.sync_detailed(client=client, q="(page_size:100)"), 200, model)
    check(isinstance(listed.count, int) and listed.count > 0, f"count {listed.count!r}")
    for item in listed.result:
        value = getattr(item, name)
        check(is_str(value), f"{name} {value!r}")
    return listed


def main() -> int:
    base = os.environ["LITESET_URL"]
    user = os.environ["LITESET_USER"]
    password = os.environ["LITESET_PASSWORD"]
    analytics_uri = os.environ["ANALYTICS_URI"]
    expect_examples = os.environ.get("LITESET_EXPECT_EXAMPLES") == "1"
    suffix = uuid.uuid4().hex[:8]
    state: dict[str, Any] = {}

    anonymous = Client(base_url=base, raise_on_unexpected_status=True)

    def login() -> str:
        resp = security_login.sync_detailed(
            client=anonymous,
            body=LoginRequest(username=user, password=password, provider="db", refresh=True),
        )
        tokens = expect(resp, 200, LoginResponse)
        check(is_str(tokens.access_token) and tokens.access_token, "no access_token")
        check(is_str(tokens.refresh_token), f"no refresh_token: {tokens.refresh_token!r}")
        state["token"] = tokens.access_token
        return f"access_token of {len(tokens.access_token)} chars, refresh_token too"

    def wrong_password() -> str:
        resp = security_login.sync_detailed(
            client=anonymous,
            body=LoginRequest(username=user, password=password + "-wrong", provider="db"),
        )
        err = expect(resp, 401, MessageError)
        check(err.message == "Not authorized", f"message {err.message!r}")
        return "401 MessageError 'Not authorized'"

    def csrf() -> str:
        api = AuthenticatedClient(
            base_url=base, token=state["token"], raise_on_unexpected_status=True
        )
        token = expect(security_csrf_token.sync_detailed(client=api), 200, CsrfTokenResponse)
        check(is_str(token.result) and token.result, f"csrf token {token.result!r}")
        # Writes need the token in X-CSRFToken and the `session` cookie that came with it.
        # (``with_headers`` would return a client with a new, empty cookie jar.)
        session = api.get_httpx_client().cookies.get("session")
        check(session, "no session cookie with the CSRF token")
        state["api"] = AuthenticatedClient(
            base_url=base,
            token=state["token"],
            headers={"X-CSRFToken": token.result},
            cookies={"session": session},
            raise_on_unexpected_status=True,
        )
        me = expect(me_get.sync_detailed(client=state["api"]), 200, MeResponse)
        check(me.result.username == user, f"me is {me.result.username!r}")
        check(isinstance(me.result.id, int), f"me.id {me.result.id!r}")
        state["user_id"] = me.result.id
        return f"user {user} has id {me.result.id}"

    def create_database() -> str:
        name = f"genclient-db-{suffix}"
        body = DatabasePostBody(database_name=name, sqlalchemy_uri=analytics_uri)
        saved = expect(
            database_post.sync_detailed(client=state["api"], body=body), 201, DatabaseSaved
        )
        check(isinstance(saved.id, int) and saved.id > 0, f"id {saved.id!r}")
        check(saved.result.database_name == name, f"database_name {saved.result.database_name!r}")
        state["database_id"], state["database_name"] = saved.id, name
        shown = database_get.sync_detailed(str(saved.id), client=state["api"])
        LAST_RESPONSE["r"] = shown
        check(int(shown.status_code) == 200, f"GET database/{saved.id}: {shown.status_code}")
        check(
            shown.parsed.result.database_name == name,
            f"read back {shown.parsed.result.database_name!r}",
        )
        check(
            shown.parsed.result.backend == "postgresql",
            f"backend {shown.parsed.result.backend!r}",
        )
        return f"id {saved.id}, {name}, backend postgresql"

    def create_dataset() -> str:
        body = DatasetPostBody(database=state["database_id"], schema="public", table_name="sales")
        saved = expect(
            dataset_post.sync_detailed(client=state["api"], body=body), 201, DatasetSaved
        )
        check(saved.result.table_name == "sales", f"table_name {saved.result.table_name!r}")
        state["dataset_id"] = saved.id
        shown = dataset_get.sync_detailed(str(saved.id), client=state["api"])
        LAST_RESPONSE["r"] = shown
        check(int(shown.status_code) == 200, f"GET dataset/{saved.id}: {shown.status_code}")
        result = shown.parsed.result
        columns = sorted(c.column_name for c in result.columns)
        check(
            columns == ["amount", "id", "region", "sold_at"],
            f"columns read from the table: {columns}",
        )
        check(result.table_name == "sales", f"table_name {result.table_name!r}")
        check(result.database.id == state["database_id"], f"{result.database!r}")
        return f"id {saved.id}, public.sales with columns {columns}"

    def create_chart() -> str:
        name = f"genclient-chart-{suffix}"
        params = {
            "viz_type": "table",
            "datasource": f"{state['dataset_id']}__table",
            "query_mode": "aggregate",
            "groupby": ["region"],
            "metrics": ["count"],
            "row_limit": 100,
        }
        body = ChartPostBody(
            slice_name=name,
            datasource_id=state["dataset_id"],
            datasource_type="table",
            viz_type="table",
            params=json.dumps(params),
            dashboards=[state["dashboard_id"]],
        )
        saved = expect(chart_post.sync_detailed(client=state["api"], body=body), 201, ChartSaved)
        check(isinstance(saved.id, int) and saved.id > 0, f"id {saved.id!r}")
        check(saved.result.slice_name == name, f"slice_name {saved.result.slice_name!r}")
        state["chart_id"], state["chart_name"] = saved.id, name
        return f"id {saved.id}, {name}"

    def create_dashboard() -> str:
        title = f"genclient dashboard {suffix}"
        slug = f"genclient-{suffix}"
        body = DashboardPostBody(
            dashboard_title=title,
            slug=slug,
            published=False,
            json_metadata=json.dumps({"color_scheme": "supersetColors"}),
        )
        saved = expect(
            dashboard_post.sync_detailed(client=state["api"], body=body), 201, DashboardSaved
        )
        check(isinstance(saved.id, int) and saved.id > 0, f"id {saved.id!r}")
        check(saved.result.dashboard_title == title, f"title {saved.result.dashboard_title!r}")
        check(saved.result.slug == slug, f"slug {saved.result.slug!r}")
        state["dashboard_id"], state["dashboard_slug"] = saved.id, slug
        return f"id {saved.id}, {title!r}"

    def list_charts() -> str:
        listed = first_page(chart_list, state["api"], ChartList, "slice_name")
        check(len(listed.result) == min(listed.count, 100), f"{len(listed.result)} items")
        for item in listed.result:
            check(isinstance(item.id, int), f"id {item.id!r}")
        names = {item.slice_name: item for item in listed.result}
        check(state["chart_name"] in names, f"{state['chart_name']} not in {sorted(names)}")
        ours = names[state["chart_name"]]
        check(ours.id == state["chart_id"], f"id {ours.id} != {state['chart_id']}")
        check(ours.viz_type == "table", f"viz_type {ours.viz_type!r}")
        check(ours.datasource_id == state["dataset_id"], f"datasource_id {ours.datasource_id!r}")
        check(sorted(listed.ids) == sorted(i.id for i in listed.result), "ids != result ids")
        if expect_examples:
            check(listed.count >= 6, f"examples: {listed.count} charts")
            state["example_chart_id"] = next(i.id for i in listed.result if i.id != ours.id)
        return f"count {listed.count}, ours: id {ours.id}"

    def list_dashboards() -> str:
        listed = first_page(dashboard_list, state["api"], DashboardList, "dashboard_title")
        titles = {item.dashboard_title: item for item in listed.result}
        check(f"genclient dashboard {suffix}" in titles, f"ours not in {sorted(titles)}")
        if expect_examples:
            check("Sales overview" in titles, f"examples: {sorted(titles)}")
            state["example_dashboard_id"] = titles["Sales overview"].id
        return f"count {listed.count}: {sorted(titles)}"

    def list_datasets() -> str:
        listed = first_page(dataset_list, state["api"], DatasetList, "table_name")
        ours = [i for i in listed.result if i.id == state["dataset_id"]]
        check(len(ours) == 1, f"dataset {state['dataset_id']} not listed")
        check(ours[0].table_name == "sales", f"table_name {ours[0].table_name!r}")
        check(ours[0].schema == "public", f"schema {ours[0].schema!r}")
        check(
            ours[0].database.database_name == state["database_name"],
            f"database {ours[0].database!r}",
        )
        if expect_examples:
            check(listed.count >= 3, f"examples: {listed.count} datasets")
        return f"count {listed.count}: {sorted(i.table_name for i in listed.result)}"

    def list_databases() -> str:
        listed = first_page(database_list, state["api"], DatabaseList, "database_name")
        for item in listed.result:
            check(is_str(item.backend), f"backend {item.backend!r}")
        names = {i.database_name: i for i in listed.result}
        check(state["database_name"] in names, f"ours not in {sorted(names)}")
        check(names[state["database_name"]].id == state["database_id"], "id differs")
        if expect_examples:
            check("examples" in names, f"examples: {sorted(names)}")
            check(names["examples"].backend == "sqlite", f"{names['examples'].backend!r}")
        return f"count {listed.count}: {sorted(names)}"

    def get_chart() -> str:
        ids = [state["chart_id"]] + (
            [state["example_chart_id"]] if "example_chart_id" in state else []
        )
        for chart_id in ids:
            shown = expect(
                chart_get.sync_detailed(str(chart_id), client=state["api"]), 200, ChartShow
            )
            check(shown.id == chart_id, f"id {shown.id} != {chart_id}")
            check(is_str(shown.result.slice_name), f"slice_name {shown.result.slice_name!r}")
            check(is_str(shown.result.viz_type), f"viz_type {shown.result.viz_type!r}")
            json.loads(shown.result.params)
        shown = chart_get.sync_detailed(str(state["chart_id"]), client=state["api"]).parsed
        check(shown.result.slice_name == state["chart_name"], f"{shown.result.slice_name!r}")
        check(shown.result.datasource_id == state["dataset_id"], "datasource_id")
        check(json.loads(shown.result.params)["groupby"] == ["region"], "params round trip")
        owners = [o.id for o in shown.result.owners]
        check(owners == [state["user_id"]], f"owners {owners}")
        dashboards = [(d.id, d.dashboard_title) for d in shown.result.dashboards]
        check(
            dashboards == [(state["dashboard_id"], f"genclient dashboard {suffix}")],
            f"dashboards {dashboards}",
        )
        return f"ids {ids}"

    def get_dashboard() -> str:
        ids = [str(state["dashboard_id"]), state["dashboard_slug"]]
        if "example_dashboard_id" in state:
            ids.append(str(state["example_dashboard_id"]))
        for key in ids:
            shown = expect(
                dashboard_get.sync_detailed(key, client=state["api"]), 200, DashboardDetail
            )
            check(is_str(shown.result.dashboard_title), f"{shown.result.dashboard_title!r}")
            check(isinstance(shown.result.published, bool), f"{shown.result.published!r}")
        ours = dashboard_get.sync_detailed(state["dashboard_slug"], client=state["api"]).parsed
        check(ours.id == state["dashboard_id"], f"by slug: id {ours.id}")
        check(ours.result.dashboard_title == f"genclient dashboard {suffix}", "title")
        check(ours.result.published is False, f"published {ours.result.published!r}")
        check(
            json.loads(ours.result.json_metadata).get("color_scheme") == "supersetColors",
            f"json_metadata {ours.result.json_metadata!r}",
        )
        charts = expect(
            dashboard_charts.sync_detailed(state["dashboard_slug"], client=state["api"]),
            200,
            ResultOfListDashboardChart,
        )
        listed = [(c.id, c.slice_name, c.viz_type) for c in charts.result]
        check(
            listed == [(state["chart_id"], state["chart_name"], "table")],
            f"dashboard charts {listed}",
        )
        return f"by id, by slug {state['dashboard_slug']!r}" + (
            ", and the example" if len(ids) > 2 else ""
        )

    def update_dashboard() -> str:
        title = f"genclient dashboard {suffix} (renamed)"
        body = DashboardPutBody(dashboard_title=title, published=True)
        saved = expect(
            dashboard_put.sync_detailed(str(state["dashboard_id"]), client=state["api"], body=body),
            200,
            DashboardSaved,
        )
        check(saved.id == state["dashboard_id"], f"id {saved.id}")
        check(saved.result.dashboard_title == title, f"{saved.result.dashboard_title!r}")
        shown = expect(
            dashboard_get.sync_detailed(str(state["dashboard_id"]), client=state["api"]),
            200,
            DashboardDetail,
        )
        check(shown.result.dashboard_title == title, f"read back {shown.result.dashboard_title!r}")
        check(shown.result.published is True, f"published {shown.result.published!r}")
        check(shown.result.slug == state["dashboard_slug"], f"slug {shown.result.slug!r}")
        state["dashboard_title"] = title
        return f"title now {title!r}"

    def filter_dashboards() -> str:
        q = f"(filters:!((col:dashboard_title,opr:eq,value:'{state['dashboard_title']}')))"
        listed = expect(dashboard_list.sync_detailed(client=state["api"], q=q), 200, DashboardList)
        check(listed.count == 1, f"count {listed.count}")
        check(listed.ids == [state["dashboard_id"]], f"ids {listed.ids}")
        check(listed.result[0].dashboard_title == state["dashboard_title"], "title")
        return f"1 match, id {listed.ids[0]}"

    def info() -> str:
        got = expect(
            dashboard_info.sync_detailed(
                client=state["api"], q="(keys:!(permissions,add_columns))"
            ),
            200,
            InfoResponse,
        )
        check("can_write" in got.permissions, f"permissions {got.permissions}")
        names = [c.name for c in got.add_columns]
        check("dashboard_title" in names and "slug" in names, f"add_columns {names}")
        dashboard_permissions = got.permissions
        got = expect(chart_info.sync_detailed(client=state["api"]), 200, InfoResponse)
        check("can_read" in got.permissions, f"chart permissions {got.permissions}")
        check(is_str(got.add_title), f"add_title {got.add_title!r}")
        filters = got.filters.additional_properties
        check("slice_name" in filters, f"chart filters {sorted(filters)}")
        operators = [f.operator for f in filters["slice_name"]]
        check(all(is_str(o) for o in operators) and operators, f"operators {operators}")
        return (
            f"dashboard permissions {dashboard_permissions}, add_columns include "
            f"dashboard_title; chart filters on {len(filters)} columns"
        )

    def related() -> str:
        got = expect(
            dashboard_related.sync_detailed("owners", client=state["api"]), 200, RelatedResponse
        )
        check(got.count >= 1, f"count {got.count}")
        ids = {r.value: r.text for r in got.result}
        check(state["user_id"] in ids, f"admin {state['user_id']} not in {ids}")
        check(all(is_str(t) for t in ids.values()), f"texts {ids}")
        got = expect(
            dataset_related.sync_detailed("database", client=state["api"]), 200, RelatedResponse
        )
        dbs = {r.value: r.text for r in got.result}
        check(dbs.get(state["database_id"]) == state["database_name"], f"databases {dbs}")
        got = expect(
            chart_related.sync_detailed("owners", client=state["api"]), 200, RelatedResponse
        )
        check(state["user_id"] in {r.value for r in got.result}, "chart owners")
        return f"dashboard owners {ids}, dataset databases {dbs}"

    def distinct() -> str:
        got = expect(
            dataset_distinct.sync_detailed("schema", client=state["api"]), 200, DistinctResponse
        )
        values = [v.value for v in got.result]
        check("public" in values, f"dataset schemas {values}")
        check(got.count == len(values), f"count {got.count} for {values}")
        got = expect(
            dashboard_distinct.sync_detailed("dashboard_title", client=state["api"]),
            200,
            DistinctResponse,
        )
        titles = [v.value for v in got.result]
        check(state["dashboard_title"] in titles, f"dashboard titles {titles}")
        return f"dataset schemas {values}; dashboard titles include ours"

    def export() -> str:
        resp = dashboard_export.sync_detailed(client=state["api"], q=f"!({state['dashboard_id']})")
        got = expect(resp, 200, File)
        data = got.payload.read()
        with zipfile.ZipFile(io.BytesIO(data)) as bundle:
            names = bundle.namelist()
        for kind in ["dashboards", "charts", "datasets", "databases"]:
            check(
                any(n.endswith(".yaml") and f"/{kind}/" in n for n in names),
                f"no {kind} in the bundle {names}",
            )
        return f"{len(data)} bytes, {len(names)} files"

    def bad_bodies() -> str:
        # A typed model does not check types on construction: the wrong type reaches the server.
        body = DashboardPostBody(dashboard_title=5)  # type: ignore[arg-type]
        err = expect(
            dashboard_post.sync_detailed(client=state["api"], body=body), 400, MessageError
        )
        check(
            err.message == {"dashboard_title": ["Not a valid string."]}, f"message {err.message!r}"
        )
        body = DashboardPutBody(json_metadata="{not json")
        err = expect(
            dashboard_put.sync_detailed(str(state["dashboard_id"]), client=state["api"], body=body),
            400,
            MessageError,
        )
        check(set(err.message) == {"json_metadata"}, f"message {err.message!r}")
        body = DatasetPostBody(
            database=state["database_id"], schema="public", table_name="no_such_table"
        )
        err = expect(dataset_post.sync_detailed(client=state["api"], body=body), 422, MessageError)
        check(set(err.message) == {"table_name"}, f"message {err.message!r}")
        check("could not be found" in err.message["table_name"][0], f"{err.message!r}")
        return "400 dashboard_title type, 400 json_metadata, 422 missing table: MessageError"

    def not_found() -> str:
        err = expect(dashboard_get.sync_detailed("987654", client=state["api"]), 404, MessageError)
        check(err.message == "Not found", f"message {err.message!r}")
        err = expect(chart_get.sync_detailed("987654", client=state["api"]), 404, MessageError)
        check(err.message == "Not found", f"message {err.message!r}")
        return "404 MessageError 'Not found' for a dashboard and a chart"

    def delete_all() -> str:
        api = state["api"]
        for name, call, key in [
            ("dashboard", dashboard_delete, state["dashboard_id"]),
            ("chart", chart_delete, state["chart_id"]),
            ("dataset", dataset_delete, state["dataset_id"]),
            ("database", database_delete, state["database_id"]),
        ]:
            done = expect(call.sync_detailed(str(key), client=api), 200, Message)
            check(done.message == "OK", f"{name} delete: {done.message!r}")
        err = expect(
            dashboard_get.sync_detailed(str(state["dashboard_id"]), client=api), 404, MessageError
        )
        check(err.message == "Not found", f"after delete: {err.message!r}")
        listed = expect(
            dashboard_list.sync_detailed(client=api, q="(page_size:100)"), 200, DashboardList
        )
        check(state["dashboard_id"] not in listed.ids, f"still listed: {listed.ids}")
        return "dashboard, chart, dataset, database: 200 Message 'OK'; the dashboard is gone"

    steps = [
        ("login", login),
        ("login with a wrong password", wrong_password),
        ("csrf token and me", csrf),
        ("create database", create_database),
        ("create dataset", create_dataset),
        ("create dashboard", create_dashboard),
        ("create chart on it", create_chart),
        ("list charts", list_charts),
        ("list dashboards", list_dashboards),
        ("list datasets", list_datasets),
        ("list databases", list_databases),
        ("get chart", get_chart),
        ("get dashboard", get_dashboard),
        ("update dashboard", update_dashboard),
        ("filter dashboards", filter_dashboards),
        ("_info", info),
        ("related", related),
        ("distinct", distinct),
        ("export dashboard", export),
        ("bad bodies", bad_bodies),
        ("not found", not_found),
        ("delete", delete_all),
    ]
    try:
        for name, fn in steps:
            step(name, fn)
    except StepFailed:
        return 1
    print(f"[{TAG}] all {len(steps)} steps ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
