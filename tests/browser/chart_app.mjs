// A wasm viz plugin as a chart type of Superset's own, unmodified app (DYNAMIC_PLUGINS and
// Liteset's app bridge), done as a person does it, on the embedded default's example data:
// install the waterfall example through the API; open Explore on the `sales` dataset, pick
// the waterfall type from the viz gallery, set its controls and see it draw (an SVG with the
// regions and the total); change one of its own controls and see the drawing change; save
// it to a new dashboard, reload the dashboard and see it again; replace the plugin with a
// new version and see the new drawing after a reload; and a plugin that traps and one that
// runs out of time show Superset's chart error in their holders while the waterfall still
// draws.
//
// Paths come from tests/tests/browser.rs: LITESET_VIZ_WATERFALL (v1), LITESET_VIZ_WATERFALL2
// (the same plugin, next version: its change labels start with LITESET_VIZ_V2_MARK), and
// LITESET_VIZ_FIXTURE (the fixture viz plugin, `fixture_hostile`, whose form data `mode`
// picks a misbehaviour). Each flow is a `step` of spa.mjs (steps named `viz …`).

import fs from 'node:fs';

const DATASET = 'sales';
const CHART = 'Revenue waterfall';
const DASHBOARD = 'Waterfall board';
const REGIONS = ['North', 'South', 'East', 'West'];

/** Runs the flows; `t` carries spa.mjs's helpers `{ page, step, api, base, pollPage }`. */
export async function vizFlows(t) {
  const { page, step, api, base, pollPage } = t;
  const env = (n) => {
    const v = process.env[n];
    if (!v) throw new Error(`${n} is not set`);
    return v;
  };
  const ids = {};
  let chartName = '';

  async function csrf() {
    return (await api(page, '/api/v1/security/csrf_token/')).result;
  }

  async function apiWrite(method, path, data) {
    const response = await page.request.fetch(`${base}${path}`, {
      method,
      headers: { 'X-CSRFToken': await csrf() },
      data,
    });
    if (!response.ok()) {
      throw new Error(`${method} ${path}: ${response.status()} ${await response.text()}`);
    }
    return response.json();
  }

  async function install(file) {
    const response = await page.request.post(`${base}/api/v1/plugin/`, {
      headers: { 'X-CSRFToken': await csrf() },
      multipart: {
        file: { name: 'plugin.wasm', mimeType: 'application/wasm', buffer: fs.readFileSync(file) },
      },
    });
    if (!response.ok()) {
      throw new Error(`installing ${file}: ${response.status()} ${await response.text()}`);
    }
    return (await response.json()).result;
  }

  /** The texts of the SVG drawn inside `root` (a CSS selector), once drawn. */
  const svgTexts = (root) => `(() => {
    const svg = document.querySelector(${JSON.stringify(root)})?.querySelector('.liteset-chart svg');
    return svg ? [...svg.querySelectorAll('text')].map((t) => t.textContent.trim()) : null;
  })()`;

  async function drawn(root, wanted, what) {
    return pollPage(
      page,
      svgTexts(root),
      (texts) => !!texts && wanted(texts),
      (texts) => `${what}: ${texts ? `texts ${JSON.stringify(texts.slice(0, 30))}` : 'no SVG yet'}`,
    );
  }

  const hasRegions = (texts) => REGIONS.every((r) => texts.includes(r));
  const renamed = (texts) => hasRegions(texts) && texts.includes('Grand total');

  await step(page, 'viz: install the waterfall plugin, pick it from the gallery, set its controls', async () => {
    const plugin = await install(env('LITESET_VIZ_WATERFALL'));
    const types = (await api(page, '/api/v1/chart_type/')).result;
    const type = types.find((x) => x.viz_type === 'waterfall');
    if (!type) throw new Error(`no waterfall chart type: ${JSON.stringify(types)}`);
    chartName = type.name;
    const q = `(filters:!((col:table_name,opr:eq,value:${DATASET})))`;
    const ds = (await api(page, `/api/v1/dataset/?q=${encodeURIComponent(q)}`)).result[0];
    if (!ds) throw new Error(`no dataset ${DATASET}`);
    ids.dataset = ds.id;
    const stored = page.waitForResponse(
      (r) => r.request().method() === 'POST' && /\/api\/v1\/explore\/form_data/.test(r.url()),
    );
    await page.goto(`${base}/explore/?datasource_type=table&datasource_id=${ds.id}`);
    await stored;
    await page.getByText('View all charts').first().click();
    const modal = page.locator('.ant-modal').filter({ hasText: 'Select a visualization type' }).first();
    await modal.getByPlaceholder('Search all charts').fill('Waterfall');
    const card = modal.locator('[role="button"]').filter({ hasText: chartName }).first();
    await card.waitFor({ state: 'visible' });
    await card.dblclick();
    await modal.waitFor({ state: 'hidden' });
    const option = (name) =>
      page.locator('[draggable="true"]').filter({ hasText: new RegExp(`^${name}$`) }).first();
    await option('region').dragTo(page.getByText('Drop a column here or click').first());
    await option('Revenue').dragTo(page.getByText('Drop a column/metric here or click').first());
    await page.getByRole('button', { name: /^(Create|Update) chart$/ }).first().click();
    const texts = await drawn('.chart-container', (x) => hasRegions(x) && x.includes('Total'), 'the waterfall in Explore');
    // One of the plugin's own controls: the drawing follows without running the query again.
    // (Superset puts sections of render-only controls in the Customize tab.)
    await page.getByRole('tab', { name: 'Customize' }).first().click();
    const label = page.locator('.Control').filter({ hasText: 'Total label' }).locator('input').first();
    await label.fill('Grand total');
    await drawn('.chart-container', (x) => hasRegions(x) && x.includes('Grand total'), 'the renamed total');
    return `${plugin.name} ${plugin.version} picked as "${chartName}"; drew ${texts.length} labels (${REGIONS.join(', ')}, Total), then "Grand total" from its own control`;
  });

  const holder = (name) =>
    `[...document.querySelectorAll('.dashboard-component-chart-holder')].find((h) => h.innerText.includes(${JSON.stringify(name)}))`;
  const holderTexts = (name) => `(() => {
    const h = ${holder(name)};
    const svg = h?.querySelector('.liteset-chart svg');
    return svg ? [...svg.querySelectorAll('text')].map((t) => t.textContent.trim()) : null;
  })()`;
  async function onDashboard(name, wanted, what) {
    return pollPage(
      page,
      holderTexts(name),
      (texts) => !!texts && wanted(texts),
      (texts) => `${what}: ${texts ? `texts ${JSON.stringify(texts.slice(0, 30))}` : 'no SVG yet'}`,
    );
  }

  await step(page, 'viz: save the waterfall to a new dashboard, reload it', async () => {
    const listed = page.waitForResponse(
      (r) => r.request().method() === 'GET' && /\/api\/v1\/dashboard\/\?q=/.test(r.url()),
    );
    await page.locator('button').filter({ hasText: /^\s*Save\s*$/ }).first().click();
    const modal = page.locator('.ant-modal').filter({ hasText: 'Save chart' }).first();
    await modal.locator('input[name="new_slice_name"]').fill(CHART);
    await modal.getByRole('combobox').last().click();
    await listed;
    await page.keyboard.type(DASHBOARD);
    await page.locator('.ant-select-item-option').filter({ hasText: DASHBOARD }).first().click();
    await modal.getByRole('button', { name: 'Save & go to dashboard' }).click();
    await page.waitForURL(/\/superset\/dashboard\//);
    await onDashboard(CHART, renamed, 'the waterfall on the dashboard');
    const q = `(filters:!((col:dashboard_title,opr:eq,value:'${DASHBOARD}')))`;
    const dash = (await api(page, `/api/v1/dashboard/?q=${encodeURIComponent(q)}`)).result[0];
    if (!dash) throw new Error(`no dashboard "${DASHBOARD}"`);
    ids.dashboard = dash.id;
    const charts = (await api(page, `/api/v1/dashboard/${dash.id}/charts`)).result;
    const saved = charts.find((c) => c.slice_name === CHART);
    if (!saved || saved.form_data?.viz_type !== 'waterfall') {
      throw new Error(`the dashboard's charts: ${JSON.stringify(charts.map((c) => [c.slice_name, c.form_data?.viz_type]))}`);
    }
    ids.chart = saved.id;
    await page.reload();
    const texts = await onDashboard(CHART, renamed, 'the waterfall after a reload');
    return `"${CHART}" (id ${saved.id}) on "${DASHBOARD}" (id ${dash.id}), drawn again after a reload (${texts.length} labels)`;
  });

  await step(page, 'viz: replace the plugin with a new version, reload, see the new drawing', async () => {
    const mark = env('LITESET_VIZ_V2_MARK');
    const before = await onDashboard(CHART, hasRegions, 'the waterfall before the upgrade');
    if (before.some((x) => x.startsWith(mark))) {
      throw new Error(`v1 already draws ${mark}: ${JSON.stringify(before)}`);
    }
    const plugin = await install(env('LITESET_VIZ_WATERFALL2'));
    await page.reload();
    const after = await onDashboard(
      CHART,
      (texts) => hasRegions(texts) && texts.some((x) => x.startsWith(mark)),
      `the waterfall of ${plugin.version}`,
    );
    return `${plugin.name} ${plugin.version}: labels now ${JSON.stringify(after.filter((x) => x.startsWith(mark)).slice(0, 3))}`;
  });

  await step(page, 'viz: a plugin that traps and one that times out show chart errors, the rest draws', async () => {
    await install(env('LITESET_VIZ_FIXTURE'));
    for (const [name, mode] of [['Trapping chart', 'trap'], ['Spinning chart', 'spin']]) {
      await apiWrite('POST', '/api/v1/chart/', {
        slice_name: name,
        viz_type: 'fixture_hostile',
        datasource_id: ids.dataset,
        datasource_type: 'table',
        dashboards: [ids.dashboard],
        params: JSON.stringify({ viz_type: 'fixture_hostile', datasource: `${ids.dataset}__table`, mode }),
      });
    }
    await page.reload();
    await onDashboard(CHART, hasRegions, 'the waterfall next to failing charts');
    const errors = await pollPage(
      page,
      `['Trapping chart', 'Spinning chart'].map((n) => {
        const h = ${holder('__NAME__')};
        return h ? (h.innerText || '').replace(/\\s+/g, ' ').slice(0, 300) : null;
      })`.replaceAll(`"__NAME__"`, 'n'),
      (texts) => texts.every((x) => x && /error|crashed|stopped|limit/i.test(x)),
      (texts) => `the failing charts' holders: ${JSON.stringify(texts)}`,
    );
    // Those errors are what this step expects: not failures of the step.
    await page.evaluate(() => window.__litesetShown?.splice(0));
    return `errors shown: ${errors.map((e) => JSON.stringify(e.slice(0, 120))).join('; ')}`;
  });
}
