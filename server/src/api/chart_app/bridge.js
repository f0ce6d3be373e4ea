// Liteset's app bridge: registers the chart types of the installed wasm viz plugins in
// Superset's own web app, which imports this module through its DYNAMIC_PLUGINS hook
// (`/dynamic-plugins/api/read` names it for every chart type; the app imports it once).
//
// A plain ES module, no build step: it uses only the modules the app shares on `window`
// (`__superset__/<name>`), so it runs against the unmodified app. For each chart type of
// `GET /api/v1/chart_type/` it registers a ChartPlugin whose
// - metadata comes from the plugin (name, description, category, tags, thumbnail);
// - control panel maps the plugin's declarative spec onto Superset's shared controls (by
//   name) and simple controls of its own (text, number, checkbox, select);
// - build-query sends the form data with no queries: the server completes the query context
//   with the plugin's own build-query (the app's must be synchronous; the plugin runs on the
//   server);
// - component posts the rows `/chart/data` answered to
//   `/api/v1/chart_type/<viz_type>/render` at the holder's size and shows the sanitised SVG,
//   drawing again on resize and on every control change. A failed drawing is thrown during
//   render, so the app shows its own chart error in the chart's holder.

const core = window['__superset__/@superset-ui/core'];
const React = window['__superset__/react'];
const h = React.createElement;

const MIN_SIDE = 16;
const MAX_SIDE = 4096;
const TEMPORAL = 2;

function side(v) {
  const n = Math.round(Number(v) || 0);
  return Math.max(MIN_SIDE, Math.min(MAX_SIDE, n));
}

// The message of a failed request, as Superset's own client reads its envelopes.
async function errorMessage(err) {
  try {
    if (core.getClientErrorObject) {
      const e = await core.getClientErrorObject(err);
      const first = e.errors && e.errors[0] && e.errors[0].message;
      return first || e.message || e.error || String(err);
    }
  } catch (_) {
    // fall through
  }
  return (err && err.message) || String(err);
}

// An own control: the same value in the form data as the plugin declared.
function ownControl(c) {
  const base = {
    label: c.label,
    description: c.description,
    default: c.default,
    // Own controls change the drawing only: the app redraws without running the query again.
    renderTrigger: true,
  };
  switch (c.kind) {
    case 'text':
      return { ...base, type: 'TextControl' };
    case 'checkbox':
      return { ...base, type: 'CheckboxControl' };
    case 'select':
      return {
        ...base,
        type: 'SelectControl',
        clearable: false,
        choices: (c.options || []).map(([value, label]) => [value, label]),
      };
    case 'number':
      return {
        ...base,
        type: 'TextControl',
        isInt: !!c.integer,
        isFloat: !c.integer,
        validators: [
          v => {
            if (v === undefined || v === null || v === '') return false;
            const n = Number(v);
            if (!Number.isFinite(n)) return 'is expected to be a number';
            if (c.integer && !Number.isInteger(n)) return 'is expected to be an integer';
            if (c.min !== null && c.min !== undefined && n < c.min) return `must be at least ${c.min}`;
            if (c.max !== null && c.max !== undefined && n > c.max) return `must be at most ${c.max}`;
            return false;
          },
        ],
      };
    default:
      return null;
  }
}

function controlItem(c) {
  if (c.kind === 'shared') return c.name; // Superset expands a name to its shared control.
  const config = ownControl(c);
  return config ? { name: c.name, config } : null;
}

function controlPanel(type) {
  return {
    controlPanelSections: type.sections.map(s => ({
      label: s.label,
      expanded: s.expanded,
      controlSetRows: s.rows.map(row => row.map(controlItem).filter(x => x !== null)),
    })),
  };
}

// The query context the server completes with the plugin's build-query.
function buildQuery(formData) {
  const [id, type] = String(formData.datasource || '').split('__');
  return {
    datasource: { id: Number(id), type: type || 'table' },
    force: !!formData.force,
    queries: [],
    form_data: formData,
    result_format: formData.result_format || 'json',
    result_type: formData.result_type || 'full',
  };
}

function makeTransformProps(vizType) {
  return chartProps => {
    const { width, height, rawFormData, queriesData, datasource } = chartProps;
    const formData = { ...rawFormData };
    // A saved chart's name and verbose names are added by the server, as render.svg adds
    // them; an unsaved one labels with the dataset's verbose names the app holds.
    if (!formData.slice_id && !formData.verbose_map && datasource && datasource.verboseMap) {
      formData.verbose_map = datasource.verboseMap;
    }
    return { width, height, formData, queriesData: queriesData || [], vizType };
  };
}

// The chart: the plugin's drawing of the rows, fetched for the holder's size.
function LitesetChart(props) {
  const { width, height, formData, queriesData, vizType } = props;
  const [state, setState] = React.useState({ svg: null, error: null });
  const w = side(width);
  const hgt = side(height);
  const queries = React.useMemo(
    () =>
      queriesData.map(q => ({
        data: q.data || [],
        colnames: q.colnames || [],
        coltypes: q.coltypes || [],
      })),
    [queriesData],
  );
  React.useEffect(() => {
    let live = true;
    // Resizes come in bursts (a dashboard's layout settling): draw once they stop.
    const timer = setTimeout(async () => {
      try {
        const { json } = await core.SupersetClient.post({
          endpoint: `/api/v1/chart_type/${encodeURIComponent(vizType)}/render`,
          jsonPayload: { form_data: formData, queries, width: w, height: hgt },
        });
        if (live) setState({ svg: json.result.svg, error: null });
      } catch (err) {
        const message = await errorMessage(err);
        if (live) setState({ svg: null, error: message });
      }
    }, 60);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [vizType, formData, queries, w, hgt]);
  if (state.error) {
    throw new Error(state.error);
  }
  return h('div', {
    className: 'liteset-chart',
    'data-viz-type': vizType,
    style: { width: w, height: hgt, overflow: 'hidden' },
    // The server's sanitiser (the one render.svg uses) made this SVG safe to inline.
    dangerouslySetInnerHTML: state.svg ? { __html: state.svg } : undefined,
  });
}

function register(type) {
  const metadata = new core.ChartMetadata({
    name: type.name,
    description: type.description,
    category: type.category,
    tags: type.tags,
    thumbnail: type.thumbnail,
    credits: [`${type.plugin} ${type.version} (Liteset wasm plugin)`],
  });
  new core.ChartPlugin({
    metadata,
    buildQuery,
    transformProps: makeTransformProps(type.viz_type),
    controlPanel: controlPanel(type),
    Chart: LitesetChart,
  })
    .configure({ key: type.viz_type })
    .register();
}

const { json } = await core.SupersetClient.get({ endpoint: '/api/v1/chart_type/' });
for (const type of json.result) {
  register(type);
}
