//! Helpers over the shared frame model that several operations need.
//!
//! They live in their own `impl` blocks so `frame.rs`, which the other operation group
//! codes against, stays untouched.

use crate::error::{PpError, Result};
use crate::frame::{Frame, Index, Label, Series, Value};
use crate::pystr::py_repr;

impl Series {
    /// Every value as a `Value` (NaN/NaT as `Null`).
    pub fn values(&self) -> Vec<Value> {
        (0..self.len()).map(|i| self.get(i)).collect()
    }

    /// A series holding `vals`, typed the way pandas infers a column built from Python
    /// objects (`lib.maybe_convert_objects`): all ints give int64, numbers with missing
    /// values give float64, timestamps give datetime64, bools give bool, anything else
    /// stays object.
    pub fn from_values(vals: Vec<Value>) -> Series {
        let (mut ints, mut floats, mut nulls, mut bools, mut ts, mut other) =
            (0usize, 0usize, 0usize, 0usize, 0usize, 0usize);
        for v in &vals {
            match v {
                Value::Int(_) => ints += 1,
                Value::Float(f) if f.is_nan() => nulls += 1,
                Value::Float(_) => floats += 1,
                Value::Null => nulls += 1,
                Value::Bool(_) => bools += 1,
                Value::Ts(_) => ts += 1,
                Value::Str(_) | Value::List(_) => other += 1,
            }
        }
        let n = vals.len();
        if n == 0 {
            return Series::Float64(vec![]);
        }
        if ints == n {
            return Series::Int64(
                vals.into_iter()
                    .map(|v| if let Value::Int(i) = v { i } else { 0 })
                    .collect(),
            );
        }
        if bools == n {
            return Series::Bool(vals.into_iter().map(|v| v == Value::Bool(true)).collect());
        }
        if ints + floats + nulls == n {
            return Series::Float64(vals.iter().map(value_f64).collect());
        }
        if ts + nulls == n && ts > 0 {
            return Series::Datetime(
                vals.into_iter()
                    .map(|v| if let Value::Ts(t) = v { Some(t) } else { None })
                    .collect(),
            );
        }
        let _ = other;
        Series::Object(
            vals.into_iter()
                .map(|v| match v {
                    Value::Float(f) if f.is_nan() => Value::Null,
                    v => v,
                })
                .collect(),
        )
    }

    /// Whether the column is numeric (int64, float64).
    pub fn is_numeric(&self) -> bool {
        matches!(self, Series::Int64(_) | Series::Float64(_))
    }

    /// The values as floats (`astype(float)`), NaN for missing and non-numbers.
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            Series::Float64(v) => v.clone(),
            Series::Int64(v) => v.iter().map(|&x| x as f64).collect(),
            Series::Bool(v) => v.iter().map(|&b| f64::from(u8::from(b))).collect(),
            Series::Datetime(v) => v.iter().map(|x| x.map_or(f64::NAN, |t| t as f64)).collect(),
            Series::Object(v) => v.iter().map(value_f64).collect(),
        }
    }

    /// `pd.to_numeric(errors="coerce")`: numbers stay, numeric text is parsed, anything else
    /// becomes NaN. Int columns stay int.
    pub fn to_numeric_coerce(&self) -> Series {
        match self {
            Series::Object(v) => {
                let parsed: Vec<Value> = v
                    .iter()
                    .map(|x| match x {
                        Value::Int(i) => Value::Int(*i),
                        Value::Float(f) => Value::Float(*f),
                        Value::Bool(b) => Value::Int(i64::from(*b)),
                        Value::Str(s) => s
                            .trim()
                            .parse::<f64>()
                            .map_or(Value::Float(f64::NAN), Value::Float),
                        _ => Value::Float(f64::NAN),
                    })
                    .collect();
                let s = Series::from_values(parsed);
                match s {
                    Series::Int64(_) | Series::Float64(_) => s,
                    other => Series::Float64(other.to_f64()),
                }
            }
            other => other.clone(),
        }
    }
}

/// A number cell as f64 (NaN for missing and non-numbers).
pub fn value_f64(v: &Value) -> f64 {
    match v {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => f64::from(u8::from(*b)),
        _ => f64::NAN,
    }
}

impl Index {
    /// Number of levels.
    pub fn nlevels(&self) -> usize {
        self.levels.len()
    }

    /// The index rows at `positions`.
    pub fn take(&self, positions: &[usize]) -> Index {
        Index {
            names: self.names.clone(),
            levels: self.levels.iter().map(|l| l.take(positions)).collect(),
        }
    }

    /// Whether this index is (as far as the model can tell) a pandas `RangeIndex`: one
    /// unnamed int64 level counting up by one. The model has no flag for it, and pandas keeps
    /// a `RangeIndex` through every operation that does not reorder or filter rows (a sort
    /// that finds the rows already in order keeps it too), so this reading is the useful one.
    pub fn is_range(&self) -> bool {
        if self.levels.len() != 1 || self.names[0].is_some() {
            return false;
        }
        match &self.levels[0] {
            Series::Int64(v) => v.windows(2).all(|w| w[1] == w[0] + 1),
            s => s.is_empty(),
        }
    }
}

impl Frame {
    /// Number of column levels.
    pub fn nlevels(&self) -> usize {
        self.column_names.len().max(1)
    }

    /// Whether the columns have several levels (a pandas `MultiIndex`).
    pub fn is_multi(&self) -> bool {
        self.column_names.len() > 1
    }

    /// Whether `name` is among the first-level labels (Superset's `validate_column_args`).
    pub fn has_level0(&self, name: &str) -> bool {
        self.labels
            .iter()
            .any(|l| matches!(l.first(), Some(Value::Str(s)) if **s == *name))
    }

    /// Position of column `name` (`df[name]` on a flat frame), or pandas' `KeyError` text.
    pub fn require(&self, name: &str) -> Result<usize> {
        self.position(name)
            .ok_or_else(|| PpError::params(py_repr(&Value::Str(name.into()))))
    }

    /// The column named `name`.
    pub fn column(&self, name: &str) -> Option<&Series> {
        self.position(name).map(|p| &self.columns[p])
    }

    /// The frame rows at `positions` (index included).
    pub fn take_rows(&self, positions: &[usize]) -> Frame {
        Frame {
            labels: self.labels.clone(),
            columns: self.columns.iter().map(|c| c.take(positions)).collect(),
            column_names: self.column_names.clone(),
            index: self.index.take(positions),
        }
    }

    /// A flat frame with the given index.
    pub fn with_index(
        columns: Vec<(Label, Series)>,
        column_names: Vec<Option<String>>,
        index: Index,
    ) -> Frame {
        let (labels, columns) = columns.into_iter().unzip();
        Frame {
            labels,
            columns,
            column_names,
            index,
        }
    }

    /// `df.reset_index(level=0)`: the first index level becomes the first column (named
    /// after the level, or `index`/`level_0` when unnamed), the other levels stay; with no
    /// level left the index is a fresh `RangeIndex`.
    pub fn reset_index_level0(mut self) -> Result<Frame> {
        let n = self.num_rows();
        let multi_index = self.index.nlevels() > 1;
        let level = self.index.levels.remove(0);
        let name = self.index.names.remove(0);
        let name = match name {
            Some(n) => n,
            None if multi_index => "level_0".to_string(),
            None if self.has_level0("index") => "level_0".to_string(),
            None => "index".to_string(),
        };
        if self.has_level0(&name) {
            return Err(PpError::params(format!(
                "cannot insert {name}, already exists"
            )));
        }
        let mut label = vec![Value::Str(name.into())];
        // Under multi-level columns pandas pads the new label with empty strings.
        for _ in 1..self.nlevels() {
            label.push(Value::Str("".into()));
        }
        self.labels.insert(0, label);
        self.columns.insert(0, level);
        if self.index.levels.is_empty() {
            self.index = Index::range(n);
        }
        Ok(self)
    }
}
