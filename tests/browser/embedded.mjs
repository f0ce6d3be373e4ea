// An embedded dashboard, as a SaaS product shows one: a host page on another origin uses
// `@superset-ui/embedded-sdk` (npm) to frame Superset 6.0's own embedded app served by Liteset,
// hands it a guest token whose row-level clause keeps one tenant's rows, and the chart shows
// only those rows. A host page on an origin outside the dashboard's allowed domains is refused.
//
//   LITESET_URL=http://127.0.0.1:8088 LITESET_EMBED_UUID=… LITESET_GUEST_TOKEN=… \
//   LITESET_HOST_PORT=9001 LITESET_OTHER_PORT=9002 LITESET_SEEN=acme LITESET_UNSEEN=bolt,cyan \
//   LITESET_BROWSER_ARTIFACTS=/tmp/browser node tests/browser/embedded.mjs
//
// The host pages are served here, on localhost (another site than 127.0.0.1, so the frame is
// a third-party one, as on a real customer's site). Every /api/v1 call the embedded app makes
// must succeed. Exit status 0 only when every check passed; the last line is
// `embedded: N passed, M failed`. Run by tests/tests/browser.rs.

import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';

const require = createRequire(import.meta.url);

function required(name) {
  const value = process.env[name];
  if (!value) {
    console.error(`embedded.mjs: ${name} is not set`);
    process.exit(2);
  }
  return value;
}

const BASE = required('LITESET_URL').replace(/\/+$/, '');
const UUID = required('LITESET_EMBED_UUID');
const TOKEN = required('LITESET_GUEST_TOKEN');
const HOST_PORT = Number(required('LITESET_HOST_PORT'));
const OTHER_PORT = Number(required('LITESET_OTHER_PORT'));
const SEEN = required('LITESET_SEEN').split(',');
const UNSEEN = required('LITESET_UNSEEN').split(',');
const ARTIFACTS = required('LITESET_BROWSER_ARTIFACTS');
const CHROMIUM = process.env.LITESET_CHROMIUM || '/usr/bin/chromium';
const STEP_TIMEOUT = Number(process.env.LITESET_BROWSER_STEP_TIMEOUT_MS || 90_000);

fs.mkdirSync(ARTIFACTS, { recursive: true });

// The SDK's browser bundle (UMD: `window.supersetEmbeddedSdk`), from the npm package.
const SDK = fs.readFileSync(require.resolve('@superset-ui/embedded-sdk/bundle/index.js'));

/** The host page: the SDK embeds the dashboard, and the token comes from "our backend". */
function hostPage() {
  return `<!doctype html><html><head><meta charset="utf-8"><title>Host app</title>
<style>#mount iframe{width:1200px;height:760px;border:1px solid #ccc}</style>
<script src="/sdk.js"></script></head>
<body><h1>Customer portal</h1><div id="mount" style="width:1200px;height:800px"></div>
<script>
  window.__embedState = 'starting';
  supersetEmbeddedSdk.embedDashboard({
    id: ${JSON.stringify(UUID)},
    supersetDomain: ${JSON.stringify(BASE)},
    mountPoint: document.getElementById('mount'),
    fetchGuestToken: async () => ${JSON.stringify(TOKEN)},
    dashboardUiConfig: { hideTitle: false, filters: { expanded: false } },
  }).then(() => { window.__embedState = 'embedded'; },
          (e) => { window.__embedState = 'failed: ' + e; });
</script></body></html>`;
}

function serveHost(port) {
  const server = http.createServer((req, res) => {
    if (req.url === '/sdk.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' });
      res.end(SDK);
    } else {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(hostPage());
    }
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

const results = [];
async function check(name, body) {
  const started = Date.now();
  try {
    await body();
    results.push({ name, ok: true });
    console.log(`ok     ${name} (${Date.now() - started} ms)`);
  } catch (e) {
    results.push({ name, ok: false, error: String(e?.stack || e) });
    console.log(`FAILED ${name}: ${String(e?.message || e).split('\n')[0]}`);
  }
}

const hosts = [await serveHost(HOST_PORT), await serveHost(OTHER_PORT)];
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
const context = await browser.newContext({ viewport: { width: 1300, height: 950 } });
context.setDefaultTimeout(STEP_TIMEOUT);
context.setDefaultNavigationTimeout(STEP_TIMEOUT);

/** Every answer of the server to the pages: { url, status, method }. */
const answers = [];
const apiFailures = [];
context.on('response', (r) => {
  const url = r.url();
  if (!url.startsWith(BASE)) return;
  const entry = { method: r.request().method(), url, status: r.status() };
  answers.push(entry);
  if (url.includes('/api/v1/') && r.status() >= 400) apiFailures.push(entry);
});

const page = await context.newPage();
const consoleErrors = [];
page.on('console', (m) => {
  if (m.type() === 'error') consoleErrors.push(m.text());
});

await check('the allowed host page embeds the dashboard and shows only its rows', async () => {
  await page.goto(`http://localhost:${HOST_PORT}/`);
  await page.waitForFunction(() => window.__embedState !== 'starting', null, {
    timeout: STEP_TIMEOUT,
  });
  const state = await page.evaluate(() => window.__embedState);
  if (state !== 'embedded') throw new Error(`embedDashboard: ${state}`);
  const frame = page.frameLocator('#mount iframe');
  // The table chart's cells: every tenant the token allows, none other.
  for (const tenant of SEEN) {
    await frame.locator('td', { hasText: tenant }).first().waitFor({ state: 'visible' });
  }
  const cells = await frame.locator('td').allInnerTexts();
  for (const tenant of UNSEEN) {
    if (cells.some((c) => c.includes(tenant))) {
      throw new Error(`the chart shows ${tenant}'s rows: ${cells.join(' | ')}`);
    }
  }
  const embedded = answers.find((a) => a.url.startsWith(`${BASE}/embedded/${UUID}`));
  if (!embedded || embedded.status !== 200) {
    throw new Error(`/embedded/${UUID} answered ${embedded?.status}`);
  }
  const data = answers.filter((a) => a.url.includes('/api/v1/chart/data') && a.status === 200);
  if (!data.length) throw new Error('no chart data was loaded');
  if (apiFailures.length) {
    throw new Error(`failed API calls: ${JSON.stringify(apiFailures)}`);
  }
  await page.screenshot({ path: path.join(ARTIFACTS, 'embedded-allowed.png') });
});

await check('a host page on another origin is refused', async () => {
  const before = answers.length;
  const other = await context.newPage();
  await other.goto(`http://localhost:${OTHER_PORT}/`);
  // The frame's own request is refused (Superset's Referer check); nothing else is asked.
  await other.waitForFunction(
    ([base, uuid]) =>
      performance
        .getEntriesByType('resource')
        .some((e) => e.name.startsWith(`${base}/embedded/${uuid}`)),
    [BASE, UUID],
    { timeout: STEP_TIMEOUT },
  ).catch(() => {});
  await other.waitForTimeout(2000);
  const mine = answers.slice(before);
  const framed = mine.find((a) => a.url.startsWith(`${BASE}/embedded/${UUID}`));
  if (!framed || framed.status !== 403) {
    throw new Error(`/embedded/${UUID} from the other origin answered ${framed?.status}`);
  }
  const data = mine.filter((a) => a.url.includes('/api/v1/'));
  if (data.length) throw new Error(`the refused frame still called ${JSON.stringify(data)}`);
  await other.screenshot({ path: path.join(ARTIFACTS, 'embedded-refused.png') });
  await other.close();
});

await browser.close();
for (const h of hosts) h.close();
fs.writeFileSync(
  path.join(ARTIFACTS, 'embedded-report.json'),
  JSON.stringify({ results, answers, consoleErrors }, null, 2),
);
const failed = results.filter((r) => !r.ok);
for (const f of failed) console.log(`\n--- ${f.name}\n${f.error}`);
if (failed.length) console.log(`console errors: ${JSON.stringify(consoleErrors.slice(0, 20))}`);
console.log(`embedded: ${results.length - failed.length} passed, ${failed.length} failed`);
process.exit(failed.length ? 1 : 0);
