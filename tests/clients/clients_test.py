#!/usr/bin/env python3
"""Black-box compatibility test: real PyPI Superset clients against a running Liteset.

Drives, one after the other and each with its own resources:

  * superset-api-client 0.6.0   (module ``supersetapiclient``)
  * preset-cli 0.3.13, library  (``preset_cli.api.clients.superset.SupersetClient``)
  * preset-cli 0.3.13, command  (``superset-cli``, run as a subprocess)
  * superset-toolkit 0.2.2      (module ``superset_toolkit``)

Each one logs in, then creates, lists, reads and updates a database, a physical dataset on
``public.sales``, a table chart and a dashboard, and links the chart to the dashboard.

Environment:
  LITESET_URL        server base URL, e.g. http://127.0.0.1:8088
  LITESET_USER       admin username
  LITESET_PASSWORD   admin password
  ANALYTICS_URI      postgresql://... of a database holding
                     public.sales(id serial pk, region text, amount numeric(10,2), sold_at timestamp)
  LITESET_CLIENTS    optional, comma-separated subset of: superset-api-client, preset-cli,
                     superset-cli, superset-toolkit (default: all, in that order)
  LITESET_CLIENTS_SKIP  optional, comma-separated step tags to skip; the only tag is
                     ``sqllab`` (superset-cli's ``sql`` subcommand needs SQL Lab).
  LITESET_CLIENTS_KEEP_GOING=1  after a client fails, still run the next clients (the exit
                     status stays non-zero). Default: stop at the first failure.

Output: one line per step, ``[client] step: ok``; on failure ``FAIL [client] step: reason``
on stderr and exit status 1. Standard library plus the three clients only.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
import uuid
import zipfile
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional


# --------------------------------------------------------------------------------------------
# Harness
# --------------------------------------------------------------------------------------------

class StepFailed(Exception):
    def __init__(self, client: str, step: str, reason: str):
        super().__init__(f"[{client}] {step}: {reason}")
        self.client, self.step, self.reason = client, step, reason


def check(cond: Any, message: str) -> None:
    if not cond:
        raise AssertionError(message)


def describe(exc: BaseException) -> str:
    """A one-paragraph reason, with the HTTP status and body when the client kept them."""
    text = f"{type(exc).__name__}: {exc}"
    response = getattr(exc, "response", None)
    if response is not None and hasattr(response, "status_code"):
        body = (response.text or "")[:800]
        req = getattr(response, "request", None)
        where = f"{req.method} {req.url}" if req is not None else ""
        text += f" | HTTP {response.status_code} {where} body={body!r}"
    errors = getattr(exc, "errors", None)
    if errors and not isinstance(exc, AssertionError):
        text += f" | errors={errors!r}"[:1200]
    return text


class Run:
    """Steps of one client; the first failing step raises StepFailed naming client and step."""

    def __init__(self, client: str):
        self.client = client

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        try:
            yield
        except StepFailed:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure becomes a named step failure
            if os.environ.get("LITESET_CLIENTS_DEBUG"):
                traceback.print_exc()
            raise StepFailed(self.client, name, describe(exc)) from exc
        print(f"[{self.client}] {name}: ok", flush=True)


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        print(f"FAIL [setup] environment variable {name} is not set", file=sys.stderr)
        sys.exit(2)
    return value


BASE = ""  # LITESET_URL without trailing slash
USER = ""
PASSWORD = ""
ANALYTICS_URI = ""
SUFFIX = uuid.uuid4().hex[:8]
SKIP = set()

EXPECTED_COLUMNS = {"id", "region", "amount", "sold_at"}
TABLE_PARAMS = {
    "viz_type": "table",
    "query_mode": "raw",
    "all_columns": ["region", "amount", "sold_at"],
    "row_limit": 100,
    "adhoc_filters": [],
}


def names(items: List[Dict[str, Any]], key: str) -> List[Any]:
    return [item.get(key) for item in items]


def check_introspected(dataset: Dict[str, Any], where: str) -> None:
    """Columns were read from public.sales and the default `count` metric exists."""
    columns = dataset.get("columns")
    check(isinstance(columns, list), f"{where}: 'columns' is not a list: {columns!r}")
    by_name = {c.get("column_name"): c for c in columns}
    check(EXPECTED_COLUMNS <= set(by_name),
          f"{where}: columns {sorted(by_name)} lack {sorted(EXPECTED_COLUMNS - set(by_name))}")
    check(by_name["sold_at"].get("is_dttm") is True,
          f"{where}: sold_at.is_dttm is {by_name['sold_at'].get('is_dttm')!r}, expected true")
    check(by_name["region"].get("is_dttm") is False,
          f"{where}: region.is_dttm is {by_name['region'].get('is_dttm')!r}, expected false")
    metrics = dataset.get("metrics")
    check(isinstance(metrics, list), f"{where}: 'metrics' is not a list: {metrics!r}")
    count = [m for m in metrics if m.get("metric_name") == "count"]
    check(count, f"{where}: no 'count' metric among {names(metrics, 'metric_name')}")
    check(str(count[0].get("expression", "")).replace(" ", "").upper() == "COUNT(*)",
          f"{where}: count metric expression is {count[0].get('expression')!r}")


def chart_names_of(dashboard: Dict[str, Any]) -> List[Any]:
    charts = dashboard.get("charts")
    check(isinstance(charts, list), f"dashboard 'charts' is not a list: {charts!r}")
    return charts


# --------------------------------------------------------------------------------------------
# superset-api-client 0.6.0
# --------------------------------------------------------------------------------------------

def run_superset_api_client() -> None:
    # requests-oauthlib refuses to attach the Bearer token over plain http without this.
    os.environ.setdefault("OAUTHLIB_INSECURE_TRANSPORT", "1")
    from supersetapiclient.client import SupersetClient
    from supersetapiclient.charts import Chart
    from supersetapiclient.dashboards import Dashboard
    from supersetapiclient.databases import Database
    from supersetapiclient.datasets import Dataset
    from supersetapiclient.exceptions import ComplexBadRequestError

    r = Run("superset-api-client")
    tag = f"liteset-sac-{SUFFIX}"
    client = SupersetClient(host=BASE, username=USER, password=PASSWORD)

    with r.step("login (POST security/login, GET security/csrf_token/)"):
        session = client.session  # lazily logs in and fetches the CSRF token
        token = client._token
        check(isinstance(token.get("access_token"), str) and token["access_token"],
              f"login answer lacks access_token: keys {sorted(token)}")
        check(isinstance(token.get("refresh_token"), str) and token["refresh_token"],
              "login with refresh='true' returned no refresh_token")
        check(session.headers.get("X-CSRFToken") not in (None, "", "None"),
              "csrf_token answer had no 'result'")
        check("session" in session.cookies.keys(),
              f"no 'session' cookie after csrf_token; cookies: {session.cookies.keys()}")

    # -- database -------------------------------------------------------------------------
    db_name = tag
    with r.step("database create (GET database/_info, POST database/)"):
        check("database_name" in client.databases.add_columns
              and "sqlalchemy_uri" in client.databases.add_columns,
              f"database/_info add_columns: {client.databases.add_columns}")
        db = Database(database_name=db_name, sqlalchemy_uri=ANALYTICS_URI,
                      expose_in_sqllab=True, allow_ctas=False, allow_cvas=False,
                      allow_dml=False, allow_run_async=False)
        db_id = client.databases.add(db)
        check(isinstance(db_id, int), f"POST database/ answered id={db_id!r}")

    with r.step("database list (GET database/?q=<json filters>)"):
        found = client.databases.find(database_name=db_name)
        check([d.id for d in found] == [db_id],
              f"find(database_name) returned ids {[d.id for d in found]}, expected [{db_id}]")
        check(client.databases.count() >= 1, "database count < 1")

    with r.step("database get (GET database/<id>)"):
        got = client.databases.get(db_id)
        check(got.database_name == db_name, f"database_name {got.database_name!r}")
        check(got.expose_in_sqllab is True, f"expose_in_sqllab {got.expose_in_sqllab!r}")

    with r.step("run SQL (POST /superset/sql_json/, Superset 2.x's endpoint)"):
        columns, data = client.run(database_id=db_id,
                                   query="SELECT region, COUNT(*) AS n FROM public.sales "
                                         "GROUP BY region ORDER BY region",
                                   query_limit=10)
        check([c.get("name") for c in columns] == ["region", "n"],
              f"run() columns {columns!r}")
        check(all(set(row) == {"region", "n"} for row in data) and len(data) >= 1,
              f"run() data {data!r}")

    with r.step("database update (PUT database/<id>)"):
        got.database_name = db_name + "-renamed"
        got.expose_in_sqllab = False
        # GET database/<id> carries no sqlalchemy_uri in Superset 6.0 (it lives under
        # /connection), so the object holds "" and save() would send it; a user sets it back.
        got.sqlalchemy_uri = ANALYTICS_URI
        got.save()
        again = client.databases.get(db_id)
        check(again.database_name == db_name + "-renamed",
              f"after save database_name {again.database_name!r}")
        check(again.expose_in_sqllab is False,
              f"after save expose_in_sqllab {again.expose_in_sqllab!r}")

    # -- dataset --------------------------------------------------------------------------
    with r.step("dataset create (GET dataset/_info, POST dataset/)"):
        ds = Dataset(table_name="sales", schema="public", database_id=db_id)
        ds_id = client.datasets.add(ds)
        check(isinstance(ds_id, int), f"POST dataset/ answered id={ds_id!r}")

    with r.step("dataset list (GET dataset/?q=<json filters>)"):
        found = client.datasets.find(table_name="sales")
        ours = [d for d in found if d.id == ds_id]
        check(len(ours) == 1, f"dataset {ds_id} not among find(table_name='sales'): "
                              f"{[d.id for d in found]}")
        check(ours[0].database_id == db_id,
              f"listed dataset database.id {ours[0].database_id!r}, expected {db_id}")
        check(ours[0].schema == "public", f"listed schema {ours[0].schema!r}")

    with r.step("dataset get (GET dataset/<id>): columns introspected, count metric"):
        got_ds = client.datasets.get(ds_id)
        check(got_ds.table_name == "sales", f"table_name {got_ds.table_name!r}")
        check(got_ds.database_id == db_id, f"database.id {got_ds.database_id!r}")
        # The Dataset object keeps no metrics; read the same GET through the client's own
        # session helper to check them.
        raw = client.get(client.join_urls(client.datasets.base_url, ds_id))
        check(raw.status_code == 200, f"GET dataset/{ds_id} -> {raw.status_code}")
        check_introspected(raw.json()["result"], f"GET dataset/{ds_id}")
        check({c["column_name"] for c in got_ds.columns} >= EXPECTED_COLUMNS,
              "Dataset.columns lacks the table's columns")

    with r.step("dataset update (PUT dataset/<id>)"):
        got_ds.description = f"sales via superset-api-client {SUFFIX}"
        got_ds.save()
        again = client.datasets.get(ds_id)
        check(again.description == got_ds.description,
              f"after save description {again.description!r}")

    # -- chart ----------------------------------------------------------------------------
    chart_name = f"{tag} chart"
    with r.step("chart create (POST chart/)"):
        params = dict(TABLE_PARAMS, datasource=f"{ds_id}__table")
        # JSON fields are passed as strings: the dataclass json.loads() them on construction.
        chart = Chart(slice_name=chart_name, datasource_id=ds_id, datasource_type="table",
                      viz_type="table", params=json.dumps(params))
        chart_id = client.charts.add(chart)
        check(isinstance(chart_id, int), f"POST chart/ answered id={chart_id!r}")

    with r.step("chart list (GET chart/?q=<json filters>)"):
        found = client.charts.find(slice_name=chart_name)
        check([c.id for c in found] == [chart_id],
              f"find(slice_name) returned {[c.id for c in found]}, expected [{chart_id}]")
        check(found[0].datasource_id == ds_id,
              f"listed datasource_id {found[0].datasource_id!r}")

    with r.step("chart get (GET chart/<id>)"):
        got_chart = client.charts.get(chart_id)
        check(got_chart.slice_name == chart_name, f"slice_name {got_chart.slice_name!r}")
        check(got_chart.viz_type == "table", f"viz_type {got_chart.viz_type!r}")
        check(got_chart.params.get("all_columns") == TABLE_PARAMS["all_columns"],
              f"params round trip: {got_chart.params!r}")
        check(got_chart.datasource_id == ds_id, f"datasource_id {got_chart.datasource_id!r}")
        check(got_chart.dashboards == [], f"new chart has dashboards {got_chart.dashboards!r}")

    with r.step("chart update (PUT chart/<id>, edit_columns from chart/_info)"):
        chart_name = chart_name + " v2"
        got_chart.slice_name = chart_name
        got_chart.save()
        again = client.charts.get(chart_id)
        check(again.slice_name == chart_name, f"after save slice_name {again.slice_name!r}")

    # -- dashboard ------------------------------------------------------------------------
    slug = f"{tag}-dash"
    dash_title = f"{tag} dashboard"
    with r.step("dashboard create (GET dashboard/_info, POST dashboard/)"):
        # slug is set: Superset refuses the dataclass default "" (Length(1, 255)).
        dash = Dashboard(dashboard_title=dash_title, published=False, slug=slug)
        dash_id = client.dashboards.add(dash)
        check(isinstance(dash_id, int), f"POST dashboard/ answered id={dash_id!r}")

    with r.step("dashboard list (GET dashboard/?q=<json filters>)"):
        found = client.dashboards.find(slug=slug)
        check([d.id for d in found] == [dash_id],
              f"find(slug) returned {[d.id for d in found]}, expected [{dash_id}]")
        check(found[0].dashboard_title == dash_title,
              f"listed title {found[0].dashboard_title!r}")

    with r.step("dashboard get (GET dashboard/<id>)"):
        got_dash = client.dashboards.get(dash_id)
        check(got_dash.dashboard_title == dash_title, f"title {got_dash.dashboard_title!r}")
        check(got_dash.published is False, f"published {got_dash.published!r}")
        check(got_dash.slug == slug, f"slug {got_dash.slug!r}")
        check(got_dash.charts == [], f"new dashboard has charts {got_dash.charts!r}")
        check(isinstance(got_dash.json_metadata, dict), "json_metadata did not parse")

    with r.step("dashboard update (PUT dashboard/<id>)"):
        dash_title = dash_title + " v2"
        got_dash.dashboard_title = dash_title
        got_dash.published = True
        got_dash.css = ".liteset { color: red; }"
        got_dash.update_colors({"West": "#ff0000"})
        got_dash.save()
        again = client.dashboards.get(dash_id)
        check(again.dashboard_title == dash_title, f"after save title {again.dashboard_title!r}")
        check(again.published is True, f"after save published {again.published!r}")
        check(again.css == ".liteset { color: red; }", f"after save css {again.css!r}")
        check(again.colors.get("West") == "#ff0000",
              f"json_metadata.label_colors after save: {again.json_metadata!r}")

    with r.step("link chart to dashboard (PUT chart/<id> {dashboards:[id]})"):
        linked = client.charts.get(chart_id)
        linked.dashboards = [dash_id]
        linked.save()
        dash_now = client.dashboards.get(dash_id)
        check(chart_name in dash_now.charts,
              f"GET dashboard/{dash_id} charts={dash_now.charts!r}, expected {chart_name!r}")
        chart_now = client.charts.get(chart_id)
        check([d.get("id") for d in chart_now.dashboards] == [dash_id],
              f"GET chart/{chart_id} dashboards={chart_now.dashboards!r}")
        charts = dash_now.get_charts()  # find_one(slice_name=...) per chart name
        check([c.id for c in charts] == [chart_id], f"Dashboard.get_charts() -> {charts!r}")

    # -- bundles --------------------------------------------------------------------------
    work = tempfile.mkdtemp(prefix="liteset-sac-")
    try:
        bundle = os.path.join(work, "dashboard.zip")
        with r.step("dashboard export (Dashboard.export: GET dashboard/export/?q=[id])"):
            got_dash = client.dashboards.get(dash_id)
            got_dash.export(bundle)
            with zipfile.ZipFile(bundle) as zf:
                names = zf.namelist()
                roots = {n.split("/", 1)[0] for n in names}
                check(len(roots) == 1 and next(iter(roots)).startswith("dashboard_export_"),
                      f"one root folder dashboard_export_<ts>: {sorted(roots)}")
                inner = sorted(n.split("/", 1)[1] for n in names)
                for folder in ("dashboards/", "charts/", "datasets/", "databases/"):
                    check(any(n.startswith(folder) for n in inner), f"no {folder} in {inner}")
                check("metadata.yaml" in inner, f"no metadata.yaml in {inner}")
                # Superset reads bundles with PyYAML (YAML 1.1): the timestamp must stay a
                # string (its import schema refuses a datetime), and so must every name.
                import yaml  # PyYAML, a dependency of preset-cli
                root = next(iter(roots))
                meta = yaml.safe_load(zf.read(f"{root}/metadata.yaml"))
                check(isinstance(meta.get("timestamp"), str),
                      f"metadata.yaml timestamp read back as {type(meta.get('timestamp'))}")
                check(meta.get("version") == "1.0.0" and meta.get("type") == "Dashboard",
                      f"metadata.yaml: {meta!r}")
                dash_file = next(n for n in names if "/dashboards/" in n)
                check(f"slug: {slug}" in zf.read(dash_file).decode(), "dashboard YAML lacks its slug")

        with r.step("dashboard import without overwrite: 422 naming the file "
                    "(import_file: POST dashboard/import/)"):
            try:
                client.dashboards.import_file(bundle)
                check(False, "re-importing an existing dashboard without overwrite succeeded")
            except ComplexBadRequestError as exc:
                check(exc.response.status_code == 422, f"status {exc.response.status_code}")
                extra = exc.errors[0].get("extra", {})
                check(any(k.startswith("dashboards/") and "overwrite=true" in str(v)
                          for k, v in extra.items()), f"errors[0].extra: {extra!r}")

        with r.step("dashboard import_file(overwrite=True): replaced in place by uuid"):
            check(client.dashboards.import_file(bundle, overwrite=True) is True,
                  "import_file did not answer {'message': 'OK'}")
            found = client.dashboards.find(slug=slug)
            check([d.id for d in found] == [dash_id],
                  f"after overwrite find(slug) -> {[d.id for d in found]}, expected [{dash_id}]")

        with r.step("delete dashboard and chart, import_file again: both come back linked"):
            client.dashboards.delete(dash_id)
            client.charts.delete(chart_id)
            check(client.dashboards.find(slug=slug) == [], "dashboard not deleted")
            check(client.dashboards.import_file(bundle) is True,
                  "import_file did not answer {'message': 'OK'}")
            back = client.dashboards.find_one(slug=slug)
            check(back.id != dash_id, "a deleted dashboard came back with its old id")
            back = client.dashboards.get(back.id)
            check(back.dashboard_title == dash_title, f"title {back.dashboard_title!r}")
            check(chart_name in back.charts, f"imported dashboard charts={back.charts!r}")
            chart_back = client.charts.find_one(slice_name=chart_name)
            check(chart_back.datasource_id == ds_id,
                  f"imported chart datasource_id {chart_back.datasource_id!r}, expected {ds_id}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# preset-cli 0.3.13, library
# --------------------------------------------------------------------------------------------

def preset_login(r: Run):
    from yarl import URL
    from preset_cli.api.clients.superset import SupersetClient
    from preset_cli.auth.superset import UsernamePasswordAuth

    with r.step("login (POST security/login, GET security/csrf_token/)"):
        auth = UsernamePasswordAuth(URL(BASE), USER, PASSWORD)
        check(not auth._using_legacy_auth,
              "API login failed and preset-cli fell back to the /login/ form scraper")
        check(auth.token, "no access token")
        check(auth.csrf_token, "no CSRF token")
        check("session" in auth.session.cookies.keys(),
              f"no 'session' cookie after csrf_token: {auth.session.cookies.keys()}")
        client = SupersetClient(URL(BASE), auth)
    return client


def run_preset_cli_library() -> None:
    r = Run("preset-cli")
    tag = f"liteset-pcl-{SUFFIX}"
    client = preset_login(r)

    with r.step("_info with rison keys (GET dataset/_info?q=(keys:!(add_columns)))"):
        info = client.validate_key_in_resource_schema("dataset", "sql", keys=["add_columns"])
        check(info == {"add_columns": True}, f"dataset add_columns lacks 'sql': {info!r}")

    # -- database -------------------------------------------------------------------------
    db_name = tag
    with r.step("database create (POST database/)"):
        created = client.create_database(database_name=db_name, sqlalchemy_uri=ANALYTICS_URI,
                                         expose_in_sqllab=True)
        db_id = created.get("id")
        check(isinstance(db_id, int), f"POST database/ answered {created!r}")
        check(created.get("result", {}).get("database_name") == db_name,
              f"POST database/ result: {created.get('result')!r}")

    with r.step("database list (GET database/?q=<rison>, paginated)"):
        found = client.get_databases(database_name=db_name)
        check(names(found, "id") == [db_id], f"get_databases -> ids {names(found, 'id')}")
        check(found[0].get("uuid"), "listed database has no 'uuid' (superset-cli import needs it)")
        every = client.get_databases()
        check(db_id in names(every, "id"), "unfiltered get_databases() misses the new database")

    with r.step("database get (GET database/<id>, then database/<id>/connection)"):
        got = client.get_database(db_id)
        check(got.get("database_name") == db_name, f"database_name {got.get('database_name')!r}")
        uri = got.get("sqlalchemy_uri", "")
        check(uri.split("://")[0].startswith("postgres"), f"sqlalchemy_uri {uri!r}")
        plain = client.get_resource("database", db_id)
        check(plain.get("expose_in_sqllab") is True, f"expose_in_sqllab {plain!r}")

    with r.step("database update (PUT database/<id>)"):
        client.update_database(db_id, database_name=db_name + "-renamed", expose_in_sqllab=False)
        plain = client.get_resource("database", db_id)
        check(plain.get("database_name") == db_name + "-renamed",
              f"after update database_name {plain.get('database_name')!r}")
        check(plain.get("expose_in_sqllab") is False,
              f"after update expose_in_sqllab {plain.get('expose_in_sqllab')!r}")

    # -- dataset --------------------------------------------------------------------------
    with r.step("dataset create (POST dataset/)"):
        created = client.create_dataset(database=db_id, schema="public", table_name="sales")
        ds_id = created.get("id")
        check(isinstance(ds_id, int), f"POST dataset/ answered {created!r}")

    with r.step("dataset list (GET dataset/?q=<rison>)"):
        found = client.get_datasets(table_name="sales")
        ours = [d for d in found if d.get("id") == ds_id]
        check(len(ours) == 1, f"dataset {ds_id} not in get_datasets(table_name='sales')")
        check(ours[0].get("database", {}).get("id") == db_id,
              f"listed dataset database: {ours[0].get('database')!r}")

    with r.step("dataset get (GET dataset/<id>): columns introspected, count metric"):
        got = client.get_dataset(ds_id)
        check(got.get("table_name") == "sales", f"table_name {got.get('table_name')!r}")
        check(got.get("schema") == "public", f"schema {got.get('schema')!r}")
        check_introspected(got, f"GET dataset/{ds_id}")

    with r.step("dataset update (PUT dataset/<id>?override_columns=false)"):
        description = f"sales via preset-cli {SUFFIX}"
        client.update_dataset(ds_id, description=description)
        got = client.get_dataset(ds_id)
        check(got.get("description") == description, f"description {got.get('description')!r}")
        check_introspected(got, "after update")

    # -- chart ----------------------------------------------------------------------------
    chart_name = f"{tag} chart"
    with r.step("chart create (POST chart/ via create_resource)"):
        # preset-cli has no create_chart(); create_resource("chart") is its generic creator.
        created = client.create_resource(
            "chart", slice_name=chart_name, viz_type="table", datasource_id=ds_id,
            datasource_type="table",
            params=json.dumps(dict(TABLE_PARAMS, datasource=f"{ds_id}__table")))
        chart_id = created.get("id")
        check(isinstance(chart_id, int), f"POST chart/ answered {created!r}")

    with r.step("chart list (GET chart/?q=<rison>)"):
        found = client.get_charts(slice_name=chart_name)
        check(names(found, "id") == [chart_id], f"get_charts -> {names(found, 'id')}")

    with r.step("chart get (GET chart/<id>)"):
        got = client.get_chart(chart_id)
        check(got.get("slice_name") == chart_name, f"slice_name {got.get('slice_name')!r}")
        check(isinstance(got.get("params"), str), f"params is not a JSON string: {got!r}")
        check(json.loads(got["params"]).get("all_columns") == TABLE_PARAMS["all_columns"],
              f"params {got['params']!r}")

    with r.step("chart update (PUT chart/<id>)"):
        client.update_chart(chart_id, description="updated by preset-cli")
        got = client.get_chart(chart_id)
        check(got.get("description") == "updated by preset-cli",
              f"description {got.get('description')!r}")

    # -- dashboard ------------------------------------------------------------------------
    slug = f"{tag}-dash"
    title = f"{tag} dashboard"
    with r.step("dashboard create (POST dashboard/)"):
        created = client.create_dashboard(dashboard_title=title, slug=slug, published=False)
        dash_id = created.get("id")
        check(isinstance(dash_id, int), f"POST dashboard/ answered {created!r}")

    with r.step("dashboard list (GET dashboard/?q=<rison>)"):
        found = client.get_dashboards(slug=slug)
        check(names(found, "id") == [dash_id], f"get_dashboards(slug) -> {names(found, 'id')}")

    with r.step("dashboard get (GET dashboard/<id>)"):
        got = client.get_dashboard(dash_id)
        check(got.get("dashboard_title") == title, f"title {got.get('dashboard_title')!r}")
        check(got.get("slug") == slug, f"slug {got.get('slug')!r}")
        check(chart_names_of(got) == [], f"charts {got.get('charts')!r}")

    with r.step("dashboard update (PUT dashboard/<id>)"):
        title = title + " v2"
        client.update_dashboard(dash_id, dashboard_title=title, published=True)
        got = client.get_dashboard(dash_id)
        check(got.get("dashboard_title") == title, f"title {got.get('dashboard_title')!r}")
        check(got.get("published") is True, f"published {got.get('published')!r}")

    with r.step("link chart to dashboard (PUT chart/<id> {dashboards:[id]})"):
        client.update_chart(chart_id, dashboards=[dash_id])
        got = client.get_dashboard(dash_id)
        check(chart_name in chart_names_of(got),
              f"GET dashboard/{dash_id} charts={got.get('charts')!r}, expected {chart_name!r}")
        chart = client.get_chart(chart_id)
        check([d.get("id") for d in chart.get("dashboards", [])] == [dash_id],
              f"GET chart/{chart_id} dashboards={chart.get('dashboards')!r}")


    with r.step("legacy form login: CSRF token from /login/, cookie-authenticated writes"):
        from requests.exceptions import RequestException
        from yarl import URL
        from preset_cli.api.clients.superset import SupersetClient
        from preset_cli.auth.superset import UsernamePasswordAuth

        class FormOnly(UsernamePasswordAuth):
            """As against a Superset without the security API: preset-cli falls back to
            scraping the login form and keeps sending that page's CSRF token."""

            def get_access_token(self) -> str:
                raise RequestException("security API unavailable")

        auth = FormOnly(URL(BASE), USER, PASSWORD)
        check(auth._using_legacy_auth, "preset-cli did not use the form login")
        check(auth.csrf_token, "no csrf_token input on /login/")
        check("Authorization" not in auth.get_headers(), "the form login sent a Bearer token")
        legacy = SupersetClient(URL(BASE), auth)
        legacy.update_dashboard(dash_id, dashboard_title=title + " (form login)")
        got = legacy.get_dashboard(dash_id)
        check(got.get("dashboard_title") == title + " (form login)",
              f"after a write with the login page's token: {got.get('dashboard_title')!r}")


# --------------------------------------------------------------------------------------------
# preset-cli 0.3.13, the superset-cli command
# --------------------------------------------------------------------------------------------

def superset_cli_path() -> str:
    here = os.path.join(os.path.dirname(sys.executable), "superset-cli")
    if os.path.exists(here):
        return here
    found = shutil.which("superset-cli")
    if not found:
        raise RuntimeError("superset-cli not found next to this Python or on PATH")
    return found


def cli(*args: str) -> str:
    """Run superset-cli against the server; exit 0 required; returns stdout+stderr."""
    cmd = [superset_cli_path(), "--username", USER, "--password", PASSWORD,
           "--loglevel", "INFO", BASE + "/", *args]
    shown = " ".join(a if a != PASSWORD else "***" for a in cmd[1:])
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=300)
    out = proc.stdout + proc.stderr
    check(proc.returncode == 0,
          f"`superset-cli {shown}` exited {proc.returncode}; output:\n{out[-3000:]}")
    check("falling back to legacy" not in out,
          f"`superset-cli {shown}` fell back to the legacy /login/ form:\n{out[-2000:]}")
    check("Traceback" not in out, f"`superset-cli {shown}` printed a traceback:\n{out[-3000:]}")
    return out


def load_yaml_tree(root: str) -> Dict[str, Dict[str, Any]]:
    """uuid -> (relative path, parsed YAML) of every asset YAML under root."""
    import yaml  # PyYAML, a dependency of preset-cli

    assets: Dict[str, Dict[str, Any]] = {}
    for path in glob.glob(os.path.join(root, "**", "*.yaml"), recursive=True):
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
        if isinstance(doc, dict) and doc.get("uuid"):
            assets[str(doc["uuid"])] = {"path": os.path.relpath(path, root), "doc": doc}
    return assets


def write_bundle(root: str, db_name: str, uuids: Dict[str, str], chart_name: str,
                 dash_title: str, slug: str) -> None:
    """A hand-written asset directory in Superset's v1 export format."""
    import yaml

    def dump(rel: str, doc: Dict[str, Any]) -> None:
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            yaml.safe_dump(doc, fh, sort_keys=False)

    dump(f"databases/{db_name}.yaml", {
        "database_name": db_name, "sqlalchemy_uri": ANALYTICS_URI, "cache_timeout": None,
        "expose_in_sqllab": True, "allow_run_async": False, "allow_ctas": False,
        "allow_cvas": False, "allow_dml": False, "allow_csv_upload": False,
        "extra": {"allows_virtual_table_explore": True}, "uuid": uuids["database"],
        "version": "1.0.0",
    })

    def col(name: str, typ: str, dttm: bool) -> Dict[str, Any]:
        return {"column_name": name, "verbose_name": None, "is_dttm": dttm, "is_active": True,
                "type": typ, "groupby": True, "filterable": True, "expression": None,
                "description": None, "python_date_format": None, "extra": {}}

    dump(f"datasets/{db_name}/sales.yaml", {
        "table_name": "sales", "main_dttm_col": "sold_at", "description": None,
        "default_endpoint": None, "offset": 0, "cache_timeout": None, "schema": "public",
        "sql": None, "params": None, "template_params": None, "filter_select_enabled": True,
        "fetch_values_predicate": None, "extra": None, "uuid": uuids["dataset"],
        "metrics": [{"metric_name": "count", "verbose_name": "COUNT(*)", "metric_type": "count",
                     "expression": "COUNT(*)", "description": None, "d3format": None,
                     "extra": {}, "warning_text": None}],
        "columns": [col("id", "INTEGER", False), col("region", "TEXT", False),
                    col("amount", "NUMERIC(10, 2)", False), col("sold_at", "TIMESTAMP", True)],
        "version": "1.0.0", "database_uuid": uuids["database"],
    })
    dump(f"charts/{slug}_chart.yaml", {
        "slice_name": chart_name, "description": None, "certified_by": None,
        "certification_details": None, "viz_type": "table", "params": dict(TABLE_PARAMS),
        "query_context": None, "cache_timeout": None, "uuid": uuids["chart"],
        "version": "1.0.0", "dataset_uuid": uuids["dataset"],
    })
    position = {
        "DASHBOARD_VERSION_KEY": "v2",
        "ROOT_ID": {"type": "ROOT", "id": "ROOT_ID", "children": ["GRID_ID"]},
        "GRID_ID": {"type": "GRID", "id": "GRID_ID", "children": ["ROW-1"],
                    "parents": ["ROOT_ID"]},
        "ROW-1": {"type": "ROW", "id": "ROW-1", "children": ["CHART-1"],
                  "meta": {"background": "BACKGROUND_TRANSPARENT"},
                  "parents": ["ROOT_ID", "GRID_ID"]},
        "CHART-1": {"type": "CHART", "id": "CHART-1", "children": [],
                    "meta": {"width": 6, "height": 50, "chartId": 1, "uuid": uuids["chart"],
                             "sliceName": chart_name},
                    "parents": ["ROOT_ID", "GRID_ID", "ROW-1"]},
    }
    dump(f"dashboards/{slug}.yaml", {
        "dashboard_title": dash_title, "description": None, "css": "", "slug": slug,
        "certified_by": None, "certification_details": None, "published": False,
        "uuid": uuids["dashboard"], "position": position,
        "metadata": {"color_scheme": None, "refresh_frequency": 0, "expanded_slices": {},
                     "label_colors": {}, "timed_refresh_immune_slices": [],
                     "cross_filters_enabled": True, "default_filters": "{}",
                     "chart_configuration": {}, "native_filter_configuration": []},
        "version": "1.0.0",
    })


def run_superset_cli() -> None:
    import yaml

    r = Run("superset-cli")
    tag = f"liteset-cli-{SUFFIX}"
    db_name, chart_name, dash_title, slug = tag, f"{tag} chart", f"{tag} dashboard", f"{tag}-dash"
    uuids = {k: str(uuid.uuid4()) for k in ("database", "dataset", "chart", "dashboard")}
    work = tempfile.mkdtemp(prefix="liteset-superset-cli-")
    # superset-cli has no "show" subcommand: the server state it produced is read back with the
    # preset-cli library (same package, same HTTP client).
    lib = preset_login(Run("superset-cli/lib"))
    try:
        with r.step("import-assets: create database, dataset, chart, dashboard "
                    "(POST assets/import/)"):
            src = os.path.join(work, "src")
            write_bundle(src, db_name, uuids, chart_name, dash_title, slug)
            cli("import-assets", src)
            dbs = lib.get_databases(database_name=db_name)
            check(len(dbs) == 1, f"imported database {db_name!r} listed {len(dbs)} times")
            check(str(dbs[0].get("uuid")) == uuids["database"],
                  f"imported database uuid {dbs[0].get('uuid')!r}, expected {uuids['database']}")
            db_id = dbs[0]["id"]
            dss = [d for d in lib.get_datasets(table_name="sales")
                   if d.get("database", {}).get("id") == db_id]
            check(len(dss) == 1, f"imported dataset on database {db_id}: {dss!r}")
            ds_id = dss[0]["id"]
            check_introspected(lib.get_dataset(ds_id), f"imported dataset {ds_id}")
            charts = lib.get_charts(slice_name=chart_name)
            check(len(charts) == 1, f"imported chart listed {len(charts)} times")
            chart_id = charts[0]["id"]
            check(charts[0].get("datasource_id") == ds_id,
                  f"imported chart datasource_id {charts[0].get('datasource_id')!r}")
            dashes = lib.get_dashboards(slug=slug)
            check(len(dashes) == 1, f"imported dashboard listed {len(dashes)} times")
            dash_id = dashes[0]["id"]
            got = lib.get_dashboard(dash_id)
            check(got.get("dashboard_title") == dash_title, f"title {got.get('dashboard_title')!r}")
            check(chart_name in chart_names_of(got),
                  f"imported dashboard charts={got.get('charts')!r} (position meta.uuid link)")

        if "sqllab" in SKIP:
            print("[superset-cli] sql: skipped (LITESET_CLIENTS_SKIP=sqllab)", flush=True)
        else:
            with r.step("sql: list databases and run a query (GET database/, "
                        "POST sqllab/execute/)"):
                out = cli("sql", "--database-id", str(db_id), "-e",
                          "SELECT count(*) AS n FROM public.sales")
                check(re.search(r"^\s*n\s*$", out, re.M) and re.search(r"^\s*\d+\s*$", out, re.M),
                      f"sql output has no 'n' column with a number:\n{out[-2000:]}")

        with r.step("export-assets --filter slug=... (GET dashboard/?q=<rison>, "
                    "GET dashboard/export/?q=!(id))"):
            out_dir = os.path.join(work, "export")
            os.makedirs(out_dir)
            cli("export-assets", out_dir, "--filter", f"slug={slug}")
            assets = load_yaml_tree(out_dir)
            check(set(uuids.values()) <= set(assets),
                  f"export lacks uuids {sorted(set(uuids.values()) - set(assets))}; "
                  f"files: {sorted(a['path'] for a in assets.values())}")
            for kind, folder in (("database", "databases/"), ("dataset", "datasets/"),
                                 ("chart", "charts/"), ("dashboard", "dashboards/")):
                path = assets[uuids[kind]]["path"]
                check(path.startswith(folder), f"{kind} exported as {path!r}")
            check(assets[uuids["dashboard"]]["doc"].get("dashboard_title") == dash_title,
                  "exported dashboard_title")
            check(assets[uuids["chart"]]["doc"].get("slice_name") == chart_name,
                  "exported slice_name")
            check(assets[uuids["database"]]["doc"].get("database_name") == db_name,
                  "exported database_name")
            check(assets[uuids["dataset"]]["doc"].get("table_name") == "sales",
                  "exported table_name")

        with r.step("export-assets --database-ids/--dataset-ids/--chart-ids "
                    "(GET database|dataset|chart/export/?q=!(id))"):
            out2 = os.path.join(work, "export-by-id")
            os.makedirs(out2)
            # Each export carries its related assets (a dataset's database, a database's
            # datasets), exactly as Superset's; the shared files need --overwrite there too.
            cli("export-assets", out2, "--database-ids", str(db_id), "--dataset-ids", str(ds_id),
                "--chart-ids", str(chart_id), "--overwrite")
            assets2 = load_yaml_tree(out2)
            for kind in ("database", "dataset", "chart"):
                check(uuids[kind] in assets2, f"export by id lacks the {kind} ({uuids[kind]})")

        with r.step("import-assets --overwrite of the edited export: update "
                    "(POST assets/import/ overwrite=true)"):
            new_title, new_chart = dash_title + " v2", chart_name + " v2"
            for kind, key, value in (("dashboard", "dashboard_title", new_title),
                                     ("chart", "slice_name", new_chart)):
                path = os.path.join(out_dir, assets[uuids[kind]]["path"])
                with open(path, encoding="utf-8") as fh:
                    doc = yaml.safe_load(fh)
                doc[key] = value
                with open(path, "w", encoding="utf-8") as fh:
                    yaml.safe_dump(doc, fh, sort_keys=False)
            cli("import-assets", out_dir, "--overwrite")
            got = lib.get_dashboard(dash_id)
            check(got.get("dashboard_title") == new_title,
                  f"after re-import title {got.get('dashboard_title')!r} (same uuid, same id?)")
            check(new_chart in chart_names_of(got),
                  f"after re-import dashboard charts={got.get('charts')!r}")
            check(lib.get_chart(chart_id).get("slice_name") == new_chart,
                  "chart not updated in place by uuid")
            check(lib.get_database(db_id).get("database_name") == db_name,
                  "database changed by re-import")
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# superset-toolkit 0.2.2
# --------------------------------------------------------------------------------------------

def run_superset_toolkit() -> None:
    from superset_toolkit import SupersetClient
    from superset_toolkit.config import Config
    from superset_toolkit import charts as tk_charts
    from superset_toolkit import dashboard as tk_dash
    from superset_toolkit import datasets as tk_ds
    from superset_toolkit import ensure as tk_ensure
    from superset_toolkit import queries as tk_queries

    r = Run("superset-toolkit")
    tag = f"liteset-stk-{SUFFIX}"
    db_name = tag

    with r.step("login (POST security/login, GET security/csrf_token/)"):
        config = Config(superset_url=BASE, username=USER, password=PASSWORD,
                        schema="public", database_name=db_name)
        client = SupersetClient(config=config)
        s, base = client.session, client.base_url
        check(s.headers.get("Authorization", "").startswith("Bearer "), "no Bearer header")
        check(s.headers.get("X-CSRFToken"), "no X-CSRFToken header (csrf_token failed?)")
        check("session" in s.cookies.keys(), f"no 'session' cookie: {s.cookies.keys()}")
        status = client.validate_connection()  # GET chart/?q={"page_size":1}, user id lookup
        check(status.get("status") == "connected", f"validate_connection -> {status!r}")
        user_id = client.user_id
        check(isinstance(user_id, int), f"user_id {user_id!r}")

    hdr = {"Referer": base}

    # -- database: superset-toolkit has no create/get/update for databases; those three go
    # through the toolkit's own authenticated requests session. Listing is the toolkit's.
    with r.step("database create (raw session: POST database/)"):
        resp = s.post(f"{base}/api/v1/database/", headers=hdr,
                      json={"database_name": db_name, "sqlalchemy_uri": ANALYTICS_URI,
                            "expose_in_sqllab": True})
        check(resp.status_code == 201, f"POST database/ -> {resp.status_code} {resp.text[:500]}")
        db_id = resp.json().get("id")
        check(isinstance(db_id, int), f"POST database/ answered {resp.text[:300]}")

    with r.step("database list (get_database_id_by_name: GET database/ without q)"):
        found = tk_ensure.get_database_id_by_name(s, base, db_name)
        check(found == db_id, f"get_database_id_by_name -> {found!r}, expected {db_id}")

    with r.step("database get (raw session: GET database/<id>)"):
        resp = s.get(f"{base}/api/v1/database/{db_id}")
        check(resp.status_code == 200, f"GET database/{db_id} -> {resp.status_code}")
        check(resp.json()["result"].get("database_name") == db_name, resp.text[:300])

    with r.step("database update (raw session: PUT database/<id>)"):
        resp = s.put(f"{base}/api/v1/database/{db_id}", headers=hdr,
                     json={"expose_in_sqllab": False})
        check(resp.status_code == 200, f"PUT database/{db_id} -> {resp.status_code} {resp.text[:500]}")
        got = s.get(f"{base}/api/v1/database/{db_id}").json()["result"]
        check(got.get("expose_in_sqllab") is False, f"after PUT {got!r}")

    # -- dataset --------------------------------------------------------------------------
    with r.step("dataset create (create_dataset: POST dataset/ -> 201)"):
        # Not ensure_dataset(): it matches table_name+schema across every database and would
        # return another client's public.sales dataset.
        ds_id = tk_ds.create_dataset(s, base, db_id, "public", "sales")
        check(isinstance(ds_id, int), f"create_dataset -> {ds_id!r}")

    with r.step("dataset refresh (refresh_dataset_metadata: PUT dataset/<id>/refresh)"):
        tk_ds.refresh_dataset_metadata(s, base, ds_id)

    with r.step("dataset list (get_all_datasets q={page_size:1000}; get_dataset_id filters)"):
        every = tk_queries.get_all_datasets(s, base)
        check(ds_id in names(every, "id"), f"dataset {ds_id} not in get_all_datasets()")
        some = tk_ensure.get_dataset_id(s, base, "sales", "public")
        check(isinstance(some, int), f"get_dataset_id('sales','public') -> {some!r}")

    with r.step("dataset get (get_dataset_column_names: GET dataset/<id>)"):
        cols = tk_ds.get_dataset_column_names(s, base, ds_id)
        check(EXPECTED_COLUMNS <= set(cols), f"columns {cols!r}")
        # The toolkit only returns names; is_dttm and metrics come from the same GET, raw.
        check_introspected(s.get(f"{base}/api/v1/dataset/{ds_id}").json()["result"],
                           f"GET dataset/{ds_id}")

    with r.step("dataset update (ensure_dataset_main_dttm: PUT dataset/<id> {main_dttm_col})"):
        tk_ds.ensure_dataset_main_dttm(s, base, ds_id, "sold_at")  # only prints on failure
        got = s.get(f"{base}/api/v1/dataset/{ds_id}").json()["result"]
        check(got.get("main_dttm_col") == "sold_at", f"main_dttm_col {got.get('main_dttm_col')!r}")
        # No description setter in the toolkit: raw PUT through its session.
        resp = s.put(f"{base}/api/v1/dataset/{ds_id}", headers=hdr,
                     json={"description": f"sales via superset-toolkit {SUFFIX}"})
        check(resp.status_code == 200, f"PUT dataset/{ds_id} -> {resp.status_code} {resp.text[:500]}")
        got = s.get(f"{base}/api/v1/dataset/{ds_id}").json()["result"]
        check(got.get("description") == f"sales via superset-toolkit {SUFFIX}",
              f"description {got.get('description')!r}")

    # -- chart ----------------------------------------------------------------------------
    chart_name = f"{tag} chart"
    with r.step("chart create (create_table_chart: POST chart/ -> 201)"):
        chart_id = tk_charts.create_table_chart(
            s, base, chart_name, ds_id, user_id, columns=["region", "amount", "sold_at"],
            row_limit=100)
        check(isinstance(chart_id, int), f"create_table_chart -> {chart_id!r}")

    with r.step("chart list (get_all_charts, get_chart_id, get_charts_by_dataset)"):
        every = tk_queries.get_all_charts(s, base)
        check(chart_id in names(every, "id"), "chart not in get_all_charts()")
        check(tk_ensure.get_chart_id(s, base, chart_name) == chart_id, "get_chart_id by name")
        by_ds = tk_queries.get_charts_by_dataset(s, base, ds_id)
        check(names(by_ds, "id") == [chart_id], f"get_charts_by_dataset -> {names(by_ds, 'id')}")
        mine = tk_queries.get_charts_by_user_id(s, base, user_id)
        check(chart_id in names(mine, "id"),
              f"chart not owned by/created by user {user_id} (owners.id / created_by.id in list)")

    with r.step("chart get (raw session: GET chart/<id>)"):
        # No chart getter in the toolkit.
        got = s.get(f"{base}/api/v1/chart/{chart_id}").json()["result"]
        check(got.get("slice_name") == chart_name, f"slice_name {got.get('slice_name')!r}")
        check(got.get("viz_type") == "table", f"viz_type {got.get('viz_type')!r}")
        params = json.loads(got.get("params") or "{}")
        check(params.get("all_columns") == ["region", "amount", "sold_at"], f"params {params!r}")
        check(params.get("datasource") == f"{ds_id}__table", f"params.datasource {params!r}")

    with r.step("chart update (raw session: PUT chart/<id> {description})"):
        # No chart updater in the toolkit besides linking/ownership.
        resp = s.put(f"{base}/api/v1/chart/{chart_id}", headers=hdr,
                     json={"description": "updated by superset-toolkit"})
        check(resp.status_code == 200, f"PUT chart/{chart_id} -> {resp.status_code} {resp.text[:500]}")
        got = s.get(f"{base}/api/v1/chart/{chart_id}").json()["result"]
        check(got.get("description") == "updated by superset-toolkit", f"{got.get('description')!r}")

    # -- dashboard ------------------------------------------------------------------------
    slug, title = f"{tag}-dash", f"{tag} dashboard"
    with r.step("dashboard create (create_dashboard: POST dashboard/ -> 201)"):
        dash_id = tk_dash.create_dashboard(s, base, title, slug, user_id)
        check(isinstance(dash_id, int), f"create_dashboard -> {dash_id!r}")

    with r.step("dashboard list (get_all_dashboards, get_dashboard_id_by_slug)"):
        every = tk_queries.get_all_dashboards(s, base)
        check(dash_id in names(every, "id"), "dashboard not in get_all_dashboards()")
        check(tk_ensure.get_dashboard_id_by_slug(s, base, slug) == dash_id, "by slug")
        check(tk_dash.ensure_dashboard(s, base, title, slug, user_id) == dash_id,
              "ensure_dashboard created a duplicate instead of finding the slug")

    with r.step("dashboard get (raw session: GET dashboard/<id>)"):
        got = s.get(f"{base}/api/v1/dashboard/{dash_id}").json()["result"]
        check(got.get("dashboard_title") == title, f"title {got.get('dashboard_title')!r}")
        check(got.get("slug") == slug, f"slug {got.get('slug')!r}")
        pos = json.loads(got.get("position_json") or "{}")
        check(pos.get("GRID_ID", {}).get("type") == "GRID", f"position_json {pos!r}")

    with r.step("dashboard update (update_dashboard_css: PUT dashboard/<id> {css})"):
        tk_dash.update_dashboard_css(s, base, dash_id, ".liteset { color: blue; }")
        got = s.get(f"{base}/api/v1/dashboard/{dash_id}").json()["result"]
        check(got.get("css") == ".liteset { color: blue; }", f"css {got.get('css')!r}")

    with r.step("link chart to dashboard (link_chart_to_dashboard: PUT chart/<id> "
                "{dashboards:[id]}; add_charts_to_dashboard: PUT position_json)"):
        tk_dash.link_chart_to_dashboard(s, base, chart_id, dash_id)  # only prints on failure
        got = s.get(f"{base}/api/v1/dashboard/{dash_id}").json()["result"]
        check(chart_name in chart_names_of(got),
              f"GET dashboard/{dash_id} charts={got.get('charts')!r}, expected {chart_name!r}")
        tk_dash.add_charts_to_dashboard(s, base, dash_id, [chart_id])
        got = s.get(f"{base}/api/v1/dashboard/{dash_id}").json()["result"]
        pos = json.loads(got.get("position_json") or "{}")
        check(pos.get(f"CHART-{chart_id}", {}).get("meta", {}).get("chartId") == chart_id,
              f"position_json after add_charts_to_dashboard: {got.get('position_json')!r}")
        check(chart_name in chart_names_of(got), f"charts after layout {got.get('charts')!r}")

    with r.step("high-level create_dashboard(charts=[name]) (slug lookup, link, layout)"):
        slug2 = f"{tag}-dash2"
        dash2 = client.create_dashboard(title=f"{tag} dashboard 2", slug=slug2,
                                        charts=[chart_name])
        got = s.get(f"{base}/api/v1/dashboard/{dash2}").json()["result"]
        check(got.get("slug") == slug2, f"slug {got.get('slug')!r}")
        check(chart_name in chart_names_of(got), f"charts {got.get('charts')!r}")
        chart = s.get(f"{base}/api/v1/chart/{chart_id}").json()["result"]
        linked = sorted(d.get("id") for d in chart.get("dashboards", []))
        # PUT chart {"dashboards":[dash2]} replaces the set: the chart now lists dash2 only.
        check(linked == [dash2], f"chart dashboards after relink {linked!r}, expected [{dash2}]")


# --------------------------------------------------------------------------------------------

CLIENTS: Dict[str, Callable[[], None]] = {
    "superset-api-client": run_superset_api_client,
    "preset-cli": run_preset_cli_library,
    "superset-cli": run_superset_cli,
    "superset-toolkit": run_superset_toolkit,
}


def main() -> int:
    global BASE, USER, PASSWORD, ANALYTICS_URI, SKIP
    BASE = env("LITESET_URL").rstrip("/")
    USER = env("LITESET_USER")
    PASSWORD = env("LITESET_PASSWORD")
    ANALYTICS_URI = env("ANALYTICS_URI")
    SKIP = {s.strip() for s in os.environ.get("LITESET_CLIENTS_SKIP", "").split(",") if s.strip()}
    wanted = [c.strip() for c in os.environ.get("LITESET_CLIENTS", ",".join(CLIENTS)).split(",")
              if c.strip()]
    unknown = [c for c in wanted if c not in CLIENTS]
    if unknown:
        print(f"FAIL [setup] unknown client(s) {unknown}; known: {list(CLIENTS)}", file=sys.stderr)
        return 2
    keep_going = os.environ.get("LITESET_CLIENTS_KEEP_GOING") == "1"
    print(f"clients_test: {BASE} as {USER}, suffix {SUFFIX}, clients {wanted}", flush=True)

    failures: List[StepFailed] = []
    for name in wanted:
        try:
            CLIENTS[name]()
            print(f"[{name}] PASS", flush=True)
        except StepFailed as exc:
            print(f"FAIL [{exc.client}] {exc.step}: {exc.reason}", file=sys.stderr, flush=True)
            failures.append(exc)
            if not keep_going:
                return 1
        except Exception as exc:  # noqa: BLE001 - import errors and the like
            print(f"FAIL [{name}] setup: {describe(exc)}", file=sys.stderr, flush=True)
            failures.append(StepFailed(name, "setup", describe(exc)))
            if not keep_going:
                return 1
    if failures:
        print(f"{len(failures)} client(s) failed: "
              f"{', '.join(f'{f.client}/{f.step}' for f in failures)}", file=sys.stderr)
        return 1
    print("ALL CLIENTS PASSED", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
