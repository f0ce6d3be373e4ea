// Superset 6.0's own, unmodified web frontend (served by Liteset from the apache-superset
// wheel's superset/static/) driven in Debian's chromium through playwright-core.
//
//   LITESET_URL=http://127.0.0.1:8088 LITESET_USER=admin LITESET_PASSWORD=… \
//   LITESET_BROWSER_ARTIFACTS=/tmp/browser node tests/browser/spa.mjs
//
// Steps: log in through the React login page; see the example dashboard in the dashboard list;
// open it and wait until every chart has rendered without an error; open charts in Explore;
// run a query in SQL Lab and see its rows (these need the embedded examples:
// LITESET_BROWSER_EXAMPLES=false skips them). Then, given a PostgreSQL analytics database
// (LITESET_PG_HOST, _PORT, _DB, _USER), the everyday flows of flows.mjs. A full-page screenshot after each step (and on a
// failure) goes to LITESET_BROWSER_ARTIFACTS, with a Playwright trace (trace.zip, open it with
// `npx playwright show-trace`) and report.json.
//
// Every /api/v1 response with a status >= 400 and every failed /api/v1 request fails the run,
// unless it is on ALLOWED_API_FAILURES. Other failed responses and console errors are listed.
// Exit status 0 only when every step passed; the last line is `browser: N passed, M failed`.
// Run by tests/tests/browser.rs (`bash tests/run -p liteset-tests --test browser`).

import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';

const BASE = required('LITESET_URL').replace(/\/+$/, '');
const USER = required('LITESET_USER');
const PASSWORD = required('LITESET_PASSWORD');
const ARTIFACTS = required('LITESET_BROWSER_ARTIFACTS');
const CHROMIUM = process.env.LITESET_CHROMIUM || '/usr/bin/chromium';
/** How long one step may take (cold starts on a loaded 2-core machine are slow). */
const STEP_TIMEOUT = Number(process.env.LITESET_BROWSER_STEP_TIMEOUT_MS || 90_000);
const DASHBOARD_SLUG = 'sales-overview';
const DASHBOARD_TITLE = 'Sales overview';
const EXAMPLE_DATABASE = 'examples';
const SQL = "SELECT 1 AS one, 'liteset' AS word";
/** Whether the server has the embedded examples (the example dashboard, Explore, SQL Lab on
 *  `examples` steps); PostgreSQL metadata has none. */
const EXAMPLES = process.env.LITESET_BROWSER_EXAMPLES !== 'false';
/** The PostgreSQL analytics database the everyday flows (flows.mjs) connect, if given. */
const PG = process.env.LITESET_PG_HOST
  ? {
      host: process.env.LITESET_PG_HOST,
      port: Number(process.env.LITESET_PG_PORT),
      db: required('LITESET_PG_DB'),
      user: required('LITESET_PG_USER'),
    }
  : null;

/**
 * /api/v1 failures that are deliberate and must not fail the run: `{ method, path, status, why }`
 * with `path` a RegExp tested against the URL's pathname. Keep it empty unless a failure is
 * truly what Superset itself answers (and say why).
 */
const ALLOWED_API_FAILURES = [
  {
    method: 'POST',
    path: /^\/api\/v1\/database\/validate_parameters\/?$/,
    status: 422,
    why: "the connection dialog checks each field as it loses focus; until all are filled, \
Superset answers 422 CONNECTION_MISSING_PARAMETERS_ERROR (a warning) too",
  },
  {
    method: 'GET',
    path: /^\/api\/v1\/dataset\/NaN\/drill_info\/?$/,
    status: 404,
    why: "a chart dragged into a dashboard in edit mode has no top-level `datasource` in \
the app's slice entities (6.0's sliceEntities reducer), so its header asks for dataset NaN; \
Superset's <int:pk> route answers that 404 too",
  },
  // chart_app.mjs: the fixture viz plugin's charts that trap (500) and spin past their time
  // limit (408) while drawing, which is the point of that step.
  ...[500, 408].map((status) => ({
    method: 'POST',
    path: /^\/api\/v1\/chart_type\/fixture_hostile\/render\/?$/,
    status,
    why: 'the fixture viz plugin traps or runs out of time on purpose (chart_app.mjs)',
  })),
];

function required(name) {
  const value = process.env[name];
  if (!value) {
    console.error(`spa.mjs: ${name} is not set`);
    process.exit(2);
  }
  return value;
}

fs.mkdirSync(ARTIFACTS, { recursive: true });
for (const f of fs.readdirSync(ARTIFACTS)) {
  if (/\.(png|json|zip|txt)$/.test(f)) fs.rmSync(path.join(ARTIFACTS, f));
}

// ---------------------------------------------------------------------------------------------
// What the page did on the network and the console
// ---------------------------------------------------------------------------------------------

/** Failed /api/v1 calls: { step, method, url, status, body } (status 0 = request failed). */
const apiFailures = [];
/** Other failed same-origin responses, failed requests and console errors: listed, not fatal. */
const otherFailures = [];
const consoleErrors = [];
/** Hosts other than the server's that the page tried to reach (listed). */
const externalHosts = new Set();
const pendingBodies = [];
let currentStep = 'startup';

function isApi(url) {
  return url.includes('/api/v1/');
}

function allowed(method, url, status) {
  const { pathname } = new URL(url);
  return ALLOWED_API_FAILURES.some(
    (a) => a.method === method && a.status === status && a.path.test(pathname),
  );
}

function watch(page) {
  page.on('response', (response) => {
    const status = response.status();
    if (status < 400) return;
    const url = response.url();
    const method = response.request().method();
    const entry = { step: currentStep, method, url, status, body: '' };
    pendingBodies.push(
      response
        .text()
        .then((t) => {
          entry.body = t.length > 2000 ? `${t.slice(0, 2000)}…` : t;
        })
        .catch(() => {}),
    );
    if (isApi(url)) {
      if (!allowed(method, url, status)) apiFailures.push(entry);
    } else if (url.startsWith(BASE)) {
      otherFailures.push(entry);
    }
  });
  page.on('requestfailed', async (request) => {
    // A request whose response arrived (and was counted above) can still fail while its body
    // is read, when a navigation aborts it: not a second failure.
    if (await request.response().catch(() => null)) return;
    const url = request.url();
    const entry = {
      step: currentStep,
      method: request.method(),
      url,
      status: 0,
      body: request.failure()?.errorText ?? 'failed',
    };
    // ERR_ABORTED is the browser cancelling its own request: a navigation that leaves the
    // page (the dashboard saves its label colors as it unmounts) or the app's AbortController.
    // The server may well have answered; a server fault shows as a status, a reset or an
    // empty response instead. Listed, not fatal.
    if (isApi(url) && entry.body !== 'net::ERR_ABORTED') apiFailures.push(entry);
    else if (url.startsWith(BASE)) otherFailures.push(entry);
  });
  page.on('request', (request) => {
    const url = request.url();
    if (/^https?:/.test(url) && !url.startsWith(BASE)) externalHosts.add(new URL(url).host);
  });
  page.on('console', (msg) => {
    if (msg.type() === 'error') {
      const loc = msg.location();
      consoleErrors.push({
        step: currentStep,
        text: msg.text(),
        at: loc?.url ? `${loc.url}:${loc.lineNumber}` : '',
      });
    }
  });
  page.on('pageerror', (error) => {
    consoleErrors.push({ step: currentStep, text: `uncaught: ${error.message}`, at: '' });
  });
}

// ---------------------------------------------------------------------------------------------
// Steps
// ---------------------------------------------------------------------------------------------

const results = [];
let shot = 0;

async function screenshot(page, name) {
  shot += 1;
  const file = path.join(ARTIFACTS, `${String(shot).padStart(2, '0')}-${name}.png`);
  try {
    await page.screenshot({ path: file, fullPage: true, timeout: 30_000 });
    return file;
  } catch (e) {
    console.log(`       (screenshot ${file} failed: ${e.message.split('\n')[0]})`);
    return null;
  }
}

/** `LITESET_BROWSER_STEPS=dashboard,sql` runs only the steps whose names start with one of
 *  those (login always runs): for debugging one step. */
const ONLY = (process.env.LITESET_BROWSER_STEPS || '')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);

async function step(page, name, body, recheck) {
  if (name !== 'login' && ONLY.length && !ONLY.some((prefix) => name.startsWith(prefix))) {
    return false;
  }
  currentStep = name;
  const started = Date.now();
  const slug = name.replace(/[^a-z0-9]+/gi, '-').replace(/^-|-$/g, '').toLowerCase();
  try {
    let detail = await body();
    // Let the calls the page makes after it looks done (logging, favourites) finish inside
    // this step, so a navigation by the next one does not abort them.
    await page.waitForLoadState('networkidle', { timeout: 15_000 }).catch(() => {});
    // Error alerts and danger toasts the page showed at any moment of the step (a toast is
    // gone after a few seconds, an error boundary may replace what the step checked).
    const shown = await page.evaluate(() => window.__litesetShown?.splice(0) ?? []).catch(() => []);
    const errors = shown.filter((a) => a.kind === 'error').map((a) => a.text);
    const warnings = shown.filter((a) => a.kind === 'warning').map((a) => a.text);
    if (errors.length) throw new Error(`the page showed: ${errors.join(' | ')}`);
    if (warnings.length) detail = `${detail ?? ''} (warnings shown: ${warnings.join(' | ')})`;
    if (recheck) await recheck();
    const file = await screenshot(page, slug);
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    console.log(`ok   ${name} (${secs} s)${detail ? `: ${detail}` : ''}`);
    if (file) console.log(`       ${file}`);
    results.push({ name, ok: true, detail: detail ?? '' });
    return true;
  } catch (e) {
    const file = await screenshot(page, `${slug}-FAILED`);
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    const shown = await page.evaluate(() => window.__litesetShown?.splice(0) ?? []).catch(() => []);
    const alerts = shown.length
      ? `\n(the page showed: ${shown.map((a) => `${a.kind}: ${a.text}`).join(' | ')})`
      : '';
    const message = `${String(e?.message ?? e)
      .split('\n')
      .slice(0, 6)
      .join('\n')}${alerts}`.replace(/\n/g, '\n       ');
    console.log(`FAIL ${name} (${secs} s): ${message}`);
    if (file) console.log(`       ${file}`);
    results.push({ name, ok: false, detail: message });
    return false;
  }
}

/** Evaluates `expression` in the page until `done(state)` or the step timeout; throws with
 *  the last state described by `describe(state)`. (A string expression rather than a function
 *  with a helper passed in: evaluated through the DevTools protocol, it needs no `eval` from
 *  the page, whatever its Content-Security-Policy says.) */
async function pollPage(page, expression, done, describe, timeout = STEP_TIMEOUT) {
  const deadline = Date.now() + timeout;
  let state;
  for (;;) {
    state = await page.evaluate(expression);
    if (done(state)) return state;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeout} ms: ${describe(state)}`);
    await page.waitForTimeout(500);
  }
}

/**
 * Runs in the page: the state of one rendered chart area. `root` holds the chart (a dashboard
 * chart holder, Explore's chart panel). Superset's production build strips `data-test`
 * attributes, so this goes by class names and ARIA roles.
 */
function chartState(root) {
  if (!root) return { present: false };
  const visible = (el) => !!el && el.getClientRects().length > 0;
  const text = (el) => (el?.innerText ?? '').trim().replace(/\s+/g, ' ').slice(0, 300);
  const errorEl = [
    ...root.querySelectorAll(
      '.ant-alert-error, .ant-alert-warning, [role="alert"], .anticon-exclamation-circle, ' +
        '.anticon-warning, .ant-empty, .missing-chart-container',
    ),
  ].find(visible);
  const loadingEl = [
    ...root.querySelectorAll(
      '.loading, [aria-label="Loading"], [role="status"], .ant-spin-spinning, .ant-skeleton',
    ),
  ].find(visible);
  const container = root.querySelector('.slice_container');
  const drawn = container
    ? [...container.querySelectorAll('canvas, table, svg')].filter(
        (el) => visible(el) && !el.closest('.anticon'),
      )
    : [];
  const canvasSize = drawn
    .filter((el) => el.tagName === 'CANVAS')
    .map((c) => `${c.width}x${c.height}`);
  const content = text(container);
  return {
    present: true,
    error: errorEl ? text(errorEl.closest('.ant-alert') ?? errorEl) || errorEl.className : null,
    loading: !!loadingEl,
    rendered: drawn.length > 0 || content.length > 0,
    kinds: [...new Set(drawn.map((el) => el.tagName.toLowerCase()))],
    canvasSize,
    content: content.slice(0, 80),
  };
}

function chartOk(s) {
  return s.present && !s.error && !s.loading && s.rendered;
}

function describeChart(s) {
  if (!s.present) return 'no chart area';
  if (s.error) return `error: ${s.error}`;
  if (s.loading) return 'still loading';
  if (!s.rendered) return 'nothing rendered';
  return `rendered ${s.kinds.join('+') || 'text'}`;
}

/** Every dashboard chart holder's state (see chartState), in page order. */
const dashboardProbe = `[
  ...document.querySelectorAll('.dashboard-component-chart-holder'),
].map((h) => {
  // Dashboard virtualisation renders only the charts in view: bring each into view.
  h.scrollIntoView({ block: 'center' });
  const slice = h.querySelector('.chart-slice');
  return {
    id: slice?.getAttribute('data-test-chart-id'),
    name: slice?.getAttribute('data-test-chart-name'),
    viz: slice?.getAttribute('data-test-viz-type'),
    ...(${chartState})(h),
  };
})`;

/** Set by the dashboard step: the charts `/api/v1/dashboard/<slug>/charts` lists. */
let charts = [];

function dashboardOk(states) {
  return states.length === charts.length && states.every(chartOk);
}

function describeDashboard(states) {
  return (
    `${states.length} of ${charts.length} charts on the page; ` +
    states.map((c) => `${c.name} (${c.viz}): ${describeChart(c)}`).join('; ')
  );
}

/** GET an /api/v1 path with the page's session (cookies), as JSON. */
async function api(page, pathAndQuery) {
  const response = await page.request.get(`${BASE}${pathAndQuery}`);
  if (!response.ok()) {
    throw new Error(`GET ${pathAndQuery}: ${response.status()} ${await response.text()}`);
  }
  return response.json();
}

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
const context = await browser.newContext({
  viewport: { width: 1440, height: 1000 },
  locale: 'en-US',
  timezoneId: 'UTC',
});
context.setDefaultTimeout(STEP_TIMEOUT);
context.setDefaultNavigationTimeout(STEP_TIMEOUT);
await context.tracing.start({ screenshots: true, snapshots: true });
// Records every error alert / danger toast (and warning) that appears, for step().
await context.addInitScript(() => {
  window.__litesetShown = [];
  const seen = new Set();
  let pending = false;
  const scan = () => {
    pending = false;
    const sel = '.toast--danger, .toast--warning, .ant-alert-error, .ant-alert-warning';
    for (const el of document.querySelectorAll(sel)) {
      const text = (el.innerText || '').trim().replace(/\s+/g, ' ').slice(0, 300);
      const kind = el.matches('.toast--danger, .ant-alert-error') ? 'error' : 'warning';
      if (!text || seen.has(kind + text)) continue;
      seen.add(kind + text);
      window.__litesetShown.push({ kind, text });
    }
  };
  new MutationObserver(() => {
    if (!pending) {
      pending = true;
      setTimeout(scan, 50);
    }
  }).observe(document, { subtree: true, childList: true });
});
const page = await context.newPage();
watch(page);

const loggedIn = await step(page, 'login', async () => {
  await page.goto(`${BASE}/login/`);
  const username = page.locator('input#username');
  await username.waitFor({ state: 'visible' });
  await username.fill(USER);
  await page.locator('input#password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/superset\/welcome\/?(\?.*)?$/);
  const me = await api(page, '/api/v1/me/');
  if (me.result?.username !== USER) {
    throw new Error(`/api/v1/me/ names ${JSON.stringify(me.result?.username)}, not ${USER}`);
  }
  // What the welcome page shows (and whether it crashes) is the next step's business.
  await page.evaluate(() => window.__litesetShown?.splice(0));
  return `on ${new URL(page.url()).pathname} as ${me.result.username}`;
});

if (loggedIn) {
  await step(page, 'welcome page', async () => {
    if (!/\/superset\/welcome\//.test(page.url())) await page.goto(`${BASE}/superset/welcome/`);
    // Its sections (Recents, Dashboards, Charts, Saved queries) once the lists have loaded.
    for (const section of ['Recents', 'Dashboards', 'Charts']) {
      await page.getByText(section, { exact: true }).first().waitFor({ state: 'visible' });
    }
    return 'sections shown';
  });

  if (EXAMPLES) {
    await step(page, 'dashboard list', async () => {
      await page.goto(`${BASE}/dashboard/list/`);
      const link = page.getByRole('link', { name: DASHBOARD_TITLE, exact: true }).first();
      await link.waitFor({ state: 'visible' });
      return `"${DASHBOARD_TITLE}" listed`;
    });

    await step(page, 'dashboard', async () => {
      charts = (await api(page, `/api/v1/dashboard/${DASHBOARD_SLUG}/charts`)).result;
      if (!charts?.length) throw new Error(`/api/v1/dashboard/${DASHBOARD_SLUG}/charts lists none`);
      // Opened by clicking it in the list when the list step left it there, else by URL.
      const link = page.getByRole('link', { name: DASHBOARD_TITLE, exact: true }).first();
      if (page.url().includes('/dashboard/list') && (await link.isVisible().catch(() => false))) {
        await link.click();
        await page.waitForURL(/\/superset\/dashboard\/[^/]+\/?/);
      } else {
        await page.goto(`${BASE}/superset/dashboard/${DASHBOARD_SLUG}/`);
      }
      await page.getByText(DASHBOARD_TITLE, { exact: true }).first().waitFor({ state: 'visible' });
      const holders = page.locator('.dashboard-component-chart-holder');
      await holders.first().waitFor({ state: 'visible' });
      const states = await pollPage(page, dashboardProbe, dashboardOk, describeDashboard);
      await page.evaluate(() => window.scrollTo(0, 0));
      return `${states.length} charts rendered: ${states
        .map((c) => `${c.name} (${c.viz}, ${c.kinds.join('+') || 'text'})`)
        .join(', ')}`;
    }, async () => {
      // Still all there once the page has settled (nothing replaced them since).
      await pollPage(page, dashboardProbe, dashboardOk, describeDashboard, 15_000);
      await page.evaluate(() => window.scrollTo(0, 0));
    });

    const toExplore = charts.length ? charts : [];
    const exploreWanted =
      !ONLY.length || ONLY.some((p) => p.startsWith('explore') || 'explore'.startsWith(p));
    if (!toExplore.length && exploreWanted) {
      results.push({ name: 'explore', ok: false, detail: 'no charts known (dashboard step)' });
      console.log('FAIL explore: no charts known (dashboard step failed)');
    }
    for (const chart of toExplore) {
      await step(page, `explore ${chart.slice_name}`, async () => {
        await page.goto(`${BASE}/explore/?slice_id=${chart.id}`);
        await page.getByText(chart.slice_name, { exact: true }).first().waitFor({ state: 'visible' });
        // Explore's chart panel is the outermost .chart-container; the chart itself (or its
        // error, which replaces it) is inside.
        const state = await pollPage(
          page,
          `(${chartState})(document.querySelector('.chart-container'))`,
          chartOk,
          describeChart,
        );
        return `${chart.form_data?.viz_type ?? ''} rendered (${state.kinds.join('+') || 'text'})`;
      });
    }

    await step(page, 'sql lab', async () => {
      await page.goto(`${BASE}/sqllab/`);
      const editor = page.locator('.ace_editor').first();
      await editor.waitFor({ state: 'visible' });
      const dbSelect = page.getByRole('combobox', {
        name: 'Select database or type to search databases',
      });
      await dbSelect.first().waitFor({ state: 'attached' });
      // The selector shows the chosen database; pick the example one unless it already is.
      const chosen = page.locator('.ant-select').filter({ has: dbSelect }).first();
      if (!(await chosen.innerText()).includes(EXAMPLE_DATABASE)) {
        await chosen.click();
        await page
          .locator('.ant-select-item-option')
          .filter({ hasText: EXAMPLE_DATABASE })
          .first()
          .click();
        await page.waitForFunction(
          ([db]) =>
            [...document.querySelectorAll('.ant-select')].some(
              (s) =>
                s.querySelector('[aria-label="Select database or type to search databases"]') &&
                s.innerText.includes(db),
            ),
          [EXAMPLE_DATABASE],
        );
      }
      await editor.click();
      await page.keyboard.press('ControlOrMeta+A');
      await page.keyboard.press('Delete');
      await page.keyboard.insertText(SQL);
      await page.keyboard.press('Escape'); // an autocomplete popup, if any
      await page.keyboard.press('Control+Enter');
      const cell = page.getByRole('gridcell', { name: 'liteset', exact: true }).first();
      const stop = page.locator('button').filter({ hasText: /^\s*Stop\s*$/ }).first();
      // Ctrl+Enter runs it (the Run button turns into Stop while it runs); when neither that
      // nor a result shows, focus was elsewhere and the Run button does it.
      const started = await cell
        .or(stop)
        .first()
        .waitFor({ state: 'visible', timeout: 15_000 })
        .then(() => true)
        .catch(() => false);
      if (!started) await page.locator('button').filter({ hasText: /^\s*Run\s*$/ }).first().click();
      await cell.waitFor({ state: 'visible' });
      await page
        .getByRole('columnheader', { name: 'word' })
        .first()
        .waitFor({ state: 'visible' });
      return `ran ${JSON.stringify(SQL)} on ${EXAMPLE_DATABASE}: row with "liteset" in the grid`;
    });
  }

  if (process.env.LITESET_VIZ_WATERFALL) {
    const { vizFlows } = await import('./chart_app.mjs');
    await vizFlows({ page, step, api, base: BASE, pollPage });
  }

  if (PG) {
    const { flows } = await import('./flows.mjs');
    await flows({ page, context, step, api, base: BASE, pg: PG });
  }
}

currentStep = 'end';
await page.waitForLoadState('networkidle', { timeout: 10_000 }).catch(() => {});
await Promise.all(pendingBodies);
await context.tracing.stop({ path: path.join(ARTIFACTS, 'trace.zip') }).catch(() => {});
await browser.close();

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

const apiOk = apiFailures.length === 0;
results.push({
  name: 'no failed /api/v1 calls',
  ok: apiOk,
  detail: apiOk ? '' : `${apiFailures.length} failed`,
});
console.log(`${apiOk ? 'ok  ' : 'FAIL'} no failed /api/v1 calls`);
if (!apiOk) {
  console.log('\nFailed /api/v1 calls (not on ALLOWED_API_FAILURES):');
  for (const f of apiFailures) {
    console.log(`  [${f.step}] ${f.method} ${f.url} -> ${f.status || 'request failed'}`);
    if (f.body) console.log(`      ${f.body.replace(/\s+/g, ' ').slice(0, 600)}`);
  }
}
if (otherFailures.length) {
  console.log('\nOther failed requests (listed, not fatal):');
  for (const f of otherFailures) {
    console.log(`  [${f.step}] ${f.method} ${f.url} -> ${f.status || 'request failed'}`);
    if (f.body) console.log(`      ${f.body.replace(/\s+/g, ' ').slice(0, 300)}`);
  }
}
if (consoleErrors.length) {
  console.log('\nConsole errors (listed, not fatal):');
  for (const c of consoleErrors) {
    console.log(`  [${c.step}] ${c.text.slice(0, 500)}${c.at ? ` (${c.at})` : ''}`);
  }
}
if (externalHosts.size) {
  console.log(`\nOther hosts the page tried to reach: ${[...externalHosts].sort().join(', ')}`);
}
fs.writeFileSync(
  path.join(ARTIFACTS, 'report.json'),
  JSON.stringify(
    { results, apiFailures, otherFailures, consoleErrors, externalHosts: [...externalHosts] },
    null,
    2,
  ),
);
const passed = results.filter((r) => r.ok).length;
const failed = results.length - passed;
console.log(`\nartifacts: ${ARTIFACTS}`);
console.log(`browser: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
