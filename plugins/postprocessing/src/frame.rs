//! A small pandas-like data frame: the shape every operation reads and writes.
//!
//! Operations reproduce pandas semantics, so the model keeps what pandas keeps: a dtype per
//! column, column labels that may have several levels (after a pivot), and an index (row
//! labels) that may also have several levels. Missing values follow pandas: NaN in float
//! columns, NaT in datetime columns, `None` in object columns; int and bool columns cannot
//! hold them.

/// One cell of an object column, or one level of a label.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `None`/NaN in an object column.
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
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
    /// `datetime64[us]`; `None` is NaT.
    Datetime(Vec<Option<i64>>),
    /// `object`: strings, mixed values, nullable booleans, lists.
    Object(Vec<Value>),
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
            Series::Datetime(v) => v[i].map_or(Value::Null, Value::Ts),
            Series::Object(v) => v[i].clone(),
        }
    }

    /// Whether the value at `i` is missing.
    pub fn is_null(&self, i: usize) -> bool {
        match self {
            Series::Float64(v) => v[i].is_nan(),
            Series::Int64(_) | Series::Bool(_) => false,
            Series::Datetime(v) => v[i].is_none(),
            Series::Object(v) => matches!(v[i], Value::Null),
        }
    }

    /// The rows at `positions`, in that order.
    pub fn take(&self, positions: &[usize]) -> Series {
        match self {
            Series::Float64(v) => Series::Float64(positions.iter().map(|&i| v[i]).collect()),
            Series::Int64(v) => Series::Int64(positions.iter().map(|&i| v[i]).collect()),
            Series::Bool(v) => Series::Bool(positions.iter().map(|&i| v[i]).collect()),
            Series::Datetime(v) => Series::Datetime(positions.iter().map(|&i| v[i]).collect()),
            Series::Object(v) => Series::Object(positions.iter().map(|&i| v[i].clone()).collect()),
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
            .map(|(name, s)| (vec![Value::Str(name)], s))
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
            .position(|l| matches!(l.as_slice(), [Value::Str(s)] if s == name))
    }
}
