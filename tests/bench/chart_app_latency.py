"""Latency of what Superset's app asks for a wasm viz chart type (BENCHMARKS.md, "Custom viz
in the app"): python3 chart_app_latency.py <port> <admin password> <waterfall.wasm>.

Installs the plugin, creates a waterfall chart on the embedded examples' `sales` dataset with
the query context the app bridge saves (no queries: the plugin's build-query completes it),
and times, on one keep-alive connection, the page-load list, the chart types, chart data
completed by the plugin against the same context with its queries written out (both cached
answers, so the difference is the build-query call), and the drawing against render.svg."""
import http.client, json, time, sys, statistics, subprocess
H, P = "127.0.0.1", int(sys.argv[1])
PASSWORD, WASM = sys.argv[2], sys.argv[3]
def req(c, m, path, body=None, headers={}):
    h = {"Content-Type": "application/json", **headers}
    c.request(m, path, body=json.dumps(body) if body is not None else None, headers=h)
    r = c.getresponse(); data = r.read()
    return r.status, data
c = http.client.HTTPConnection(H, P)
s, t = req(c, "POST", "/api/v1/security/login", {"username": "admin", "password": PASSWORD, "provider": "db"})
bearer = {"Authorization": "Bearer " + json.loads(t)["access_token"]}
c.request("GET", "/api/v1/security/csrf_token/", headers=bearer); rr = c.getresponse(); cookie = rr.getheader("Set-Cookie").split(";")[0]; csrf = json.loads(rr.read())["result"]
w = {**bearer, "X-CSRFToken": csrf, "Cookie": cookie}
out = subprocess.run(["curl", "-s", "-X", "POST", f"http://{H}:{P}/api/v1/plugin/", "-H", f"Authorization: {bearer['Authorization']}",
                      "-H", f"X-CSRFToken: {csrf}", "-H", f"Cookie: {cookie}", "-F", f"file=@{WASM}"], capture_output=True, text=True)
assert '"name":"waterfall"' in out.stdout, out.stdout
s, d = req(c, "GET", "/api/v1/dataset/?q=(filters:!((col:table_name,opr:eq,value:sales)))", headers=bearer)
ds = json.loads(d)["result"][0]["id"]
params = {"viz_type": "waterfall", "datasource": f"{ds}__table", "x_axis": "region", "metric": "sum_revenue", "row_limit": 100}
deferred = {"datasource": {"id": ds, "type": "table"}, "force": False, "queries": [], "form_data": params, "result_format": "json", "result_type": "full"}
s, r = req(c, "POST", "/api/v1/chart/", {"slice_name": "Bench waterfall", "viz_type": "waterfall", "datasource_id": ds, "datasource_type": "table", "params": json.dumps(params), "query_context": json.dumps(deferred)}, w)
assert s == 201, r
chart = json.loads(r)["id"]
s, r = req(c, "POST", "/api/v1/chart/data", deferred, w)
result = json.loads(r)["result"][0]
written = dict(deferred, queries=[{"columns": ["region"], "metrics": ["sum_revenue"], "filters": [], "row_limit": 100, "orderby": [], "extras": {}}])
draw = {"form_data": dict(params, slice_id=chart), "width": 640, "height": 400,
        "queries": [{"data": result["data"], "colnames": result["colnames"], "coltypes": result["coltypes"]}]}
def bench(name, method, path, body=None, n=1000, headers=w):
    lat = []
    for _ in range(30): req(c, method, path, body, headers)
    for _ in range(n):
        t0 = time.perf_counter(); st, r = req(c, method, path, body, headers); lat.append((time.perf_counter() - t0) * 1000)
        assert st == 200, (name, st, r[:300])
    lat.sort()
    print(f"{name}: median {statistics.median(lat):.3f} ms, p99 {lat[int(n * 0.99)]:.3f} ms")
bench("GET /dynamic-plugins/api/read", "GET", "/dynamic-plugins/api/read", headers=bearer)
bench("GET /api/v1/chart_type/", "GET", "/api/v1/chart_type/", headers=bearer)
bench("chart data, queries written out (cached)", "POST", "/api/v1/chart/data", written)
bench("chart data, completed by the plugin's build-query (cached)", "POST", "/api/v1/chart/data", deferred)
bench("render.svg 640x400 (cached render)", "GET", f"/api/v1/chart/{chart}/render.svg?width=640&height=400", headers=bearer)
bench("app drawing 640x400 (plugin render + sanitiser, every call)", "POST", "/api/v1/chart_type/waterfall/render", draw)
