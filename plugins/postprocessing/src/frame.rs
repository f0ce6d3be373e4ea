//! A small pandas-like data frame: the shape every operation reads and writes.
//!
//! Operations reproduce pandas semantics, so the model keeps what pandas keeps: a dtype per
//! column, column labels that may have several levels (after a pivot), and an index (row
//! labels) that may also have several levels. Missing values follow pandas: NaN in float
//! columns, NaT in datetime columns, `None` in object columns; int and bool columns cannot
//! hold them.

use std::sync::Arc;

/// One cell of an object column, or one level of a label.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `None`/NaN in an object column.
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// Text; shared, so a dictionary-encoded column costs one allocation per distinct value.
    Str(Arc<str>),
    /// Microseconds since the Unix epoch (a pandas `Timestamp`).
    Ts(i64),
    /// A list cell (boxplot outliers).
    List(Vec<Value>),
}

/// The values of one column, typed like a pandas dtype.
#[derive(Clone, Debug, PartialEq)]
pub enum Series {
    /// `float64`; NaN is missing.
    Float64(Vec<f64>),
    /// `int64`; never missing.
    Int64(Vec<i64>),
    /// `bool`; never missing.
    Bool(Vec<bool>),
    /// `datetime64[us]`.
    Datetime(Times),
    /// `object`: strings, mixed values, nullable booleans, lists.
    Object(Objects),
}

/// numpy's NaT: the smallest `i64`, as in `datetime64`.
pub const NAT: i64 = i64::MIN;

/// The values of a `datetime64[us]` column: microseconds since the Unix epoch, [`NAT`] where
/// missing. Kept as plain `i64`s, as numpy keeps them, so a timestamp column received from
/// the host is used as it arrives (no per-row conversion, no second buffer).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Times(pub Vec<i64>);

impl Times {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is no row.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value at `i` (`None` for NaT).
    pub fn get(&self, i: usize) -> Option<i64> {
        let t = self.0[i];
        (t != NAT).then_some(t)
    }

    /// The values in row order (`None` for NaT).
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Option<i64>> + Clone + '_ {
        self.0.iter().map(|&t| (t != NAT).then_some(t))
    }

    /// The raw values, [`NAT`] included.
    pub fn raw(&self) -> &[i64] {
        &self.0
    }
}

impl FromIterator<Option<i64>> for Times {
    fn from_iter<I: IntoIterator<Item = Option<i64>>>(iter: I) -> Times {
        Times(iter.into_iter().map(|t| t.unwrap_or(NAT)).collect())
    }
}

/// The cells of an object column.
///
/// Text that arrives dictionary-encoded stays encoded: each row is a code into a short list of
/// distinct values, so grouping hashes the distinct values once instead of every row, and
/// copying rows copies codes. Reading yields the same `Value`s either way, so operations treat
/// both forms alike; code that rewrites cells in place gets the plain form ([`Objects::make_mut`]).
#[derive(Clone, Debug)]
pub enum Objects {
    Plain(Vec<Value>),
    Dict { values: Vec<Value>, codes: Vec<u32> },
}

impl Objects {
    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            Objects::Plain(v) => v.len(),
            Objects::Dict { codes, .. } => codes.len(),
        }
    }

    /// Whether there is no row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The cells in row order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &Value> + Clone + '_ {
        (0..self.len()).map(move |i| &self[i])
    }

    /// The rows at `positions`, in that order (codes only, for the dictionary form).
    pub fn take(&self, positions: &[usize]) -> Objects {
        match self {
            Objects::Plain(v) => Objects::Plain(positions.iter().map(|&i| v[i].clone()).collect()),
            Objects::Dict { values, codes } => Objects::Dict {
                values: values.clone(),
                codes: positions.iter().map(|&i| codes[i]).collect(),
            },
        }
    }

    /// The plain form, decoding a dictionary.
    pub fn into_vec(self) -> Vec<Value> {
        match self {
            Objects::Plain(v) => v,
            Objects::Dict { values, codes } => {
                codes.iter().map(|&c| values[c as usize].clone()).collect()
            }
        }
    }

    /// The cells as a mutable vector (decoding a dictionary first).
    pub fn make_mut(&mut self) -> &mut Vec<Value> {
        if let Objects::Dict { .. } = self {
            *self = Objects::Plain(std::mem::replace(self, Objects::Plain(Vec::new())).into_vec());
        }
        match self {
            Objects::Plain(v) => v,
            Objects::Dict { .. } => unreachable!("decoded above"),
        }
    }
}

impl std::ops::Index<usize> for Objects {
    type Output = Value;

    fn index(&self, i: usize) -> &Value {
        match self {
            Objects::Plain(v) => &v[i],
            Objects::Dict { values, codes } => &values[codes[i] as usize],
        }
    }
}

/// Equal when the cells are, whatever the form.
impl PartialEq for Objects {
    fn eq(&self, other: &Objects) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl From<Vec<Value>> for Objects {
    fn from(v: Vec<Value>) -> Objects {
        Objects::Plain(v)
    }
}

impl FromIterator<Value> for Objects {
    fn from_iter<I: IntoIterator<Item = Value>>(iter: I) -> Objects {
        Objects::Plain(iter.into_iter().collect())
    }
}

impl IntoIterator for Objects {
    type Item = Value;
    type IntoIter = std::vec::IntoIter<Value>;

    fn into_iter(self) -> Self::IntoIter {
        self.into_vec().into_iter()
    }
}

impl<'a> IntoIterator for &'a Objects {
    type Item = &'a Value;
    type IntoIter = Box<dyn Iterator<Item = &'a Value> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl Series {
    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            Series::Float64(v) => v.len(),
            Series::Int64(v) => v.len(),
            Series::Bool(v) => v.len(),
            Series::Datetime(v) => v.len(),
            Series::Object(v) => v.len(),
        }
    }

    /// Whether the series has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value at `i` as a `Value` (NaN and NaT become `Value::Null`).
    pub fn get(&self, i: usize) -> Value {
        match self {
            Series::Float64(v) if v[i].is_nan() => Value::Null,
            Series::Float64(v) => Value::Float(v[i]),
            Series::Int64(v) => Value::Int(v[i]),
            Series::Bool(v) => Value::Bool(v[i]),
            Series::Datetime(v) => v.get(i).map_or(Value::Null, Value::Ts),
            Series::Object(v) => v[i].clone(),
        }
    }

    /// Whether any value is missing: one tight loop per dtype (a dictionary checks its codes
    /// against its few missing entries) rather than a dispatch per row.
    #[inline(never)]
    pub fn has_null(&self) -> bool {
        match self {
            Series::Float64(v) => v.iter().any(|x| x.is_nan()),
            Series::Int64(_) | Series::Bool(_) => false,
            Series::Datetime(v) => v.raw().contains(&NAT),
            Series::Object(Objects::Plain(v)) => v.iter().any(|x| matches!(x, Value::Null)),
            Series::Object(Objects::Dict { values, codes }) => {
                let null: Vec<bool> = values.iter().map(|x| matches!(x, Value::Null)).collect();
                null.contains(&true) && codes.iter().any(|&c| null[c as usize])
            }
        }
    }

    /// Whether the value at `i` is missing.
    pub fn is_null(&self, i: usize) -> bool {
        match self {
            Series::Float64(v) => v[i].is_nan(),
            Series::Int64(_) | Series::Bool(_) => false,
            Series::Datetime(v) => v.raw()[i] == NAT,
            Series::Object(v) => matches!(v[i], Value::Null),
        }
    }

    /// The rows at `positions`, in that order.
    pub fn take(&self, positions: &[usize]) -> Series {
        match self {
            Series::Float64(v) => Series::Float64(positions.iter().map(|&i| v[i]).collect()),
            Series::Int64(v) => Series::Int64(positions.iter().map(|&i| v[i]).collect()),
            Series::Bool(v) => Series::Bool(positions.iter().map(|&i| v[i]).collect()),
            Series::Datetime(v) => {
                Series::Datetime(Times(positions.iter().map(|&i| v.raw()[i]).collect()))
            }
            Series::Object(v) => Series::Object(v.take(positions)),
        }
    }
}

/// A column label: one `Value` per level of the column index (one level unless pivoted).
pub type Label = Vec<Value>;

/// Row labels: one series per level, each as long as the frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Index {
    /// The name of each level (`None` for an unnamed level such as the default index).
    pub names: Vec<Option<String>>,
    /// The values of each level.
    pub levels: Vec<Series>,
}

impl Index {
    /// pandas' default `RangeIndex` for `n` rows (one unnamed int64 level 0..n).
    pub fn range(n: usize) -> Index {
        Index {
            names: vec![None],
            levels: vec![Series::Int64((0..n as i64).collect())],
        }
    }
}

/// A data frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// Column labels, in order; every label has `column_names.len()` levels.
    pub labels: Vec<Label>,
    /// Column values, parallel to `labels`.
    pub columns: Vec<Series>,
    /// Names of the column index levels (`df.columns.names`).
    pub column_names: Vec<Option<String>>,
    /// Row labels.
    pub index: Index,
}

impl Frame {
    /// Number of rows.
    pub fn num_rows(&self) -> usize {
        self.index.levels.first().map_or(0, Series::len)
    }

    /// A frame with one-level string labels and the default index.
    pub fn from_columns(columns: Vec<(String, Series)>) -> Frame {
        let n = columns.first().map_or(0, |(_, s)| s.len());
        let (labels, columns) = columns
            .into_iter()
            .map(|(name, s)| (vec![Value::Str(name.into())], s))
            .unzip();
        Frame {
            labels,
            columns,
            column_names: vec![None],
            index: Index::range(n),
        }
    }

    /// Position of the one-level column named `name`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.labels
            .iter()
            .position(|l| matches!(l.as_slice(), [Value::Str(s)] if **s == *name))
    }
}
