//! Columnar tables: the plain Rust mirror of the WIT `table`, `column` and `column-data` types.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, DefaultHasher};

/// The values of one column, mirroring the WIT `column-data` variant.
///
/// Every variant holds exactly one value per row (for the string encodings: one code per row,
/// or `rows + 1` offsets). A null row holds a placeholder value and is marked in the column's
/// [validity bitmap](Column::validity).
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnData {
    /// 64-bit floats.
    Float64(Vec<f64>),
    /// 64-bit signed integers.
    Int64(Vec<i64>),
    /// Booleans.
    Boolean(Vec<bool>),
    /// Microseconds since the Unix epoch, UTC.
    TimestampUs(Vec<i64>),
    /// One string per row: the simplest text encoding to produce, the slowest to transfer.
    Utf8(Vec<String>),
    /// Dictionary-encoded text: row `i` is `dictionary[codes[i]]`.
    Utf8Dict {
        /// The distinct values.
        dictionary: Vec<String>,
        /// One index into `dictionary` per row.
        codes: Vec<u32>,
    },
    /// Arrow-style packed text: row `i` is the UTF-8 bytes `data[offsets[i]..offsets[i + 1]]`.
    Utf8Packed {
        /// `rows + 1` monotonically increasing byte offsets into `data`.
        offsets: Vec<u32>,
        /// The concatenated UTF-8 bytes of all rows.
        data: Vec<u8>,
    },
    /// One JSON document per row, for nested cells such as lists.
    Json(Vec<String>),
}

impl ColumnData {
    /// The number of rows the data holds (for packed text: `offsets.len() - 1`, or 0).
    pub fn len(&self) -> usize {
        match self {
            ColumnData::Float64(v) => v.len(),
            ColumnData::Int64(v) | ColumnData::TimestampUs(v) => v.len(),
            ColumnData::Boolean(v) => v.len(),
            ColumnData::Utf8(v) | ColumnData::Json(v) => v.len(),
            ColumnData::Utf8Dict { codes, .. } => codes.len(),
            ColumnData::Utf8Packed { offsets, .. } => offsets.len().saturating_sub(1),
        }
    }

    /// Whether the data holds no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A short name of the variant, e.g. `float64` or `utf8-dict` (as spelled in the WIT).
    pub fn type_name(&self) -> &'static str {
        match self {
            ColumnData::Float64(_) => "float64",
            ColumnData::Int64(_) => "int64",
            ColumnData::Boolean(_) => "boolean",
            ColumnData::TimestampUs(_) => "timestamp-us",
            ColumnData::Utf8(_) => "utf8",
            ColumnData::Utf8Dict { .. } => "utf8-dict",
            ColumnData::Utf8Packed { .. } => "utf8-packed",
            ColumnData::Json(_) => "json",
        }
    }

    /// Whether this is one of the three text encodings (`utf8`, `utf8-dict`, `utf8-packed`).
    pub fn is_text(&self) -> bool {
        matches!(
            self,
            ColumnData::Utf8(_) | ColumnData::Utf8Dict { .. } | ColumnData::Utf8Packed { .. }
        )
    }

    /// Whether this is `float64` or `int64`.
    pub fn is_numeric(&self) -> bool {
        matches!(self, ColumnData::Float64(_) | ColumnData::Int64(_))
    }
}

/// One cell of a column, as returned by [`Column::get`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    /// The cell is null.
    Null,
    /// A `float64` cell.
    Float64(f64),
    /// An `int64` cell.
    Int64(i64),
    /// A `boolean` cell.
    Boolean(bool),
    /// A `timestamp-us` cell: microseconds since the Unix epoch, UTC.
    TimestampUs(i64),
    /// A text cell, whatever its encoding.
    Str(&'a str),
    /// A `json` cell: one JSON document.
    Json(&'a str),
}

impl Value<'_> {
    /// Whether the cell is null.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The cell as `f64`, converting integers; `None` for nulls and non-numeric cells.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Float64(v) => Some(v),
            Value::Int64(v) => Some(v as f64),
            _ => None,
        }
    }

    /// The cell as text; `None` unless it is a text cell.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// A named column with an optional null bitmap, mirroring the WIT `column` record.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// The column's name (a label, not necessarily unique).
    pub name: String,
    /// The values.
    pub data: ColumnData,
    /// Arrow-style null bitmap: LSB-first, bit set = value present, `ceil(rows / 8)` bytes.
    /// `None` means no value is null.
    pub validity: Option<Vec<u8>>,
}

/// Number of bytes of a validity bitmap for `rows` rows.
pub fn bitmap_len(rows: usize) -> usize {
    rows.div_ceil(8)
}

/// Builds an LSB-first bitmap from one flag per row (`true` = value present).
pub fn bitmap_from_bools(flags: impl IntoIterator<Item = bool>) -> Vec<u8> {
    let mut bitmap = Vec::new();
    for (i, flag) in flags.into_iter().enumerate() {
        if i % 8 == 0 {
            bitmap.push(0u8);
        }
        if flag {
            bitmap[i / 8] |= 1 << (i % 8);
        }
    }
    bitmap
}

/// Reads bit `i` of an LSB-first bitmap; bits beyond the bitmap read as unset.
pub fn bitmap_get(bitmap: &[u8], i: usize) -> bool {
    bitmap
        .get(i / 8)
        .is_some_and(|byte| byte & (1 << (i % 8)) != 0)
}

/// Splits nullable values into placeholder-filled values and a validity bitmap (`None` when
/// nothing is null).
fn split_nulls<T: Default>(
    values: impl IntoIterator<Item = Option<T>>,
) -> (Vec<T>, Option<Vec<u8>>) {
    let iter = values.into_iter();
    let mut out = Vec::with_capacity(iter.size_hint().0);
    let mut flags = Vec::with_capacity(iter.size_hint().0);
    let mut any_null = false;
    for v in iter {
        flags.push(v.is_some());
        any_null |= v.is_none();
        out.push(v.unwrap_or_default());
    }
    let validity = any_null.then(|| bitmap_from_bools(flags));
    (out, validity)
}

impl Column {
    /// A column with no nulls.
    pub fn new(name: impl Into<String>, data: ColumnData) -> Self {
        Column {
            name: name.into(),
            data,
            validity: None,
        }
    }

    /// Replaces the validity bitmap (see [`bitmap_from_bools`]).
    pub fn with_validity(mut self, validity: Option<Vec<u8>>) -> Self {
        self.validity = validity;
        self
    }

    /// A `float64` column; accepts `f64` or `Option<f64>` items (`None` = null).
    pub fn float64<V: Into<Option<f64>>>(
        name: impl Into<String>,
        values: impl IntoIterator<Item = V>,
    ) -> Self {
        let (data, validity) = split_nulls(values.into_iter().map(Into::into));
        Column::new(name, ColumnData::Float64(data)).with_validity(validity)
    }

    /// An `int64` column; accepts `i64` or `Option<i64>` items (`None` = null).
    pub fn int64<V: Into<Option<i64>>>(
        name: impl Into<String>,
        values: impl IntoIterator<Item = V>,
    ) -> Self {
        let (data, validity) = split_nulls(values.into_iter().map(Into::into));
        Column::new(name, ColumnData::Int64(data)).with_validity(validity)
    }

    /// A `boolean` column; accepts `bool` or `Option<bool>` items (`None` = null).
    pub fn boolean<V: Into<Option<bool>>>(
        name: impl Into<String>,
        values: impl IntoIterator<Item = V>,
    ) -> Self {
        let (data, validity) = split_nulls(values.into_iter().map(Into::into));
        Column::new(name, ColumnData::Boolean(data)).with_validity(validity)
    }

    /// A `timestamp-us` column (microseconds since the Unix epoch, UTC); accepts `i64` or
    /// `Option<i64>` items (`None` = null).
    pub fn timestamp_us<V: Into<Option<i64>>>(
        name: impl Into<String>,
        values: impl IntoIterator<Item = V>,
    ) -> Self {
        let (data, validity) = split_nulls(values.into_iter().map(Into::into));
        Column::new(name, ColumnData::TimestampUs(data)).with_validity(validity)
    }

    /// A text column from `Option<&str>`-like items (`None` = null).
    ///
    /// The encoding is picked like the host does: `utf8-dict` when there is at least one
    /// distinct value and the distinct values are at most half the rows, `utf8-packed`
    /// otherwise. Both transfer much faster than one string per row.
    pub fn utf8<S: AsRef<str>>(
        name: impl Into<String>,
        values: impl IntoIterator<Item = Option<S>>,
    ) -> Self {
        let values: Vec<Option<S>> = values.into_iter().collect();
        let rows = values.len();
        // A fixed-key hasher: `RandomState` would make every plugin import
        // `wasi:random/insecure-seed` just to build a text column.
        let mut positions: HashMap<&str, u32, BuildHasherDefault<DefaultHasher>> =
            HashMap::default();
        let mut dictionary: Vec<&str> = Vec::new();
        let mut codes = Vec::with_capacity(rows);
        let mut dict_fits = true;
        for v in &values {
            match v {
                None => codes.push(0),
                Some(s) => {
                    let s = s.as_ref();
                    let code = *positions.entry(s).or_insert_with(|| {
                        dictionary.push(s);
                        (dictionary.len() - 1) as u32
                    });
                    codes.push(code);
                    if dictionary.len() * 2 > rows {
                        dict_fits = false;
                        break;
                    }
                }
            }
        }
        let validity = values
            .iter()
            .any(Option::is_none)
            .then(|| bitmap_from_bools(values.iter().map(Option::is_some)));
        let data = if dict_fits && !dictionary.is_empty() {
            ColumnData::Utf8Dict {
                dictionary: dictionary.into_iter().map(str::to_owned).collect(),
                codes,
            }
        } else {
            let mut offsets = Vec::with_capacity(rows + 1);
            let mut bytes = Vec::new();
            offsets.push(0u32);
            for v in &values {
                if let Some(s) = v {
                    bytes.extend_from_slice(s.as_ref().as_bytes());
                }
                offsets.push(u32::try_from(bytes.len()).expect("text column exceeds 4 GiB"));
            }
            ColumnData::Utf8Packed {
                offsets,
                data: bytes,
            }
        };
        Column::new(name, data).with_validity(validity)
    }

    /// A `json` column: one JSON document per row (`None` = null). The SDK does not check
    /// that the documents parse; the host does.
    pub fn json<S: Into<String>>(
        name: impl Into<String>,
        values: impl IntoIterator<Item = Option<S>>,
    ) -> Self {
        let (data, validity) = split_nulls(values.into_iter().map(|v| v.map(Into::into)));
        Column::new(name, ColumnData::Json(data)).with_validity(validity)
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Whether row `i` is null. Rows beyond the bitmap count as null when a bitmap is present.
    pub fn is_null(&self, i: usize) -> bool {
        match &self.validity {
            None => false,
            Some(bitmap) => !bitmap_get(bitmap, i),
        }
    }

    /// The number of null rows.
    pub fn null_count(&self) -> usize {
        match &self.validity {
            None => 0,
            Some(bitmap) => {
                // Whole bytes by popcount, then the bits of a partial last byte.
                let n = self.len();
                let full = n / 8;
                let set: usize = bitmap
                    .iter()
                    .take(full)
                    .map(|b| b.count_ones() as usize)
                    .sum::<usize>()
                    + (full * 8..n).filter(|&i| bitmap_get(bitmap, i)).count();
                n - set
            }
        }
    }

    /// The values of a `float64` column (null rows hold placeholders).
    pub fn f64(&self) -> Option<&[f64]> {
        match &self.data {
            ColumnData::Float64(v) => Some(v),
            _ => None,
        }
    }

    /// The values of an `int64` column (null rows hold placeholders).
    pub fn i64(&self) -> Option<&[i64]> {
        match &self.data {
            ColumnData::Int64(v) => Some(v),
            _ => None,
        }
    }

    /// The values of a `boolean` column (null rows hold placeholders).
    pub fn bool(&self) -> Option<&[bool]> {
        match &self.data {
            ColumnData::Boolean(v) => Some(v),
            _ => None,
        }
    }

    /// The values of a `timestamp-us` column (null rows hold placeholders). Named `ts_us`
    /// because [`Column::timestamp_us`] is the constructor.
    pub fn ts_us(&self) -> Option<&[i64]> {
        match &self.data {
            ColumnData::TimestampUs(v) => Some(v),
            _ => None,
        }
    }

    /// The rows of a text column, whatever its encoding (`utf8`, `utf8-dict` or
    /// `utf8-packed`), with `None` for nulls. Returns `None` if the column is not text.
    ///
    /// Packed rows that are not valid UTF-8 read as `""`; [`Table::validate`] rejects them.
    pub fn str_iter(&self) -> Option<StrIter<'_>> {
        self.data.is_text().then_some(StrIter {
            column: self,
            next: 0,
            len: self.len(),
        })
    }

    /// The text of row `i` of a text or `json` column; `None` for nulls, other types, or an
    /// out-of-range row.
    pub fn str_at(&self, i: usize) -> Option<&str> {
        if i >= self.len() || self.is_null(i) {
            return None;
        }
        match &self.data {
            ColumnData::Utf8(v) | ColumnData::Json(v) => Some(&v[i]),
            ColumnData::Utf8Dict { dictionary, codes } => {
                dictionary.get(codes[i] as usize).map(String::as_str)
            }
            ColumnData::Utf8Packed { offsets, data } => {
                let (start, end) = (offsets[i] as usize, offsets[i + 1] as usize);
                Some(
                    data.get(start..end)
                        .and_then(|b| std::str::from_utf8(b).ok())
                        .unwrap_or(""),
                )
            }
            _ => None,
        }
    }

    /// The cell at row `i`.
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`.
    pub fn get(&self, i: usize) -> Value<'_> {
        assert!(
            i < self.len(),
            "row {i} out of range for column `{}` of {} rows",
            self.name,
            self.len()
        );
        if self.is_null(i) {
            return Value::Null;
        }
        match &self.data {
            ColumnData::Float64(v) => Value::Float64(v[i]),
            ColumnData::Int64(v) => Value::Int64(v[i]),
            ColumnData::Boolean(v) => Value::Boolean(v[i]),
            ColumnData::TimestampUs(v) => Value::TimestampUs(v[i]),
            ColumnData::Json(v) => Value::Json(&v[i]),
            _ => self.str_at(i).map_or(Value::Null, Value::Str),
        }
    }

    /// Checks the column against `rows`: data length, bitmap size, dictionary codes, packed
    /// offsets (monotonic, in bounds) and that packed bytes are valid UTF-8.
    pub fn validate(&self, rows: usize) -> Result<(), TableError> {
        let fail = |msg: String| Err(TableError::new(format!("column `{}`: {msg}", self.name)));
        match &self.data {
            ColumnData::Utf8Packed { offsets, data } => {
                if offsets.len() != rows + 1 {
                    return fail(format!(
                        "utf8-packed has {} offsets, expected {} (rows + 1)",
                        offsets.len(),
                        rows + 1
                    ));
                }
                for (i, pair) in offsets.windows(2).enumerate() {
                    let (start, end) = (pair[0] as usize, pair[1] as usize);
                    if start > end {
                        return fail(format!("utf8-packed offsets decrease at row {i}"));
                    }
                    if end > data.len() {
                        return fail(format!(
                            "utf8-packed offset {end} at row {i} is beyond the {} data bytes",
                            data.len()
                        ));
                    }
                    if std::str::from_utf8(&data[start..end]).is_err() {
                        return fail(format!("utf8-packed row {i} is not valid UTF-8"));
                    }
                }
            }
            ColumnData::Utf8Dict { dictionary, codes } => {
                if codes.len() != rows {
                    return fail(format!("has {} codes, expected {rows}", codes.len()));
                }
                // A branch-free maximum first (one cheap pass over a million codes); the
                // offending row is only looked for when there is one.
                let max = codes.iter().fold(0u32, |m, &c| m.max(c));
                if max as usize >= dictionary.len()
                    && let Some((i, code)) = codes
                        .iter()
                        .enumerate()
                        .find(|(_, c)| **c as usize >= dictionary.len())
                {
                    return fail(format!(
                        "dictionary code {code} at row {i} is out of range (dictionary has {} entries)",
                        dictionary.len()
                    ));
                }
            }
            data => {
                if data.len() != rows {
                    return fail(format!(
                        "{} data has {} values, expected {rows}",
                        data.type_name(),
                        data.len()
                    ));
                }
            }
        }
        if let Some(bitmap) = &self.validity
            && bitmap.len() != bitmap_len(rows)
        {
            return fail(format!(
                "validity bitmap has {} bytes, expected {}",
                bitmap.len(),
                bitmap_len(rows)
            ));
        }
        Ok(())
    }
}

/// Iterator over the rows of a text column, returned by [`Column::str_iter`].
#[derive(Debug, Clone)]
pub struct StrIter<'a> {
    column: &'a Column,
    next: usize,
    len: usize,
}

impl<'a> Iterator for StrIter<'a> {
    type Item = Option<&'a str>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.len {
            return None;
        }
        let i = self.next;
        self.next += 1;
        Some(self.column.str_at(i))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.len - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for StrIter<'_> {}

/// A columnar table, mirroring the WIT `table` record.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    /// The number of rows; every column (and index level) holds this many values.
    pub num_rows: usize,
    /// The data columns.
    pub columns: Vec<Column>,
    /// Row labels: zero or more index levels, each `num_rows` long. Empty means rows are
    /// labelled by position.
    pub index: Vec<Column>,
}

impl Table {
    /// An empty table with `num_rows` rows and no columns.
    pub fn new(num_rows: usize) -> Self {
        Table {
            num_rows,
            columns: Vec::new(),
            index: Vec::new(),
        }
    }

    /// Starts a [`TableBuilder`].
    pub fn builder() -> TableBuilder {
        TableBuilder::new()
    }

    /// The first data column named `name`.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// The first data column named `name`, mutably.
    pub fn column_mut(&mut self, name: &str) -> Option<&mut Column> {
        self.columns.iter_mut().find(|c| c.name == name)
    }

    /// The names of the data columns, in order.
    pub fn column_names(&self) -> impl Iterator<Item = &str> {
        self.columns.iter().map(|c| c.name.as_str())
    }

    /// Appends a data column, checking that its length matches `num_rows`.
    pub fn push_column(&mut self, column: Column) -> Result<(), TableError> {
        column.validate(self.num_rows)?;
        self.columns.push(column);
        Ok(())
    }

    /// Checks every column and index level: lengths equal `num_rows`, bitmaps are
    /// `ceil(num_rows / 8)` bytes, dictionary codes are in range, packed offsets are
    /// monotonic and in bounds, and packed bytes are valid UTF-8.
    ///
    /// The SDK runs this on every table it receives from the host.
    pub fn validate(&self) -> Result<(), TableError> {
        if u32::try_from(self.num_rows).is_err() {
            return Err(TableError::new(format!(
                "{} rows exceed the 2^32 - 1 limit",
                self.num_rows
            )));
        }
        for column in &self.columns {
            column.validate(self.num_rows)?;
        }
        for level in &self.index {
            level
                .validate(self.num_rows)
                .map_err(|e| TableError::new(format!("index {}", e.message)))?;
        }
        Ok(())
    }
}

/// Builds a [`Table`] column by column, validating the result.
///
/// ```
/// use liteset_sdk::{Column, TableBuilder};
///
/// let table = TableBuilder::new()
///     .utf8("country", [Some("FR"), Some("DE"), None])
///     .float64("sales", [Some(1.5), None, Some(3.0)])
///     .int64("orders", [1, 2, 3])
///     .column(Column::boolean("flag", [true, false, true]))
///     .build()
///     .unwrap();
/// assert_eq!(table.num_rows, 3);
/// assert!(table.column("sales").unwrap().is_null(1));
/// ```
#[derive(Debug, Clone, Default)]
pub struct TableBuilder {
    num_rows: Option<usize>,
    columns: Vec<Column>,
    index: Vec<Column>,
}

impl TableBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        TableBuilder::default()
    }

    /// Sets the row count explicitly (needed only for a table without columns).
    pub fn num_rows(mut self, rows: usize) -> Self {
        self.num_rows = Some(rows);
        self
    }

    /// Adds a data column.
    pub fn column(mut self, column: Column) -> Self {
        self.columns.push(column);
        self
    }

    /// Adds an index level.
    pub fn index(mut self, level: Column) -> Self {
        self.index.push(level);
        self
    }

    /// Adds a `float64` column (see [`Column::float64`]).
    pub fn float64<V: Into<Option<f64>>>(
        self,
        name: impl Into<String>,
        values: impl IntoIterator<Item = V>,
    ) -> Self {
        self.column(Column::float64(name, values))
    }

    /// Adds an `int64` column (see [`Column::int64`]).
    pub fn int64<V: Into<Option<i64>>>(
        self,
        name: impl Into<String>,
        values: impl IntoIterator<Item = V>,
    ) -> Self {
        self.column(Column::int64(name, values))
    }

    /// Adds a `boolean` column (see [`Column::boolean`]).
    pub fn boolean<V: Into<Option<bool>>>(
        self,
        name: impl Into<String>,
        values: impl IntoIterator<Item = V>,
    ) -> Self {
        self.column(Column::boolean(name, values))
    }

    /// Adds a `timestamp-us` column (see [`Column::timestamp_us`]).
    pub fn timestamp_us<V: Into<Option<i64>>>(
        self,
        name: impl Into<String>,
        values: impl IntoIterator<Item = V>,
    ) -> Self {
        self.column(Column::timestamp_us(name, values))
    }

    /// Adds a text column, dictionary- or packed-encoded (see [`Column::utf8`]).
    pub fn utf8<S: AsRef<str>>(
        self,
        name: impl Into<String>,
        values: impl IntoIterator<Item = Option<S>>,
    ) -> Self {
        self.column(Column::utf8(name, values))
    }

    /// Adds a `json` column (see [`Column::json`]).
    pub fn json<S: Into<String>>(
        self,
        name: impl Into<String>,
        values: impl IntoIterator<Item = Option<S>>,
    ) -> Self {
        self.column(Column::json(name, values))
    }

    /// Builds and [validates](Table::validate) the table. The row count is the explicit
    /// [`num_rows`](Self::num_rows), else the first column's (or index level's) length, else 0.
    pub fn build(self) -> Result<Table, TableError> {
        let num_rows = self
            .num_rows
            .or_else(|| self.columns.first().map(Column::len))
            .or_else(|| self.index.first().map(Column::len))
            .unwrap_or(0);
        let table = Table {
            num_rows,
            columns: self.columns,
            index: self.index,
        };
        table.validate()?;
        Ok(table)
    }
}

/// A table that breaks the [`Table::validate`] rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableError {
    /// What is wrong, naming the column.
    pub message: String,
}

impl TableError {
    /// A new error with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        TableError {
            message: message.into(),
        }
    }
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TableError {}
