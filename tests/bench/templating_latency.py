"""Latency of chart data on a plain and a templated virtual dataset, and of a hostile template
(BENCHMARKS.md, "Jinja templating"): python3 templating_latency.py <port> <admin password>."""
import http.client, json, time, sys, statistics
H, P = "127.0.0.1", int(sys.argv[1])
def req(c, m, path, body=None, headers={}):
    h = {"Content-Type": "application/json", **headers}
    c.request(m, path, body=json.dumps(body) if body is not None else None, headers=h)
    r = c.getresponse(); data = r.read()
    return r.status, (json.loads(data) if data else None)
c = http.client.HTTPConnection(H, P)
s, t = req(c, "POST", "/api/v1/security/login", {"username": "admin", "password": sys.argv[2], "provider": "db"})
bearer = {"Authorization": "Bearer " + t["access_token"]}
c.request("GET", "/api/v1/security/csrf_token/", headers=bearer); rr = c.getresponse(); cookie = rr.getheader("Set-Cookie").split(";")[0]; csrf = json.loads(rr.read())["result"]
w = {**bearer, "X-CSRFToken": csrf, "Cookie": cookie}
s, d = req(c, "GET", "/api/v1/database/", headers=bearer)
db = [x for x in d["result"] if x["database_name"] == "examples"][0]["id"]
def ds(name, sql):
    s, r = req(c, "POST", "/api/v1/dataset/", {"database": db, "table_name": name, "sql": sql}, w)
    assert s == 201, r
    return r["id"]
plain = ds("plain_v", "SELECT region, quantity FROM sales WHERE region IN ('North', 'South') AND quantity >= 20")
tpl = ds("tpl_v", "SELECT region, quantity FROM sales WHERE 1 = 1 {% if filter_values('region') %} AND region IN {{ filter_values('region', remove_filter=True)|where_in }}{% endif %}{% if url_param('min') %} AND quantity >= {{ url_param('min') }}{% endif %}")
def body(d, templated):
    q = {"metrics": [{"expressionType": "SQL", "sqlExpression": "SUM(quantity)", "label": "t"}], "columns": ["region"], "row_limit": 100}
    if templated:
        q["filters"] = [{"col": "region", "op": "IN", "val": ["North", "South"]}]
        q["url_params"] = {"min": "20"}
    return {"datasource": {"id": d, "type": "table"}, "queries": [q], "result_type": "full"}
def bench(name, b, n=2000, expect=200):
    lat = []
    for _ in range(50): req(c, "POST", "/api/v1/chart/data", b, w)
    for _ in range(n):
        t0 = time.perf_counter(); st, r = req(c, "POST", "/api/v1/chart/data", b, w); lat.append((time.perf_counter()-t0)*1000)
        assert st == expect, (name, st, r)
    lat.sort()
    print(f"{name}: median {statistics.median(lat):.3f} ms, p99 {lat[int(n*0.99)]:.3f} ms")
bench("cached chart data, plain virtual dataset", body(plain, False))
bench("cached chart data, templated virtual dataset", body(tpl, True))
hostile = body(plain, False); hostile["queries"][0]["extras"] = {"where": "1 = 1 AND {% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}"}
bench("hostile loop template (fuel exhausted)", hostile, 200, 400)
