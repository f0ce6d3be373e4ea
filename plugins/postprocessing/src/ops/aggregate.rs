//! `aggregate`: `df.groupby(groupby).agg(**named_aggregates).reset_index()`.
//!
//! Also home of the pieces pivot and boxplot share with it: Superset's
//! `_get_aggregate_funcs` (validation of the `aggregates` option) and a grouped
//! aggregation whose output columns are typed from their results like pandas does.

use serde_json::Value as Json;

use crate::error::{PpError, Result};
use crate::frame::{Frame, Index, Series, Value};
use crate::group::{Groups, group_by};
use crate::numpy::{Aggregator, Func, Scratch};
use crate::ops::{Opts, validate_column_args};

/// One entry of `aggregates`: output name, source column and the bound numpy function.
#[derive(Clone, Debug)]
pub struct NamedAgg {
    pub name: String,
    pub column: String,
    pub agg: Aggregator,
}

/// Superset's `_get_aggregate_funcs`: for each `name: {column?, operator, options?}`, the
/// column must exist, the operator must be given and be a `NUMPY_FUNCTIONS` key. Checked
/// entry by entry in order, so the first bad entry decides the message.
pub fn aggregate_funcs(frame: &Frame, aggregates: Option<&Json>) -> Result<Vec<NamedAgg>> {
    let map = match aggregates {
        None | Some(Json::Null) => return Ok(vec![]),
        Some(Json::Object(m)) => m,
        Some(other) => {
            return Err(PpError::params(format!(
                "aggregates must be a mapping, got {other}"
            )));
        }
    };
    let empty = serde_json::Map::new();
    let mut out = Vec::with_capacity(map.len());
    for (name, obj) in map {
        let column = match obj.get("column") {
            Some(Json::String(c)) => c.clone(),
            Some(other) if !other.is_null() => other.to_string(),
            _ => name.clone(),
        };
        // `column not in df` looks at the first level of the column labels.
        if !frame.has_level0(&column) {
            return Err(PpError::params(format!(
                "Column referenced by aggregate is undefined: {column}"
            )));
        }
        let Some(operator) = obj.get("operator") else {
            return Err(PpError::params(format!(
                "Operator undefined for aggregator: {name}"
            )));
        };
        let op_name = match operator {
            Json::String(s) => s.clone(),
            other => other.to_string(),
        };
        let func = Func::from_name(&op_name)
            .ok_or_else(|| PpError::params(format!("Invalid numpy function: {op_name}")))?;
        let options = match obj.get("options") {
            Some(Json::Object(o)) => o,
            _ => &empty,
        };
        let agg = Aggregator::with_options(func, options)?;
        out.push(NamedAgg {
            name: name.clone(),
            column,
            agg,
        });
    }
    Ok(out)
}

/// Positions of the key columns `names` (already validated to exist).
pub fn key_positions(frame: &Frame, names: &[String]) -> Result<Vec<usize>> {
    names.iter().map(|n| frame.require(n)).collect()
}

/// Aggregates `col` per group with `agg`, typing the result column from the values.
pub fn aggregate_column(col: &Series, groups: &Groups, agg: &Aggregator) -> Result<Series> {
    let mut scratch = Scratch::default();
    let mut vals = Vec::with_capacity(groups.len());
    for g in 0..groups.len() {
        vals.push(agg.apply(col, groups.rows_of(g), &mut scratch)?);
    }
    Ok(Series::from_values(vals))
}

/// `df.groupby(keys).agg(...).reset_index(drop=not keys)`: the key columns (first row of
/// each group, so dtypes survive) followed by `columns`, with a fresh `RangeIndex`.
pub fn grouped_frame(
    frame: &Frame,
    key_pos: &[usize],
    groups: &Groups,
    columns: Vec<(String, Series)>,
) -> Frame {
    let mut out: Vec<(String, Series)> = key_pos
        .iter()
        .map(|&p| {
            let name = match frame.labels[p].first() {
                Some(Value::Str(s)) => s.to_string(),
                _ => String::new(),
            };
            (name, frame.columns[p].take(&groups.first))
        })
        .collect();
    out.extend(columns);
    let n = groups.len();
    let mut f = Frame::from_columns(out);
    f.index = Index::range(n);
    f
}

/// Runs `aggregate`.
pub fn run(frame: Frame, options: &Json) -> Result<Frame> {
    validate_column_args(&frame, options, &["groupby"])?;
    let opts = Opts::parse(
        "aggregate",
        options,
        &["groupby", "aggregates"],
        &["groupby", "aggregates"],
    )?;
    let groupby = opts.names("groupby");
    let aggs = aggregate_funcs(&frame, opts.get("aggregates"))?;
    let key_pos = key_positions(&frame, &groupby)?;
    let keys: Vec<&Series> = key_pos.iter().map(|&p| &frame.columns[p]).collect();
    let groups = group_by(&keys, frame.num_rows(), true)?;
    let mut columns = Vec::with_capacity(aggs.len());
    for a in &aggs {
        let col = frame.require(&a.column)?;
        columns.push((
            a.name.clone(),
            aggregate_column(&frame.columns[col], &groups, &a.agg)?,
        ));
    }
    Ok(grouped_frame(&frame, &key_pos, &groups, columns))
}
