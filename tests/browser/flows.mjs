// The everyday flows of Superset's web app, done as a person does them, against a PostgreSQL
// analytics database (`LITESET_PG_HOST`, `_PORT`, `_DB`, `_USER`) holding `flows_orders`:
// connect it through the URI form and through the PostgreSQL form; create a dataset from the
// table; build a chart in Explore and save it to a new dashboard; edit that dashboard (title,
// a Markdown element, an existing chart dragged in) and save; add a native filter, save it,
// apply a value and see the chart re-query; SQL Lab: pick the database by typing, run, save
// the query, see it in saved queries and in the query history; export the chart's CSV from
// its menu; delete a chart from the chart list.
//
// Each flow is a `step` of spa.mjs: it fails on any /api/v1 answer >= 400 and on an error
// the page shows, and leaves a screenshot. A flow checks what the server stored through the
// REST API, not only what the page shows.

const TABLE = 'flows_orders';
const URI_DB = 'Orders by URI';
const FORM_DB = 'Orders by form';
const CHART = 'Orders by region';
const DRAGGED_CHART = 'Orders total';
const DASHBOARD = 'Flows dashboard';
const EDITED_TITLE = 'Flows dashboard, edited';
const SAVED_QUERY = 'Orders per region';
const QUERY_SQL = `SELECT region, SUM(amount) AS total FROM ${TABLE} GROUP BY region ORDER BY region`;

/**
 * Runs the flows. `t` carries spa.mjs's helpers: `{ page, context, step, api, base, pg }`
 * with `pg = { host, port, db, user }`.
 */
export async function flows(t) {
  const { page, context, step, api, base, pg } = t;
  const select = (name) => page.locator('.ant-select-item-option').filter({ hasText: name }).first();
  const toast = (text) => page.locator('.toast--success, [role=alert]').filter({ hasText: text });
  const ids = {};

  /**
   * Opens a dashboard and waits for it to settle: after loading, the page stores its filter
   * state and puts the key in the URL, and a URL change while the dashboard is being edited
   * asks "Save changes to your dashboard?". A person starts editing after that; so does this.
   */
  async function openDashboard(id) {
    await page.goto(`${base}/superset/dashboard/${id}/`);
    await page.waitForURL(/native_filters_key=/, { timeout: 15_000 }).catch(() => {});
  }

  /** A write through the API with the page's session, for what a flow needs set up. */
  async function apiWrite(method, path, data) {
    const csrf = (await api(page, '/api/v1/security/csrf_token/')).result;
    const response = await page.request.fetch(`${base}${path}`, {
      method,
      headers: { 'X-CSRFToken': csrf },
      data,
    });
    if (!response.ok()) {
      throw new Error(`${method} ${path}: ${response.status()} ${await response.text()}`);
    }
    return response.json();
  }

  /**
   * Opens a dropdown with `open()` and clicks its option `name`. A dropdown opened while its
   * list was still loading can stay empty when the list arrives; then it is closed and opened
   * again, as a person would.
   */
  async function pick(open, name, attempts = 3) {
    for (let i = 1; ; i += 1) {
      await open();
      try {
        await select(name).waitFor({ state: 'visible', timeout: 15000 });
        await select(name).click();
        return;
      } catch (e) {
        if (i >= attempts) throw e;
        await page.keyboard.press('Escape');
      }
    }
  }

  async function databaseNamed(name) {
    const q = `(filters:!((col:database_name,opr:eq,value:'${name}')))`;
    return (await api(page, `/api/v1/database/?q=${encodeURIComponent(q)}`)).result[0];
  }

  async function openDatabaseDialog() {
    await page.goto(`${base}/databaseview/list/`);
    await page.getByRole('button', { name: /Database/ }).first().click();
    const modal = page.locator('.ant-modal').filter({ hasText: 'Connect a database' }).first();
    await modal.waitFor();
    await modal.getByText('PostgreSQL', { exact: true }).click();
    return modal;
  }

  await step(page, 'flow: connect a database by URI', async () => {
    const modal = await openDatabaseDialog();
    await modal.getByText('Connect this database with a SQLAlchemy URI string instead').click();
    await modal.locator('input[name="database_name"]').fill(URI_DB);
    await modal
      .locator('input[name="sqlalchemy_uri"]')
      .fill(`postgresql://${pg.user}@${pg.host}:${pg.port}/${pg.db}`);
    await modal.getByRole('button', { name: 'Test connection' }).click();
    await toast('Connection looks good!').first().waitFor();
    await modal.getByRole('button', { name: 'Connect', exact: true }).click();
    await modal.waitFor({ state: 'hidden' });
    const db = await databaseNamed(URI_DB);
    if (!db) throw new Error(`${URI_DB} is not in the database list`);
    ids.uriDb = db.id;
    return `"${URI_DB}" connected (id ${db.id})`;
  });

  await step(page, 'flow: connect a database with the PostgreSQL form', async () => {
    const modal = await openDatabaseDialog();
    // Each field is checked as it loses focus (`validate_parameters`, 422 while fields are
    // still missing, as in Superset); the dialog disables its inputs while a check runs, so
    // each field is filled once the previous check has answered.
    for (const [name, value] of [
      ['host', pg.host],
      ['port', String(pg.port)],
      ['database', pg.db],
      ['username', pg.user],
      ['password', 'form-password-1'],
      ['database_name', FORM_DB],
    ]) {
      const input = modal.locator(`input[name="${name}"]`);
      for (let i = 0; i < 5 && (await input.inputValue()) !== value; i++) {
        await input.fill(value);
        await page.waitForLoadState('networkidle');
      }
      if ((await input.inputValue()) !== value) throw new Error(`the ${name} field kept no value`);
    }
    // The dialog's Connect checks the form once more and then creates the database; a click
    // that lands while a blur-triggered check is running only runs that check (the app's own
    // race), so click until the database exists.
    const connect = modal.getByRole('button', { name: 'Connect', exact: true });
    for (let i = 0; i < 3 && !(await databaseNamed(FORM_DB)); i++) {
      await page.waitForFunction((el) => el && !el.disabled, await connect.elementHandle());
      await connect.click();
      await modal.getByText('Database connected').waitFor({ timeout: 5_000 }).catch(() => {});
    }
    // Step 3 of 3: "Database connected", with its advanced settings; Finish closes it.
    await modal.getByText('Database connected').waitFor();
    await modal.getByRole('button', { name: 'Finish' }).click();
    await modal.waitFor({ state: 'hidden' });
    const db = await databaseNamed(FORM_DB);
    if (!db) throw new Error(`${FORM_DB} is not in the database list`);
    const shown = (await api(page, `/api/v1/database/${db.id}/connection`)).result;
    if (shown.configuration_method !== 'dynamic_form' || shown.parameters?.host !== pg.host) {
      throw new Error(`stored as ${JSON.stringify(shown.configuration_method)}, ${JSON.stringify(shown.parameters)}`);
    }
    if (shown.parameters.password !== 'XXXXXXXXXX') throw new Error('the password is not masked');
    ids.formDb = db.id;
    return `"${FORM_DB}" connected from host, port, database, user and password`;
  });

  await step(page, 'flow: create a dataset from a table', async () => {
    await page.goto(`${base}/dataset/add/`);
    const dbSelect = page.getByRole('combobox', { name: 'Select database or type to search databases' });
    await pick(() => page.locator('.ant-select').filter({ has: dbSelect }).first().click(), FORM_DB);
    const table = page.getByRole('combobox', { name: 'Select table or type to search tables' });
    await pick(() => page.locator('.ant-select').filter({ has: table }).first().click(), TABLE);
    await page.getByRole('button', { name: 'Create and explore dataset' }).click();
    await page.waitForURL(/\/chart\/add/);
    const q = `(filters:!((col:table_name,opr:eq,value:${TABLE})))`;
    const ds = (await api(page, `/api/v1/dataset/?q=${encodeURIComponent(q)}`)).result[0];
    if (!ds) throw new Error(`no dataset ${TABLE}`);
    ids.dataset = ds.id;
    return `dataset ${TABLE} (id ${ds.id}), on to choosing a chart type`;
  });

  await step(page, 'flow: build a chart in Explore and save it to a new dashboard', async () => {
    if (!page.url().includes('/chart/add')) await page.goto(`${base}/chart/add/?dataset=${TABLE}`);
    await page.getByText('Table', { exact: true }).last().click();
    // Explore stores its first state (POST /explore/form_data) from a debounced history
    // update; a change made before that leaves the page a PUT without a key (405, in Superset
    // too). A person waits for the page to settle: so does this.
    const stored = page.waitForResponse(
      (r) => r.request().method() === 'POST' && /\/api\/v1\/explore\/form_data/.test(r.url()),
    );
    await page.getByRole('button', { name: 'Create new chart' }).click();
    await page.waitForURL(/\/explore\//);
    await page.getByText('Dimensions', { exact: true }).first().waitFor();
    await stored;
    const option = (name) =>
      page.locator('[draggable="true"]').filter({ hasText: new RegExp(`^${name.replace(/[()*]/g, '\\$&')}$`) }).first();
    await option('region').dragTo(page.getByText('Drop columns here or click').first());
    await option('COUNT(*)').dragTo(page.getByText('Drop columns/metrics here or click').first());
    await page.getByRole('button', { name: 'Create chart' }).click();
    await page.locator('.chart-container').getByText('north', { exact: true }).first().waitFor();
    // The dashboard picker offers a typed name as a new dashboard once its list has loaded;
    // typed earlier, the list's arrival leaves "No data". Type after it.
    const listed = page.waitForResponse(
      (r) => r.request().method() === 'GET' && /\/api\/v1\/dashboard\/\?q=/.test(r.url()),
    );
    await page.locator('button').filter({ hasText: /^\s*Save\s*$/ }).first().click();
    const modal = page.locator('.ant-modal').filter({ hasText: 'Save chart' }).first();
    await modal.locator('input[name="new_slice_name"]').fill(CHART);
    await modal.getByRole('combobox').last().click();
    await listed;
    // Even after the list's response, the picker may render it after the typed text and show
    // "No data" (seen on the SQLite store's faster answers): a person then types it again.
    for (let attempt = 1; ; attempt++) {
      await page.keyboard.type(DASHBOARD);
      const offered = await select(DASHBOARD)
        .waitFor({ timeout: 5_000 })
        .then(() => true, () => false);
      if (offered || attempt === 3) break;
      await page.keyboard.press('Control+A');
      await page.keyboard.press('Backspace');
      await page.waitForTimeout(500);
    }
    await select(DASHBOARD).click();
    await modal.getByRole('button', { name: 'Save & go to dashboard' }).click();
    await page.waitForURL(/\/superset\/dashboard\//);
    await page.locator('.dashboard-component-chart-holder').getByText('north', { exact: true }).first().waitFor();
    const q = `(filters:!((col:dashboard_title,opr:eq,value:'${DASHBOARD}')))`;
    const dash = (await api(page, `/api/v1/dashboard/?q=${encodeURIComponent(q)}`)).result[0];
    if (!dash) throw new Error(`no dashboard "${DASHBOARD}"`);
    ids.dashboard = dash.id;
    const charts = (await api(page, `/api/v1/dashboard/${dash.id}/charts`)).result;
    if (charts.map((c) => c.slice_name).join() !== CHART) {
      throw new Error(`the dashboard's charts: ${charts.map((c) => c.slice_name)}`);
    }
    ids.chart = charts[0].id;
    return `"${CHART}" saved on the new dashboard "${DASHBOARD}" (id ${dash.id}), rendered`;
  });

  await step(page, 'flow: edit the dashboard (title, Markdown, drag a chart in) and save', async () => {
    const other = await apiWrite('POST', '/api/v1/chart/', {
      slice_name: DRAGGED_CHART,
      viz_type: 'big_number_total',
      datasource_id: ids.dataset,
      datasource_type: 'table',
      params: JSON.stringify({
        viz_type: 'big_number_total',
        datasource: `${ids.dataset}__table`,
        metric: 'count',
      }),
    });
    ids.dragged = other.id;
    await openDashboard(ids.dashboard);
    await page.locator('.dashboard-component-chart-holder').first().waitFor();
    await page.getByRole('button', { name: 'Edit dashboard' }).click();
    const title = page.getByRole('textbox', { name: 'Dashboard title' });
    await title.click();
    await title.fill(EDITED_TITLE);
    await title.press('Enter');
    // Drag and drop with the mouse: react-dnd's HTML5 backend sees the browser's own drag.
    async function drag(source, target, dx, dy) {
      const box = await target.boundingBox();
      await source.hover();
      await page.mouse.down();
      await page.mouse.move(box.x + dx(box), box.y + dy(box), { steps: 10 });
      await page.mouse.move(box.x + dx(box) + 5, box.y + dy(box) + 5, { steps: 5 });
      await page.mouse.up();
    }
    const card = page.locator('[draggable="true"]').filter({ hasText: DRAGGED_CHART }).first();
    await drag(card, page.locator('.grid-row').first(), (b) => b.width - 100, () => 60);
    await page.locator('.dashboard-component-chart-holder').nth(1).waitFor();
    await page.getByRole('tab', { name: 'Layout elements' }).click();
    const text = page.locator('[draggable="true"]').filter({ hasText: /^Text/ }).first();
    await drag(text, page.locator('.grid-content').first(), () => 200, (b) => b.height - 10);
    await page.locator('.dashboard-markdown').first().waitFor();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('button', { name: 'Edit dashboard' }).waitFor();
    const dash = (await api(page, `/api/v1/dashboard/${ids.dashboard}`)).result;
    const charts = (await api(page, `/api/v1/dashboard/${ids.dashboard}/charts`)).result
      .map((c) => c.slice_name)
      .sort();
    if (dash.dashboard_title !== EDITED_TITLE) throw new Error(`title ${dash.dashboard_title}`);
    if (charts.join() !== [CHART, DRAGGED_CHART].sort().join()) {
      throw new Error(`the dashboard's charts after the save: ${charts}`);
    }
    const layout = JSON.parse(dash.position_json || '{}');
    if (!Object.values(layout).some((e) => e?.type === 'MARKDOWN')) {
      throw new Error(`no Markdown element in the saved layout: ${dash.position_json}`);
    }
    return `title, Markdown and "${DRAGGED_CHART}" saved; charts: ${charts.join(', ')}`;
  });

  await step(page, 'flow: add a native filter, save, apply a value', async () => {
    await openDashboard(ids.dashboard);
    const holder = page.locator('.dashboard-component-chart-holder').filter({ hasText: CHART }).first();
    await holder.getByText('south', { exact: true }).first().waitFor();
    const bar = page.locator('[role="button"]').filter({ has: page.locator('[aria-label="filter"]') });
    if (await bar.first().isVisible().catch(() => false)) await bar.first().click();
    await page.locator('.anticon-setting:visible').first().click();
    await page.locator('[role=menuitem]').filter({ hasText: /filters/i }).first().click();
    const modal = page.locator('.ant-modal').filter({ hasText: 'Add and edit filters' }).first();
    await modal.waitFor();
    await modal.locator('input[id$="_name"]').first().fill('Region');
    await modal.getByRole('combobox', { name: 'Column select' }).click();
    await page.locator('.ant-select-item-option').filter({ hasText: /^region$/ }).first().click();
    // The dialog closes before its PUT has answered: read the stored filters after it.
    const saved = page.waitForResponse(
      (r) => r.request().method() === 'PUT' && /\/api\/v1\/dashboard\/\d+\/filters/.test(r.url()),
    );
    await modal.getByRole('button', { name: 'Save', exact: true }).click();
    await saved;
    await modal.waitFor({ state: 'hidden' });
    const meta = JSON.parse((await api(page, `/api/v1/dashboard/${ids.dashboard}`)).result.json_metadata);
    const names = (meta.native_filter_configuration ?? []).map((f) => f.name);
    if (names.join() !== 'Region') throw new Error(`saved filters: ${JSON.stringify(names)}`);
    // Apply `north`: the chart queries again with the filter and shows north only.
    // The filter's picker, once the bar has drawn it (its placeholder is "Select…" or, once its
    // values have loaded, "2 options").
    await page.getByText('Region', { exact: true }).first().waitFor();
    const box = page.locator('[aria-label="Region"], .ant-select').filter({ visible: true }).first();
    await box.waitFor();
    await box.click();
    await select('north').click();
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await holder.getByText('south', { exact: true }).waitFor({ state: 'detached' });
    await holder.getByText('north', { exact: true }).first().waitFor();
    return 'filter "Region" saved; with north applied the chart shows north only';
  });

  await step(page, 'flow: SQL Lab: pick the database, run, save the query, see history', async () => {
    await page.goto(`${base}/sqllab/`);
    const editor = page.locator('.ace_editor').first();
    await editor.waitFor({ state: 'visible' });
    const dbSelect = page.getByRole('combobox', { name: 'Select database or type to search databases' });
    // Typing searches the databases through the REST list.
    await pick(async () => {
      await page.locator('.ant-select').filter({ has: dbSelect }).first().click();
      await page.keyboard.type(URI_DB.slice(0, 9));
    }, URI_DB);
    await editor.click();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.press('Delete');
    await page.keyboard.insertText(QUERY_SQL);
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+Enter');
    await page.getByRole('gridcell', { name: 'south', exact: true }).first().waitFor();
    await page.locator('button').filter({ hasText: /^\s*Save\s*$/ }).first().click();
    const modal = page.locator('.ant-modal').filter({ hasText: /Save query/i }).first();
    await modal.waitFor();
    await modal.locator('input').first().fill(SAVED_QUERY);
    await modal.getByRole('button', { name: 'Save', exact: true }).click();
    await modal.waitFor({ state: 'hidden' });
    await page.goto(`${base}/savedqueryview/list/`);
    await page.getByText(SAVED_QUERY, { exact: true }).first().waitFor();
    await page.goto(`${base}/sqllab/history/`);
    await page.getByText(URI_DB).first().waitFor();
    const q = `(filters:!((col:sql,opr:ct,value:'${TABLE}')))`;
    const history = (await api(page, `/api/v1/query/?q=${encodeURIComponent(q)}`)).result;
    if (!history.length) throw new Error('the query is not in the query history');
    return `ran on "${URI_DB}", saved as "${SAVED_QUERY}", listed in saved queries and history`;
  });

  await step(page, 'flow: export a chart as CSV from its menu', async () => {
    await openDashboard(ids.dashboard);
    const holder = page.locator('.dashboard-component-chart-holder').filter({ hasText: CHART }).first();
    await holder.getByText('north', { exact: true }).first().waitFor();
    await holder.hover();
    await holder.locator('[aria-label="More Options"]').first().click();
    await page.locator('[role=menuitem]').filter({ hasText: /^Download/ }).first().hover();
    // The app posts the query as an HTML form into a new tab, which downloads the file.
    const download = new Promise((resolve) => {
      page.once('download', resolve);
      context.once('page', (popup) => popup.once('download', resolve));
    });
    await page.locator('[role=menuitem]').filter({ hasText: /Export to \.CSV/ }).first().click();
    const file = await download;
    const text = (await import('node:fs')).readFileSync(await file.path(), 'utf8');
    if (!/^\d{8}_\d{6}\.csv$/.test(file.suggestedFilename())) {
      throw new Error(`file name ${file.suggestedFilename()}`);
    }
    if (!text.startsWith('region,COUNT(*)\n') || !text.includes('north,2') || !text.includes('south,1')) {
      throw new Error(`CSV: ${JSON.stringify(text)}`);
    }
    return `${file.suggestedFilename()}: ${JSON.stringify(text)}`;
  });

  await step(page, 'flow: delete a chart from the chart list', async () => {
    await page.goto(`${base}/chart/list/`);
    const row = page.getByRole('row').filter({ hasText: DRAGGED_CHART }).first();
    await row.waitFor();
    await row.hover();
    await row.locator('[aria-label="delete"]').first().click();
    const modal = page.locator('.ant-modal').filter({ hasText: 'Please confirm' }).first();
    await modal.locator('input').first().fill('DELETE');
    await modal.getByRole('button', { name: 'Delete' }).click();
    await row.waitFor({ state: 'detached' });
    const gone = await page.request.get(`${base}/api/v1/chart/${ids.dragged}`);
    if (gone.status() !== 404) throw new Error(`GET /api/v1/chart/${ids.dragged}: ${gone.status()}`);
    return `"${DRAGGED_CHART}" deleted`;
  });
}
