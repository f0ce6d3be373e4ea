//! `pivot`: Superset's wrapper around `DataFrame.pivot_table`.
//!
//! The result keeps pandas' shape: the `index` columns become the (possibly multi-level)
//! row index, and the columns are labelled `(metric, value of columns[0], ...)`, or just
//! `metric` without `columns`. A later `flatten` turns that into plain string labels.
//!
//! pandas steps reproduced here (pandas 2.1 `__internal_pivot_table`):
//! 1. group by `index + columns` (missing keys dropped unless `dropna=False`), aggregate each
//!    value column with its function, downcast to int where the source column was int and
//!    every result is integral;
//! 2. with `dropna`, drop groups whose aggregates are all missing;
//! 3. unstack the `columns` keys (observed combinations only), sort the column labels;
//! 4. without `dropna`, reindex a multi-level row index to the cartesian product of its
//!    levels (Superset then drops column combinations never seen in the data);
//! 5. fill missing cells with `metric_fill_value`, add the margins, and with `dropna` drop
//!    all-missing columns;
//! 6. Superset's `combine_value_with_metric` (`stack(0).unstack()`).

use std::cmp::Ordering;
use std::collections::HashMap;

use serde_json::Value as Json;

use crate::error::{PpError, Result};
use crate::frame::{Frame, Index, Label, Series, Value};
use crate::group::{FxMap, cmp_values, group_by};
use crate::numpy::{Aggregator, Scratch};
use crate::ops::aggregate::aggregate_funcs;
use crate::ops::{Opts, truthy, validate_column_args};

const PARAMS: &[&str] = &[
    "index",
    "aggregates",
    "columns",
    "metric_fill_value",
    "column_fill_value",
    "drop_missing_columns",
    "combine_value_with_metric",
    "marginal_distributions",
    "marginal_distribution_name",
];

/// The most cells (rows × columns, before margins) a pivot may produce. Without
/// `drop_missing_columns` the rows are the cartesian product of the index levels, which a few
/// (or repeated) index columns can make astronomically large.
pub const MAX_PIVOT_CELLS: usize = 10_000_000;

fn too_many_cells() -> PpError {
    PpError::params(format!(
        "Pivot would produce more than {MAX_PIVOT_CELLS} cells; use fewer index or column \
         values, or drop missing columns"
    ))
}

/// A JSON option value as a cell.
fn json_value(j: &Json) -> Value {
    match j {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => n
            .as_i64()
            .map_or_else(|| Value::Float(n.as_f64().unwrap_or(f64::NAN)), Value::Int),
        Json::String(s) => Value::Str(s.as_str().into()),
        other => Value::Str(other.to_string().into()),
    }
}

fn is_missing(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Float(f) => f.is_nan(),
        _ => false,
    }
}

/// `series.fillna(fill)`: a typed column with missing values and a fill of another type
/// becomes `object`. `None` when there is nothing to fill (the column stays as it is, which
/// spares copying a million strings for the common case).
fn fillna(s: &Series, fill: &Value) -> Option<Series> {
    if !s.has_null() {
        return None;
    }
    Some(match (s, fill) {
        (Series::Float64(v), Value::Float(f)) => {
            Series::Float64(v.iter().map(|x| if x.is_nan() { *f } else { *x }).collect())
        }
        (Series::Float64(v), Value::Int(i)) => Series::Float64(
            v.iter()
                .map(|x| if x.is_nan() { *i as f64 } else { *x })
                .collect(),
        ),
        (Series::Datetime(v), Value::Ts(t)) => {
            Series::Datetime(v.iter().map(|x| Some(x.unwrap_or(*t))).collect())
        }
        _ => Series::Object(
            (0..s.len())
                .map(|i| if s.is_null(i) { fill.clone() } else { s.get(i) })
                .collect(),
        ),
    })
}

/// An integer column aggregated by a dtype-keeping function (sum, min, max, ...) is `int64`
/// again in pandas when nothing is missing: floats that are all integral become ints.
fn downcast_to_int(vals: &mut [Value]) {
    let all_integral = vals.iter().all(|v| match v {
        Value::Int(_) => true,
        Value::Float(f) => f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e18,
        _ => false,
    });
    if all_integral {
        for v in vals.iter_mut() {
            if let Value::Float(f) = v {
                *v = Value::Int(*f as i64);
            }
        }
    }
}

fn label_str(frame: &Frame, pos: usize) -> String {
    match frame.labels[pos].first() {
        Some(Value::Str(s)) => s.to_string(),
        _ => String::new(),
    }
}

/// Lexicographic comparison of value tuples.
fn cmp_tuple(a: &[Value], b: &[Value]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = cmp_values(x, y);
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// A hashable rendering of a key tuple (margins only: small, rarely used).
fn tuple_key(vals: &[Value]) -> String {
    format!("{vals:?}")
}

/// The pivot table before margins: rows, and per metric its unstacked columns.
struct Table {
    /// Row index levels (one series per `index` column).
    index: Vec<Series>,
    /// Column combinations (values of the `columns` keys), sorted.
    combos: Vec<Vec<Value>>,
    /// Metrics in label order, each with one cell vector per combo (or one, without
    /// `columns`).
    metrics: Vec<(String, Vec<Vec<Value>>)>,
}

/// Runs `pivot`.
pub fn run(frame: Frame, options: &Json) -> Result<Frame> {
    validate_column_args(&frame, options, &["index", "columns"])?;
    let opts = Opts::parse("pivot", options, PARAMS, &["index", "aggregates"])?;
    let index = opts.names("index");
    if index.is_empty() {
        return Err(PpError::params(
            "Pivot operation requires at least one index",
        ));
    }
    if !opts.get("aggregates").is_some_and(truthy) {
        return Err(PpError::params(
            "Pivot operation must include at least one aggregate",
        ));
    }
    let columns = opts.names("columns");
    let column_fill = match opts.get("column_fill_value") {
        None => Some(Value::Str("<NULL>".into())),
        Some(v) if truthy(v) => Some(json_value(v)),
        Some(_) => None,
    };
    let mut frame = frame;
    if let Some(fill) = &column_fill {
        for c in &columns {
            let p = frame.require(c)?;
            if let Some(filled) = fillna(&frame.columns[p], fill) {
                frame.columns[p] = filled;
            }
        }
    }
    let aggs = aggregate_funcs(&frame, opts.get("aggregates"))?;
    // `{na.column: na.aggfunc}`: one function per source column, the last one wins.
    let mut values: Vec<(String, Aggregator)> = Vec::new();
    for a in aggs {
        match values.iter_mut().find(|(c, _)| *c == a.column) {
            Some(slot) => slot.1 = a.agg,
            None => values.push((a.column, a.agg)),
        }
    }
    let dropna = opts.flag("drop_missing_columns", true);
    let metric_fill = opts.value("metric_fill_value").map(json_value);
    let margins = opts.flag("marginal_distributions", false);

    let ipos: Vec<usize> = index
        .iter()
        .map(|c| frame.require(c))
        .collect::<Result<_>>()?;
    let cpos: Vec<usize> = columns
        .iter()
        .map(|c| frame.require(c))
        .collect::<Result<_>>()?;
    let vpos: Vec<usize> = values
        .iter()
        .map(|(c, _)| frame.require(c))
        .collect::<Result<_>>()?;

    let mut table = build_table(&frame, &ipos, &cpos, &values, &vpos, dropna)?;

    if let Some(fill) = &metric_fill {
        for (_, cols) in &mut table.metrics {
            for col in cols.iter_mut() {
                for cell in col.iter_mut() {
                    if is_missing(cell) {
                        *cell = fill.clone();
                    }
                }
            }
        }
    }

    let mut out = assemble(&frame, &ipos, &cpos, table);

    if margins {
        let name = match opts.get("marginal_distribution_name") {
            Some(Json::String(s)) => s.clone(),
            _ => return Err(PpError::params("margins_name argument must be a string")),
        };
        out = add_margins(
            out,
            &frame,
            &ipos,
            &cpos,
            &values,
            &vpos,
            dropna,
            &name,
            metric_fill.as_ref(),
        )?;
    }

    if dropna {
        let keep: Vec<usize> = (0..out.columns.len())
            .filter(|&c| (0..out.columns[c].len()).any(|i| !out.columns[c].is_null(i)))
            .collect();
        if keep.len() != out.columns.len() {
            out.labels = keep.iter().map(|&c| out.labels[c].clone()).collect();
            out.columns = keep.iter().map(|&c| out.columns[c].clone()).collect();
        }
    }

    if opts.flag("combine_value_with_metric", false) {
        out = stack_unstack(out);
    }
    Ok(out)
}

/// Steps 1 to 4 of the module documentation.
fn build_table(
    frame: &Frame,
    ipos: &[usize],
    cpos: &[usize],
    values: &[(String, Aggregator)],
    vpos: &[usize],
    dropna: bool,
) -> Result<Table> {
    let n = frame.num_rows();
    let keys: Vec<&Series> = ipos
        .iter()
        .chain(cpos)
        .map(|&p| &frame.columns[p])
        .collect();
    let groups = group_by(&keys, n, dropna)?;
    let ni = ipos.len();

    // Aggregate every value column per group.
    let mut scratch = Scratch::default();
    let mut agged: Vec<Vec<Value>> = Vec::with_capacity(values.len());
    for ((_, agg), &vp) in values.iter().zip(vpos) {
        let col = &frame.columns[vp];
        let mut out = Vec::with_capacity(groups.len());
        for g in 0..groups.len() {
            out.push(agg.apply(col, groups.rows_of(g), &mut scratch)?);
        }
        if matches!(col, Series::Int64(_)) && agg.func.keeps_int_dtype() {
            downcast_to_int(&mut out);
        }
        agged.push(out);
    }

    // With dropna, groups whose aggregates are all missing disappear before the unstack.
    let kept: Vec<usize> = (0..groups.len())
        .filter(|&g| !dropna || agged.iter().any(|a| !is_missing(&a[g])))
        .collect();

    // Rows: distinct index-key tuples (groups are sorted by them first).
    let icode = |g: usize| -> Vec<u32> { (0..ni).map(|k| groups.key_codes[k][g]).collect() };
    let ccode = |g: usize| -> Vec<u32> {
        (ni..ni + cpos.len())
            .map(|k| groups.key_codes[k][g])
            .collect()
    };
    let mut row_rep: Vec<usize> = Vec::new(); // representative data row of each table row
    let mut row_of_group: Vec<usize> = vec![0; groups.len()];
    let cartesian = !dropna && ni > 1;
    if cartesian {
        // Levels: distinct codes per index key (missing keys excluded, as pandas' levels do).
        let mut levels: Vec<Vec<(u32, usize)>> = vec![Vec::new(); ni];
        for &g in &kept {
            for (k, level) in levels.iter_mut().enumerate() {
                let c = groups.key_codes[k][g];
                let row = groups.first[g];
                if !frame.columns[ipos[k]].is_null(row) && !level.iter().any(|(x, _)| *x == c) {
                    level.push((c, row));
                }
            }
        }
        for level in &mut levels {
            level.sort_by_key(|(c, _)| *c);
        }
        let total = levels
            .iter()
            .try_fold(1usize, |acc, l| acc.checked_mul(l.len()))
            .filter(|t| t.checked_mul(ni).is_some_and(|c| c <= MAX_PIVOT_CELLS))
            .ok_or_else(too_many_cells)?;
        let mut index_cols: Vec<Vec<usize>> = vec![Vec::with_capacity(total); ni];
        for r in 0..total {
            let mut rem = r;
            for k in (0..ni).rev() {
                let len = levels[k].len();
                index_cols[k].push(levels[k][rem % len].1);
                rem /= len;
            }
        }
        let pos_in_level: Vec<HashMap<u32, usize>> = levels
            .iter()
            .map(|l| l.iter().enumerate().map(|(i, (c, _))| (*c, i)).collect())
            .collect();
        let mut keep_groups = Vec::new();
        for &g in &kept {
            let mut r = 0usize;
            let mut ok = true;
            for k in 0..ni {
                match pos_in_level[k].get(&groups.key_codes[k][g]) {
                    Some(&p) => r = r * levels[k].len() + p,
                    None => ok = false,
                }
            }
            if ok {
                row_of_group[g] = r;
                keep_groups.push(g);
            }
        }
        let index: Vec<Series> = (0..ni)
            .map(|k| frame.columns[ipos[k]].take(&index_cols[k]))
            .collect();
        return finish_table(
            frame,
            cpos,
            values,
            &agged,
            &keep_groups,
            &row_of_group,
            total,
            index,
            &ccode,
            &groups.first,
        );
    }
    let mut last: Option<Vec<u32>> = None;
    for &g in &kept {
        let code = icode(g);
        if last.as_ref() != Some(&code) {
            row_rep.push(groups.first[g]);
            last = Some(code);
        }
        row_of_group[g] = row_rep.len() - 1;
    }
    let index: Vec<Series> = ipos
        .iter()
        .map(|&p| frame.columns[p].take(&row_rep))
        .collect();
    finish_table(
        frame,
        cpos,
        values,
        &agged,
        &kept,
        &row_of_group,
        row_rep.len(),
        index,
        &ccode,
        &groups.first,
    )
}

#[allow(clippy::too_many_arguments)]
fn finish_table(
    frame: &Frame,
    cpos: &[usize],
    values: &[(String, Aggregator)],
    agged: &[Vec<Value>],
    kept: &[usize],
    row_of_group: &[usize],
    nrows: usize,
    index: Vec<Series>,
    ccode: &dyn Fn(usize) -> Vec<u32>,
    first: &[usize],
) -> Result<Table> {
    // Column combinations: distinct column-key tuples among the kept groups, sorted.
    let mut combo_codes: Vec<(Vec<u32>, usize)> = Vec::new();
    let mut seen: FxMap<Vec<u32>, ()> = FxMap::default();
    for &g in kept {
        let c = ccode(g);
        if seen.insert(c.clone(), ()).is_none() {
            combo_codes.push((c, first[g]));
        }
    }
    combo_codes.sort_by(|a, b| a.0.cmp(&b.0));
    let col_of: FxMap<Vec<u32>, usize> = combo_codes
        .iter()
        .enumerate()
        .map(|(i, (c, _))| (c.clone(), i))
        .collect();
    let combos: Vec<Vec<Value>> = combo_codes
        .iter()
        .map(|(_, row)| cpos.iter().map(|&p| frame.columns[p].get(*row)).collect())
        .collect();
    let ncols = combos.len().max(if cpos.is_empty() { 1 } else { 0 });
    if nrows
        .checked_mul(ncols)
        .and_then(|c| c.checked_mul(values.len()))
        .is_none_or(|c| c > MAX_PIVOT_CELLS)
    {
        return Err(too_many_cells());
    }
    let group_col: Vec<usize> = kept.iter().map(|&g| col_of[&ccode(g)]).collect();

    // Metrics sorted by name (pandas sorts the column labels).
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].0.cmp(&values[b].0));
    let metrics = order
        .into_iter()
        .map(|m| {
            let mut cols = vec![vec![Value::Float(f64::NAN); nrows]; ncols];
            for (&g, &c) in kept.iter().zip(&group_col) {
                cols[c][row_of_group[g]] = agged[m][g].clone();
            }
            (values[m].0.clone(), cols)
        })
        .collect();
    Ok(Table {
        index,
        combos,
        metrics,
    })
}

/// Builds the frame from the table.
fn assemble(frame: &Frame, ipos: &[usize], cpos: &[usize], table: Table) -> Frame {
    let mut labels: Vec<Label> = Vec::new();
    let mut columns: Vec<Series> = Vec::new();
    for (metric, cols) in table.metrics {
        for (c, cells) in cols.into_iter().enumerate() {
            let mut label = vec![Value::Str(metric.as_str().into())];
            if !cpos.is_empty() {
                label.extend(table.combos[c].iter().cloned());
            }
            labels.push(label);
            columns.push(Series::from_values(cells));
        }
    }
    let mut column_names = vec![None];
    column_names.extend(cpos.iter().map(|&p| Some(label_str(frame, p))));
    Frame {
        labels,
        columns,
        column_names,
        index: Index {
            names: ipos.iter().map(|&p| Some(label_str(frame, p))).collect(),
            levels: table.index,
        },
    }
}

/// Aggregates `col` over `rows` grouped by the `key` columns, keyed by the rendered tuple.
fn margin_groups(
    frame: &Frame,
    rows: &[usize],
    key: &[usize],
    col: usize,
    agg: &Aggregator,
) -> Result<HashMap<String, Value>> {
    let mut buckets: HashMap<String, Vec<usize>> = HashMap::new();
    let mut order = Vec::new();
    for &r in rows {
        let k: Vec<Value> = key.iter().map(|&p| frame.columns[p].get(r)).collect();
        if k.iter().any(is_missing) {
            continue;
        }
        let ks = tuple_key(&k);
        buckets
            .entry(ks.clone())
            .or_insert_with(|| {
                order.push(ks);
                Vec::new()
            })
            .push(r);
    }
    let mut scratch = Scratch::default();
    let mut out = HashMap::new();
    for (k, rs) in buckets {
        out.insert(k, agg.apply(&frame.columns[col], &rs, &mut scratch)?);
    }
    Ok(out)
}

/// pandas `_add_margins`: a margin column per metric (aggregate over the rows of the same
/// index key), a margin row (aggregate over the same column key) and the grand margin in
/// their intersection. Rows with any missing key or value are left out of the margins.
#[allow(clippy::too_many_arguments)]
fn add_margins(
    mut table: Frame,
    frame: &Frame,
    ipos: &[usize],
    cpos: &[usize],
    values: &[(String, Aggregator)],
    vpos: &[usize],
    dropna: bool,
    name: &str,
    fill: Option<&Value>,
) -> Result<Frame> {
    let conflict = Value::Str(name.into());
    let in_index = table
        .index
        .levels
        .iter()
        .any(|l| (0..l.len()).any(|i| l.get(i) == conflict));
    let in_columns = table
        .labels
        .iter()
        .any(|l| l.iter().skip(1).any(|v| *v == conflict));
    if in_index || in_columns {
        return Err(PpError::params(format!(
            "Conflicting name \"{name}\" in margins"
        )));
    }
    let used: Vec<usize> = ipos.iter().chain(cpos).chain(vpos).copied().collect();
    let rows: Vec<usize> = (0..frame.num_rows())
        .filter(|&r| !dropna || used.iter().all(|&p| !frame.columns[p].is_null(r)))
        .collect();
    let agg_of = |metric: &Value| -> Option<(usize, &Aggregator)> {
        values
            .iter()
            .zip(vpos)
            .find(|((c, _), _)| matches!(metric, Value::Str(m) if **m == **c))
            .map(|((_, a), &p)| (p, a))
    };
    let nrows = table.num_rows();
    let row_keys: Vec<String> = (0..nrows)
        .map(|r| {
            let k: Vec<Value> = table.index.levels.iter().map(|l| l.get(r)).collect();
            tuple_key(&k)
        })
        .collect();
    let mut scratch = Scratch::default();

    // Margin columns, interleaved after each metric's columns.
    let mut labels: Vec<Label> = Vec::new();
    let mut columns: Vec<Series> = Vec::new();
    let mut margin_row: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < table.labels.len() {
        let metric = table.labels[i][0].clone();
        let mut j = i;
        while j < table.labels.len() && table.labels[j][0] == metric {
            j += 1;
        }
        let (vcol, agg) = agg_of(&metric)
            .ok_or_else(|| PpError::internal("pivot margin for an unknown metric"))?;
        for c in i..j {
            labels.push(table.labels[c].clone());
            columns.push(table.columns[c].clone());
            let v = if cpos.is_empty() {
                agg.apply(&frame.columns[vcol], &rows, &mut scratch)?
            } else {
                let by_col = margin_groups(frame, &rows, cpos, vcol, agg)?;
                let key = tuple_key(&table.labels[c][1..]);
                by_col
                    .get(&key)
                    .cloned()
                    .unwrap_or_else(|| fill.cloned().unwrap_or(Value::Float(f64::NAN)))
            };
            margin_row.push(v);
        }
        if !cpos.is_empty() {
            let by_row = margin_groups(frame, &rows, ipos, vcol, agg)?;
            let cells: Vec<Value> = row_keys
                .iter()
                .map(|k| by_row.get(k).cloned().unwrap_or(Value::Float(f64::NAN)))
                .collect();
            let mut label = vec![metric.clone(), Value::Str(name.into())];
            label.extend((1..cpos.len()).map(|_| Value::Str("".into())));
            labels.push(label);
            columns.push(Series::from_values(cells));
            margin_row.push(agg.apply(&frame.columns[vcol], &rows, &mut scratch)?);
        }
        i = j;
    }
    // Append the margin row, downcast to each column's dtype.
    for (col, v) in columns.iter_mut().zip(margin_row) {
        let mut vals = col.values();
        let mut v = v;
        if let (Series::Int64(_), Value::Float(f)) = (&*col, &v)
            && f.is_finite()
            && f.fract() == 0.0
        {
            v = Value::Int(*f as i64);
        }
        vals.push(v);
        *col = Series::from_values(vals);
    }
    let levels = table
        .index
        .levels
        .iter()
        .enumerate()
        .map(|(k, l)| {
            let mut vals = l.values();
            vals.push(Value::Str(if k == 0 { name } else { "" }.into()));
            Series::from_values(vals)
        })
        .collect();
    table.labels = labels;
    table.columns = columns;
    table.index.levels = levels;
    Ok(table)
}

/// `df.stack(0).unstack()`: the metric level moves from the outside to the inside of the
/// column labels. Rows whose cells are all missing for a metric drop that metric's cells
/// (stack's `dropna`), and a row left with nothing disappears.
fn stack_unstack(frame: Frame) -> Frame {
    let n = frame.num_rows();
    let mut metrics: Vec<Value> = Vec::new();
    let mut combos: Vec<Vec<Value>> = Vec::new();
    for l in &frame.labels {
        if !metrics.contains(&l[0]) {
            metrics.push(l[0].clone());
        }
        let c = l[1..].to_vec();
        if !combos.contains(&c) {
            combos.push(c);
        }
    }
    metrics.sort_by(cmp_values);
    combos.sort_by(|a, b| cmp_tuple(a, b));
    let find = |m: &Value, c: &[Value]| -> Option<usize> {
        frame.labels.iter().position(|l| l[0] == *m && l[1..] == *c)
    };
    let cell = |m: &Value, c: &[Value], r: usize| -> Value {
        find(m, c).map_or(Value::Float(f64::NAN), |p| frame.columns[p].get(r))
    };
    // (row, metric) pairs that survive the stack.
    let alive: Vec<Vec<bool>> = (0..n)
        .map(|r| {
            metrics
                .iter()
                .map(|m| combos.iter().any(|c| !is_missing(&cell(m, c, r))))
                .collect()
        })
        .collect();
    let rows: Vec<usize> = (0..n).filter(|&r| alive[r].iter().any(|&a| a)).collect();
    let mut labels = Vec::new();
    let mut columns = Vec::new();
    for c in &combos {
        for (mi, m) in metrics.iter().enumerate() {
            let mut label = c.clone();
            label.push(m.clone());
            labels.push(label);
            let cells: Vec<Value> = rows
                .iter()
                .map(|&r| {
                    if alive[r][mi] {
                        match cell(m, c, r) {
                            Value::Null => Value::Float(f64::NAN),
                            v => v,
                        }
                    } else {
                        Value::Float(f64::NAN)
                    }
                })
                .collect();
            columns.push(cells);
        }
    }
    // Stacking puts every metric in one column, so the columns share one dtype.
    let any_float = columns
        .iter()
        .flatten()
        .any(|v| matches!(v, Value::Float(_)));
    let columns = columns
        .into_iter()
        .map(|cells| {
            let cells = if any_float {
                cells
                    .into_iter()
                    .map(|v| match v {
                        Value::Int(i) => Value::Float(i as f64),
                        v => v,
                    })
                    .collect()
            } else {
                cells
            };
            Series::from_values(cells)
        })
        .collect();
    let mut column_names: Vec<Option<String>> = frame.column_names[1..].to_vec();
    column_names.push(frame.column_names[0].clone());
    Frame {
        labels,
        columns,
        column_names,
        index: frame.index.take(&rows),
    }
}
