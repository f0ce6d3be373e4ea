//! `sort`: `sort_values(by, ascending)` or `sort_index(ascending)`, missing values last.

use std::cmp::Ordering;

use serde_json::Value as Json;

use crate::error::{PpError, Result};
use crate::frame::{Frame, Series};
use crate::group::{NULL_CODE, factorize};
use crate::ops::{Opts, truthy, validate_column_args};

/// Row order sorting by `keys` (pandas `lexsort_indexer`/`nargsort`): each key by its sorted
/// codes, descending where asked, missing values last either way; ties keep their order.
pub fn sort_rows(keys: &[&Series], ascending: &[bool], n: usize) -> Result<Vec<usize>> {
    let codes: Vec<Vec<u32>> = keys
        .iter()
        .map(|k| factorize(k).map(|f| f.codes))
        .collect::<Result<_>>()?;
    let mut rows: Vec<usize> = (0..n).collect();
    rows.sort_by(|&a, &b| {
        for (c, &asc) in codes.iter().zip(ascending) {
            let (x, y) = (c[a], c[b]);
            let o = match (x == NULL_CODE, y == NULL_CODE) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                _ if asc => x.cmp(&y),
                _ => y.cmp(&x),
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    });
    Ok(rows)
}

fn ascending_list(v: Option<&Json>, n: usize) -> Result<Vec<bool>> {
    match v {
        None => Ok(vec![true; n]),
        Some(Json::Array(items)) => {
            if items.len() != n {
                return Err(PpError::params(format!(
                    "Length of ascending ({}) != length of by ({n})",
                    items.len()
                )));
            }
            Ok(items.iter().map(truthy).collect())
        }
        Some(single) => Ok(vec![truthy(single); n]),
    }
}

/// Runs `sort`.
pub fn run(frame: Frame, options: &Json) -> Result<Frame> {
    validate_column_args(&frame, options, &["by"])?;
    let opts = Opts::parse("sort", options, &["is_sort_index", "by", "ascending"], &[])?;
    let by = opts.names("by");
    let n = frame.num_rows();
    if opts.flag("is_sort_index", false) {
        let keys: Vec<&Series> = frame.index.levels.iter().collect();
        let asc = ascending_list(opts.get("ascending"), keys.len())?;
        let order = sort_rows(&keys, &asc, n)?;
        return Ok(frame.take_rows(&order));
    }
    if by.is_empty() {
        return Ok(frame);
    }
    let pos: Vec<usize> = by.iter().map(|b| frame.require(b)).collect::<Result<_>>()?;
    let keys: Vec<&Series> = pos.iter().map(|&p| &frame.columns[p]).collect();
    let asc = ascending_list(opts.get("ascending"), keys.len())?;
    let order = sort_rows(&keys, &asc, n)?;
    Ok(frame.take_rows(&order))
}
