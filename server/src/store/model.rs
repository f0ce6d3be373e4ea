//! One generic mechanism for every catalog resource: a static [`Model`] describes a table's
//! fields (scalar columns, computed expressions, to-one and to-many relations), and the same
//! description drives filtering, ordering, paging, loading and writing.
//!
//! The API layer refers to fields by name only; every SQL fragment lives here or in the model
//! declarations of `catalog.rs`, so the store stays the only code that writes SQL against the
//! metadata schema. Field names and SQL come from static declarations, never from input; input
//! values are always bound parameters.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use super::db::{Executor, FromValue, Row, Value};
use super::{Error, Result, Store};

/// The type of a scalar field, which decides its filter operators and its decoding (SQLite
/// stores booleans as integers and timestamps as text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Text.
    Text,
    /// Integer.
    Int,
    /// Floating point.
    Float,
    /// Boolean.
    Bool,
    /// Naive UTC timestamp.
    Time,
}

/// One named field of a [`Model`].
#[derive(Debug)]
pub enum Field {
    /// A real column of the model's table, readable and writable.
    Column {
        /// Column name in the table.
        col: &'static str,
        /// Its type.
        kind: Kind,
    },
    /// A read-only SQL expression over the row aliased `t` (used for ordering and filtering
    /// on related values, e.g. `changed_by.first_name`).
    Computed {
        /// The expression.
        sql: &'static str,
        /// Its type.
        kind: Kind,
    },
    /// A foreign key to one record of another model.
    ToOne {
        /// The foreign-key column of this table.
        fk: &'static str,
        /// The related model.
        target: &'static Model,
    },
    /// A many-to-many link through an association table.
    ToMany {
        /// The association table.
        link: &'static str,
        /// Its column pointing at this model.
        own: &'static str,
        /// Its column pointing at the related model.
        other: &'static str,
        /// The related model.
        target: &'static Model,
    },
}

/// A table and its named fields.
#[derive(Debug)]
pub struct Model {
    /// The table name.
    pub table: &'static str,
    /// Every field clients may see, filter or order by.
    pub fields: &'static [(&'static str, Field)],
}

impl Model {
    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&'static Field> {
        self.fields.iter().find(|(n, _)| *n == name).map(|(_, f)| f)
    }

    /// The scalar kind of a field (`None` for relations).
    pub fn kind(&self, name: &str) -> Option<Kind> {
        match self.field(name)? {
            Field::Column { kind, .. } | Field::Computed { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    fn expr(&self, name: &str) -> Result<String> {
        match self.field(name) {
            Some(Field::Column { col, .. }) => Ok(format!("t.{}", quote(col))),
            Some(Field::Computed { sql, .. }) => Ok((*sql).to_owned()),
            Some(Field::ToOne { fk, .. }) => Ok(format!("t.{}", quote(fk))),
            _ => Err(unknown(self, name)),
        }
    }
}

fn unknown(model: &Model, name: &str) -> Error {
    Error::Config {
        message: format!("{} has no scalar field {name}", model.table),
    }
}

/// `offset`, `limit` and `rows` are reserved words in one of the two engines.
fn quote(col: &str) -> String {
    match col {
        "offset" | "limit" | "rows" | "schema" => format!("\"{col}\""),
        _ => col.to_owned(),
    }
}

/// A filter operator (FAB's generic `opr` values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `=` (`IS NULL` for a null value).
    Eq,
    /// `<>`.
    Neq,
    /// `>`.
    Gt,
    /// `<`.
    Lt,
    /// Case-insensitive prefix.
    StartsWith,
    /// Not a case-insensitive prefix.
    NotStartsWith,
    /// Case-insensitive suffix.
    EndsWith,
    /// Not a case-insensitive suffix.
    NotEndsWith,
    /// Case-insensitive substring.
    Contains,
    /// Not a case-insensitive substring.
    NotContains,
    /// One of a list.
    In,
    /// None of a list.
    NotIn,
    /// The to-one relation points at the id.
    RelOneToMany,
    /// The to-one relation does not point at the id.
    NotRelOneToMany,
    /// The to-many relation includes the id.
    RelManyToMany,
}

/// A boolean condition over the row `t`, with `?` marking bound values.
#[derive(Clone, Debug)]
pub enum Pred {
    /// An SQL fragment and its values in order.
    Sql(String, Vec<Value>),
    /// Every condition holds.
    And(Vec<Pred>),
    /// Any condition holds.
    Or(Vec<Pred>),
    /// The condition does not hold.
    Not(Box<Pred>),
}

impl Pred {
    /// Always true.
    pub fn all() -> Pred {
        Pred::Sql("1 = 1".into(), vec![])
    }

    /// Always false.
    pub fn none() -> Pred {
        Pred::Sql("1 = 0".into(), vec![])
    }

    /// A static fragment with bound values.
    pub fn sql(sql: impl Into<String>, params: Vec<Value>) -> Pred {
        Pred::Sql(sql.into(), params)
    }

    /// `field <op> value` according to the field's type.
    pub fn field(model: &Model, name: &str, op: Op, value: Value) -> Result<Pred> {
        let field = model.field(name).ok_or_else(|| unknown(model, name))?;
        if let Field::ToMany {
            link, own, other, ..
        } = field
        {
            let sql =
                format!("EXISTS (SELECT 1 FROM {link} l WHERE l.{own} = t.id AND l.{other} = ?)");
            return Ok(match op {
                Op::RelManyToMany | Op::Eq => Pred::Sql(sql, vec![value]),
                _ => Pred::Not(Box::new(Pred::Sql(sql, vec![value]))),
            });
        }
        let expr = model.expr(name)?;
        let like = |pattern: String| {
            Pred::Sql(
                format!("LOWER({expr}) LIKE LOWER(?)"),
                vec![Value::Text(pattern)],
            )
        };
        let text = || match &value {
            Value::Text(s) => s.clone(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => f.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => String::new(),
        };
        let not = |p: Pred| Pred::Not(Box::new(p));
        Ok(match op {
            Op::Eq | Op::RelOneToMany if value == Value::Null => {
                Pred::Sql(format!("{expr} IS NULL"), vec![])
            }
            Op::Eq | Op::RelOneToMany => Pred::Sql(format!("{expr} = ?"), vec![value]),
            Op::Neq if value == Value::Null => Pred::Sql(format!("{expr} IS NOT NULL"), vec![]),
            Op::Neq => Pred::Sql(format!("{expr} <> ?"), vec![value]),
            Op::NotRelOneToMany => {
                Pred::Sql(format!("({expr} IS NULL OR {expr} <> ?)"), vec![value])
            }
            Op::Gt => Pred::Sql(format!("{expr} > ?"), vec![value]),
            Op::Lt => Pred::Sql(format!("{expr} < ?"), vec![value]),
            Op::StartsWith => like(format!("{}%", text())),
            Op::NotStartsWith => not(like(format!("{}%", text()))),
            Op::EndsWith => like(format!("%{}", text())),
            Op::NotEndsWith => not(like(format!("%{}", text()))),
            Op::Contains => like(format!("%{}%", text())),
            Op::NotContains => not(like(format!("%{}%", text()))),
            Op::In | Op::NotIn => {
                let values = match value {
                    Value::Null => vec![],
                    v => vec![v],
                };
                Pred::in_list(&expr, values, op == Op::NotIn)
            }
            Op::RelManyToMany => return Err(unknown(model, name)),
        })
    }

    /// `expr IN (…)`; an empty list matches nothing (or everything when negated).
    pub fn in_list(expr: &str, values: Vec<Value>, negate: bool) -> Pred {
        if values.is_empty() {
            return if negate { Pred::all() } else { Pred::none() };
        }
        let marks = vec!["?"; values.len()].join(", ");
        let kw = if negate { "NOT IN" } else { "IN" };
        Pred::Sql(format!("{expr} {kw} ({marks})"), values)
    }

    /// `field IN (values)` for a scalar field.
    pub fn field_in(model: &Model, name: &str, values: Vec<Value>) -> Result<Pred> {
        Ok(Pred::in_list(&model.expr(name)?, values, false))
    }

    fn render(&self, out: &mut String, params: &mut Vec<Value>) {
        match self {
            Pred::Sql(sql, values) => {
                out.push('(');
                let mut values = values.iter();
                for ch in sql.chars() {
                    if ch == '?' {
                        params.push(values.next().cloned().unwrap_or(Value::Null));
                        let _ = write!(out, "${}", params.len());
                    } else {
                        out.push(ch);
                    }
                }
                out.push(')');
            }
            Pred::And(items) | Pred::Or(items) => {
                if items.is_empty() {
                    out.push_str(if matches!(self, Pred::And(_)) {
                        "(1 = 1)"
                    } else {
                        "(1 = 0)"
                    });
                    return;
                }
                let sep = if matches!(self, Pred::And(_)) {
                    " AND "
                } else {
                    " OR "
                };
                out.push('(');
                for (i, p) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(sep);
                    }
                    p.render(out, params);
                }
                out.push(')');
            }
            Pred::Not(p) => {
                out.push_str("(NOT ");
                p.render(out, params);
                out.push(')');
            }
        }
    }
}

/// A page request: 0-based page index and size.
#[derive(Clone, Copy, Debug)]
pub struct Page {
    /// Page index.
    pub index: u64,
    /// Rows per page.
    pub size: u64,
}

/// Ordering by a field; ties are broken by id so pages are stable.
#[derive(Clone, Copy, Debug)]
pub struct Order<'a> {
    /// Field name in the model.
    pub field: &'a str,
    /// Descending when true.
    pub desc: bool,
}

/// A loaded record: its id, scalar fields and loaded relations.
#[derive(Clone, Debug, Default)]
pub struct Record {
    /// Primary key.
    pub id: i64,
    /// Scalar fields by name, decoded to their kind.
    pub values: HashMap<&'static str, Value>,
    /// Related records by relation name (a to-one relation holds zero or one).
    pub relations: HashMap<&'static str, Vec<Record>>,
}

impl Record {
    /// A scalar field converted to `T` (`None` when null, absent or of another type).
    pub fn get<T: FromValue>(&self, name: &str) -> Option<T> {
        self.values.get(name).and_then(|v| T::from_value(v))
    }

    /// A text field, or "" when null.
    pub fn text(&self, name: &str) -> String {
        self.get::<String>(name).unwrap_or_default()
    }

    /// A boolean field, false when null.
    pub fn flag(&self, name: &str) -> bool {
        self.get::<bool>(name).unwrap_or(false)
    }

    /// The related records of a relation (empty when not loaded or none).
    pub fn related(&self, name: &str) -> &[Record] {
        self.relations.get(name).map_or(&[], Vec::as_slice)
    }

    /// The one related record of a to-one relation.
    pub fn one(&self, name: &str) -> Option<&Record> {
        self.related(name).first()
    }
}

fn decode(kind: Kind, v: Value) -> Value {
    match (kind, v) {
        (_, Value::Null) => Value::Null,
        (Kind::Bool, Value::Int(i)) => Value::Bool(i != 0),
        (Kind::Time, v @ Value::Text(_)) => {
            <chrono::NaiveDateTime as FromValue>::from_value(&v).map_or(v, Value::Timestamp)
        }
        (Kind::Float, Value::Int(i)) =>
        {
            #[allow(clippy::cast_precision_loss, reason = "metadata floats are small")]
            Value::Float(i as f64)
        }
        (_, v) => v,
    }
}

/// Renders `pred` and returns the SQL and its parameters.
fn where_clause(pred: &Pred) -> (String, Vec<Value>) {
    let mut sql = String::new();
    let mut params = Vec::new();
    pred.render(&mut sql, &mut params);
    (sql, params)
}

// The reads below take any executor, so a multi-record write (a bundle import) sees its
// own uncommitted rows through its transaction; `Store`'s methods run them on the pool.

/// The total count of rows matching `pred`, and the ids of one ordered page of them.
pub async fn list_ids_in(
    ex: &impl Executor,
    model: &Model,
    pred: &Pred,
    order: Option<Order<'_>>,
    page: Option<Page>,
) -> Result<(i64, Vec<i64>)> {
    let (cond, params) = where_clause(pred);
    let table = model.table;
    let count: i64 = ex
        .query_one(
            &format!("SELECT COUNT(*) AS n FROM {table} t WHERE {cond}"),
            params.clone(),
        )
        .await?
        .get("n")?;
    let mut sql = format!("SELECT t.id AS id FROM {table} t WHERE {cond} ORDER BY ");
    if let Some(o) = order {
        let dir = if o.desc { "DESC" } else { "ASC" };
        let _ = write!(sql, "{} {dir}, ", model.expr(o.field)?);
    }
    sql.push_str("t.id ASC");
    if let Some(p) = page {
        let _ = write!(
            sql,
            " LIMIT {} OFFSET {}",
            p.size,
            p.index.saturating_mul(p.size)
        );
    }
    let ids = ex
        .query(&sql, params)
        .await?
        .iter()
        .map(|r| r.get("id"))
        .collect::<Result<Vec<i64>>>()?;
    Ok((count, ids))
}

/// Whether a row with this id matches `pred`.
pub async fn matches_in(ex: &impl Executor, model: &Model, id: i64, pred: &Pred) -> Result<bool> {
    Ok(reach_in(ex, model, id, pred).await? == Some(true))
}

/// `None` when no row has this id, else whether it matches `pred`: existence (404) and access
/// (403) in one statement, since every data request asks both.
pub async fn reach_in(
    ex: &impl Executor,
    model: &Model,
    id: i64,
    pred: &Pred,
) -> Result<Option<bool>> {
    let (cond, mut params) = where_clause(pred);
    params.push(Value::Int(id));
    let (table, n) = (model.table, params.len());
    // BIGINT: PostgreSQL types a bare CASE of literals as int4, which does not decode as i64.
    let sql = format!(
        "SELECT CAST(CASE WHEN {cond} THEN 1 ELSE 0 END AS BIGINT) AS n FROM {table} t WHERE t.id = ${n}"
    );
    ex.query_opt(&sql, params)
        .await?
        .map(|row| row.get::<i64>("n").map(|n| n == 1))
        .transpose()
}

/// Loads the records with these ids (in the given order; missing ids are skipped) with
/// every scalar field and the named relations.
pub async fn load_in(
    ex: &impl Executor,
    model: &'static Model,
    ids: &[i64],
    relations: &[&str],
) -> Result<Vec<Record>> {
    if ids.is_empty() {
        return Ok(vec![]);
    }
    let mut cols = vec!["t.id AS id".to_owned()];
    for (name, field) in model.fields {
        match field {
            Field::Column { col, .. } => {
                cols.push(format!("t.{} AS \"{name}\"", quote(col)));
            }
            // Row-local expressions are loaded too; dotted ones (`changed_by.first_name`)
            // exist for filtering and ordering and come with the relation instead.
            Field::Computed { sql, .. } if !name.contains('.') => {
                cols.push(format!("{sql} AS \"{name}\""));
            }
            Field::ToOne { fk, .. } => cols.push(format!("t.{fk} AS \"{name}__fk\"")),
            _ => {}
        }
    }
    let marks: Vec<String> = (1..=ids.len()).map(|i| format!("${i}")).collect();
    let sql = format!(
        "SELECT {} FROM {} t WHERE t.id IN ({})",
        cols.join(", "),
        model.table,
        marks.join(", ")
    );
    let rows = ex
        .query(&sql, ids.iter().map(|i| Value::Int(*i)).collect())
        .await?;
    let mut by_id: HashMap<i64, Record> = HashMap::new();
    let mut fks: HashMap<&'static str, HashMap<i64, i64>> = HashMap::new();
    for row in &rows {
        let rec = decode_row(model, row, &mut fks)?;
        by_id.insert(rec.id, rec);
    }
    // To-one relations with the same target (created_by, changed_by, last_saved_by: all
    // users) are loaded with one statement per target, not one per relation.
    let mut shared: Vec<(&'static Model, HashMap<i64, Record>)> = Vec::new();
    for rel in relations {
        if let Some(Field::ToOne { target, .. }) = model.field(rel) {
            let wanted: BTreeSet<i64> = fks
                .iter()
                .filter(|(n, _)| match model.field(n) {
                    Some(Field::ToOne { target: t, .. }) => {
                        std::ptr::eq(*t, *target) && relations.contains(n)
                    }
                    _ => false,
                })
                .flat_map(|(_, m)| m.values().copied())
                .collect();
            if shared.iter().any(|(t, _)| std::ptr::eq(*t, *target)) {
                continue;
            }
            let wanted: Vec<i64> = wanted.into_iter().collect();
            let loaded = Box::pin(load_in(ex, target, &wanted, &[])).await?;
            shared.push((target, loaded.into_iter().map(|r| (r.id, r)).collect()));
        }
    }
    for rel in relations {
        let Some(field) = model.field(rel) else {
            return Err(unknown(model, rel));
        };
        let name = model
            .fields
            .iter()
            .find(|(n, _)| n == rel)
            .map_or("", |(n, _)| *n);
        match field {
            Field::ToOne { target, .. } => {
                let map = fks.remove(name).unwrap_or_default();
                let Some((_, targets)) = shared.iter().find(|(t, _)| std::ptr::eq(*t, *target))
                else {
                    continue;
                };
                for (id, fk) in map {
                    if let (Some(rec), Some(t)) = (by_id.get_mut(&id), targets.get(&fk)) {
                        rec.relations.insert(name, vec![t.clone()]);
                    }
                }
            }
            Field::ToMany {
                link,
                own,
                other,
                target,
            } => {
                let marks: Vec<String> = (1..=ids.len()).map(|i| format!("${i}")).collect();
                let pairs = ex
                    .query(
                        &format!(
                            "SELECT {own} AS own, {other} AS other FROM {link} \
                             WHERE {own} IN ({}) ORDER BY id",
                            marks.join(", ")
                        ),
                        ids.iter().map(|i| Value::Int(*i)).collect(),
                    )
                    .await?;
                let pairs: Vec<(i64, i64)> = pairs
                    .iter()
                    .map(|r| Ok((r.get("own")?, r.get("other")?)))
                    .collect::<Result<_>>()?;
                let wanted: BTreeSet<i64> = pairs.iter().map(|p| p.1).collect();
                let wanted: Vec<i64> = wanted.into_iter().collect();
                let targets = Box::pin(load_in(ex, target, &wanted, &[])).await?;
                let targets: HashMap<i64, Record> =
                    targets.into_iter().map(|r| (r.id, r)).collect();
                for rec in by_id.values_mut() {
                    rec.relations.insert(name, vec![]);
                }
                for (own_id, other_id) in pairs {
                    if let (Some(rec), Some(t)) = (by_id.get_mut(&own_id), targets.get(&other_id)) {
                        rec.relations.entry(name).or_default().push(t.clone());
                    }
                }
            }
            _ => return Err(unknown(model, rel)),
        }
    }
    Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
}

/// Loads one record, or `NotFound`.
pub async fn load_one_in(
    ex: &impl Executor,
    model: &'static Model,
    id: i64,
    relations: &[&str],
) -> Result<Record> {
    load_in(ex, model, &[id], relations)
        .await?
        .pop()
        .ok_or(Error::NotFound)
}

/// The id of the row whose scalar `field` equals `value`, if any.
pub async fn find_id_in(
    ex: &impl Executor,
    model: &Model,
    field: &str,
    value: Value,
) -> Result<Option<i64>> {
    let p = Pred::field(model, field, Op::Eq, value)?;
    Ok(
        list_ids_in(ex, model, &p, None, Some(Page { index: 0, size: 1 }))
            .await?
            .1
            .first()
            .copied(),
    )
}

impl Store {
    /// The total count of rows matching `pred`, and the ids of one ordered page of them.
    pub async fn list_ids(
        &self,
        model: &Model,
        pred: &Pred,
        order: Option<Order<'_>>,
        page: Option<Page>,
    ) -> Result<(i64, Vec<i64>)> {
        list_ids_in(self.db(), model, pred, order, page).await
    }

    /// Whether a row with this id matches `pred`.
    pub async fn matches(&self, model: &Model, id: i64, pred: &Pred) -> Result<bool> {
        matches_in(self.db(), model, id, pred).await
    }

    /// See [`reach_in`].
    pub async fn reach(&self, model: &Model, id: i64, pred: &Pred) -> Result<Option<bool>> {
        reach_in(self.db(), model, id, pred).await
    }

    /// Loads the records with these ids (in the given order; missing ids are skipped) with
    /// every scalar field and the named relations.
    pub async fn load(
        &self,
        model: &'static Model,
        ids: &[i64],
        relations: &[&str],
    ) -> Result<Vec<Record>> {
        load_in(self.db(), model, ids, relations).await
    }

    /// Loads one record, or `NotFound`.
    pub async fn load_one(
        &self,
        model: &'static Model,
        id: i64,
        relations: &[&str],
    ) -> Result<Record> {
        load_one_in(self.db(), model, id, relations).await
    }

    /// The id of the row whose scalar `field` equals `value`, if any.
    pub async fn find_id(&self, model: &Model, field: &str, value: Value) -> Result<Option<i64>> {
        find_id_in(self.db(), model, field, value).await
    }

    /// Distinct non-null values of a text field starting with `prefix` (case-insensitive)
    /// among rows matching `scope`, sorted ascending.
    pub async fn distinct(
        &self,
        model: &Model,
        field: &str,
        prefix: &str,
        scope: &Pred,
        page: Page,
    ) -> Result<(i64, Vec<Value>)> {
        let expr = model.expr(field)?;
        let pred = Pred::And(vec![
            scope.clone(),
            Pred::sql(format!("{expr} IS NOT NULL"), vec![]),
            Pred::field(model, field, Op::StartsWith, Value::Text(prefix.into()))?,
        ]);
        let (cond, params) = where_clause(&pred);
        let table = model.table;
        let count: i64 = self
            .db()
            .query_one(
                &format!(
                    "SELECT COUNT(*) AS n FROM (SELECT DISTINCT {expr} AS v FROM {table} t \
                     WHERE {cond}) d"
                ),
                params.clone(),
            )
            .await?
            .get("n")?;
        let rows = self
            .db()
            .query(
                &format!(
                    "SELECT DISTINCT {expr} AS v FROM {table} t WHERE {cond} ORDER BY v \
                     LIMIT {} OFFSET {}",
                    page.size,
                    page.index.saturating_mul(page.size)
                ),
                params,
            )
            .await?;
        Ok((
            count,
            rows.iter()
                .map(|r| r.get::<Value>("v"))
                .collect::<Result<_>>()?,
        ))
    }
}

fn decode_row(
    model: &Model,
    row: &Row,
    fks: &mut HashMap<&'static str, HashMap<i64, i64>>,
) -> Result<Record> {
    let id: i64 = row.get("id")?;
    let mut rec = Record {
        id,
        ..Record::default()
    };
    for (name, field) in model.fields {
        match field {
            Field::Column { kind, .. } => {
                rec.values
                    .insert(name, decode(*kind, row.get::<Value>(name)?));
            }
            Field::Computed { kind, .. } if !name.contains('.') => {
                rec.values
                    .insert(name, decode(*kind, row.get::<Value>(name)?));
            }
            Field::ToOne { .. } => {
                if let Some(fk) = row.get::<Option<i64>>(&format!("{name}__fk"))? {
                    fks.entry(name).or_default().insert(id, fk);
                }
            }
            _ => {}
        }
    }
    Ok(rec)
}

/// Writes to a model's real columns; callers pass field names, which are checked against the
/// model so that nothing but its declared columns can be written.
pub(crate) fn columns_for<'a>(
    model: &Model,
    values: &'a [(&'a str, Value)],
) -> Result<Vec<(&'static str, &'a Value)>> {
    values
        .iter()
        .map(|(name, v)| match model.field(name) {
            Some(Field::Column { col, .. }) => Ok((*col, v)),
            Some(Field::ToOne { fk, .. }) => Ok((*fk, v)),
            _ => Err(unknown(model, name)),
        })
        .collect()
}

/// Inserts a row; returns its id.
pub(crate) async fn insert(
    ex: &impl Executor,
    model: &Model,
    values: &[(&str, Value)],
) -> Result<i64> {
    let cols = columns_for(model, values)?;
    let names: Vec<String> = cols.iter().map(|(c, _)| quote(c)).collect();
    let marks: Vec<String> = (1..=cols.len()).map(|i| format!("${i}")).collect();
    let sql = format!(
        "INSERT INTO {} ({}) VALUES ({}) RETURNING id",
        model.table,
        names.join(", "),
        marks.join(", ")
    );
    ex.query_one(&sql, cols.into_iter().map(|(_, v)| v.clone()).collect())
        .await?
        .get("id")
}

/// Updates the given columns of one row; `NotFound` when it does not exist.
pub(crate) async fn update(
    ex: &impl Executor,
    model: &Model,
    id: i64,
    values: &[(&str, Value)],
) -> Result<()> {
    if values.is_empty() {
        return Ok(());
    }
    let cols = columns_for(model, values)?;
    let sets: Vec<String> = cols
        .iter()
        .enumerate()
        .map(|(i, (c, _))| format!("{} = ${}", quote(c), i + 1))
        .collect();
    let mut params: Vec<Value> = cols.into_iter().map(|(_, v)| v.clone()).collect();
    params.push(Value::Int(id));
    let sql = format!(
        "UPDATE {} SET {} WHERE id = ${}",
        model.table,
        sets.join(", "),
        params.len()
    );
    if ex.execute(&sql, params).await? == 0 {
        return Err(Error::NotFound);
    }
    Ok(())
}

/// Makes the to-many relation `name` of record `id` exactly `others`.
pub(crate) async fn set_links(
    ex: &impl Executor,
    model: &Model,
    name: &str,
    id: i64,
    others: &[i64],
) -> Result<()> {
    let Some(Field::ToMany {
        link, own, other, ..
    }) = model.field(name)
    else {
        return Err(unknown(model, name));
    };
    ex.execute(
        &format!("DELETE FROM {link} WHERE {own} = $1"),
        vec![Value::Int(id)],
    )
    .await?;
    let unique: BTreeSet<i64> = others.iter().copied().collect();
    for o in unique {
        ex.execute(
            &format!("INSERT INTO {link} ({own}, {other}) VALUES ($1, $2)"),
            vec![Value::Int(id), Value::Int(o)],
        )
        .await?;
    }
    Ok(())
}

/// Deletes rows by id; returns how many existed.
pub(crate) async fn delete(ex: &impl Executor, model: &Model, ids: &[i64]) -> Result<u64> {
    if ids.is_empty() {
        return Ok(0);
    }
    let marks: Vec<String> = (1..=ids.len()).map(|i| format!("${i}")).collect();
    ex.execute(
        &format!(
            "DELETE FROM {} WHERE id IN ({})",
            model.table,
            marks.join(", ")
        ),
        ids.iter().map(|i| Value::Int(*i)).collect(),
    )
    .await
}

/// Ids among `ids` that exist in the model's table.
pub(crate) async fn existing_ids(
    ex: &impl Executor,
    model: &Model,
    ids: &[i64],
) -> Result<BTreeSet<i64>> {
    if ids.is_empty() {
        return Ok(BTreeSet::new());
    }
    let marks: Vec<String> = (1..=ids.len()).map(|i| format!("${i}")).collect();
    ex.query(
        &format!(
            "SELECT id FROM {} WHERE id IN ({})",
            model.table,
            marks.join(", ")
        ),
        ids.iter().map(|i| Value::Int(*i)).collect(),
    )
    .await?
    .iter()
    .map(|r| r.get("id"))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    static USER: Model = Model {
        table: "ab_user",
        fields: &[(
            "first_name",
            Field::Column {
                col: "first_name",
                kind: Kind::Text,
            },
        )],
    };
    static THING: Model = Model {
        table: "things",
        fields: &[
            (
                "name",
                Field::Column {
                    col: "name",
                    kind: Kind::Text,
                },
            ),
            (
                "owners",
                Field::ToMany {
                    link: "thing_user",
                    own: "thing_id",
                    other: "user_id",
                    target: &USER,
                },
            ),
        ],
    };

    #[test]
    fn predicates_render_with_numbered_placeholders() {
        let p = Pred::And(vec![
            Pred::field(&THING, "name", Op::Contains, Value::Text("ab".into())).unwrap(),
            Pred::field(&THING, "owners", Op::RelManyToMany, Value::Int(3)).unwrap(),
            Pred::in_list("t.id", vec![Value::Int(1), Value::Int(2)], true),
        ]);
        let (sql, params) = where_clause(&p);
        assert_eq!(
            sql,
            "((LOWER(t.name) LIKE LOWER($1)) AND (EXISTS (SELECT 1 FROM thing_user l WHERE \
             l.thing_id = t.id AND l.user_id = $2)) AND (t.id NOT IN ($3, $4)))"
        );
        assert_eq!(
            params,
            vec![
                Value::Text("%ab%".into()),
                Value::Int(3),
                Value::Int(1),
                Value::Int(2)
            ]
        );
    }

    #[test]
    fn unknown_fields_are_refused() {
        assert!(Pred::field(&THING, "password", Op::Eq, Value::Null).is_err());
        assert!(columns_for(&THING, &[("password", Value::Null)]).is_err());
    }
}
