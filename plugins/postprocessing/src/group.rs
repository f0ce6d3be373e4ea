//! Grouping: pandas `groupby(keys, sort=True)` row partitions.
//!
//! Every groupby-based operation (aggregate, pivot, boxplot, histogram, rank) needs the same
//! thing: the rows of each distinct key tuple, groups ordered like pandas orders them (each
//! key ascending, numbers before strings), and rows whose key is missing dropped (or, with
//! `dropna=False`, kept as a last group). Keys are factorised column by column into sorted
//! integer codes, so the hot loop only hashes machine integers and never allocates per row.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

use crate::error::{PpError, Result};
use crate::frame::{NAT, Objects, Series, Value};

/// A small, fast, non-cryptographic hasher (the rustc "Fx" mix). Keys are our own
/// factorised data, so hash flooding is not a concern, and SipHash would dominate the
/// profile of a million-row pivot.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl Hasher for FxHasher {
    fn finish(&self) -> u64 {
        // The multiply alone leaves the low bits of keys with many trailing zeros (epoch
        // microseconds of whole days) at zero, and hashbrown picks buckets from the low
        // bits: finish with murmur3's avalanche so every input bit reaches them.
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut buf = [0u8; 8];
            buf[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(buf));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn write_i64(&mut self, i: i64) {
        self.write_u64(i as u64);
    }
}

/// `HashMap` with [`FxHasher`].
pub type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// Code of a missing key before it is placed.
pub const NULL_CODE: u32 = u32::MAX;

/// Sort class of a value in pandas' mixed-type ordering (`safe_sort`): non-string scalars
/// first, then strings, then missing values.
fn class(v: &Value) -> u8 {
    match v {
        Value::Bool(_) | Value::Int(_) | Value::Float(_) => 0,
        Value::Ts(_) => 1,
        Value::Str(_) => 2,
        Value::List(_) => 3,
        Value::Null => 4,
    }
}

fn num(v: &Value) -> f64 {
    match v {
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        _ => f64::NAN,
    }
}

/// Total order used for sorting keys and labels the way pandas does: numbers (and bools)
/// by value, then timestamps, then strings by code point, missing values last.
pub fn cmp_values(a: &Value, b: &Value) -> Ordering {
    let (ca, cb) = (class(a), class(b));
    if ca != cb {
        return ca.cmp(&cb);
    }
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Ts(x), Value::Ts(y)) => x.cmp(y),
        (Value::Str(x), Value::Str(y)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) if x.is_nan() || y.is_nan() => {
            x.is_nan().cmp(&y.is_nan())
        }
        (Value::List(x), Value::List(y)) => {
            for (p, q) in x.iter().zip(y) {
                let o = cmp_values(p, q);
                if o != Ordering::Equal {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Null, Value::Null) => Ordering::Equal,
        _ => num(a).partial_cmp(&num(b)).unwrap_or(Ordering::Equal),
    }
}

/// Hashable identity of an object cell: Python's `1 == 1.0`, so integral floats and ints
/// share a key.
#[derive(Clone, Hash, PartialEq, Eq)]
enum ObjKey<'a> {
    Int(i64),
    Float(u64),
    Bool(bool),
    Str(&'a str),
    Ts(i64),
}

fn float_key(x: f64) -> ObjKey<'static> {
    if x.fract() == 0.0 && x.abs() < 9.0e18 {
        ObjKey::Int(x as i64)
    } else {
        ObjKey::Float(x.to_bits())
    }
}

/// The hash key of an object cell; `None` for a missing (or unhashable) one.
fn obj_key(x: &Value) -> Option<ObjKey<'_>> {
    match x {
        Value::Null => None,
        Value::Float(x) if x.is_nan() => None,
        Value::Float(x) => Some(float_key(*x)),
        Value::Int(x) => Some(ObjKey::Int(*x)),
        Value::Bool(b) => Some(ObjKey::Bool(*b)),
        Value::Str(s) => Some(ObjKey::Str(s)),
        Value::Ts(t) => Some(ObjKey::Ts(*t)),
        Value::List(_) => None,
    }
}

/// One column factorised: per row a code (rank of the value among the sorted distinct
/// values, or [`NULL_CODE`]) and the number of distinct non-missing values.
pub struct Factor {
    pub codes: Vec<u32>,
    pub n_uniques: u32,
    pub has_null: bool,
}

/// Turns first-appearance ids into sorted ranks.
#[inline(never)]
fn finish<F: Fn(usize, usize) -> Ordering>(
    (prov, firsts, has_null): (Vec<u32>, Vec<usize>, bool),
    cmp: F,
) -> Factor {
    let k = firsts.len();
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&a, &b| cmp(firsts[a], firsts[b]));
    // Sorted input (a time column of an ordered query, the usual case) meets its values in
    // rank order: the first-appearance ids are the codes already, no pass over the rows.
    if order.iter().enumerate().all(|(r, &id)| r == id) {
        return Factor {
            codes: prov,
            n_uniques: k as u32,
            has_null,
        };
    }
    let mut rank = vec![0u32; k];
    for (r, &id) in order.iter().enumerate() {
        rank[id] = r as u32;
    }
    let codes = prov
        .into_iter()
        .map(|p| {
            if p == NULL_CODE {
                NULL_CODE
            } else {
                rank[p as usize]
            }
        })
        .collect();
    Factor {
        codes,
        n_uniques: k as u32,
        has_null,
    }
}

// The row loops below are kept out of line (`#[inline(never)]`): inlined into one large
// function they leave Cranelift (the sandbox's compiler) short of registers, and the loop
// state then lives on the stack; measured in the million-row pivot, where that made the
// sandboxed factorize several times slower than native.
#[inline(never)]
fn factorize_by<K: Hash + Eq, F: Fn(usize) -> Option<K>>(
    n: usize,
    key: F,
) -> (Vec<u32>, Vec<usize>, bool) {
    let mut map: FxMap<K, u32> = FxMap::default();
    let mut has_null = false;
    let mut firsts = Vec::new();
    let mut prov = Vec::with_capacity(n);
    let mut i = 0;
    while i < n {
        let k = key(i);
        // Query results are usually ordered by their keys (a time column above all), so a key
        // tends to repeat over a run of rows: the run is found by comparison alone, in a loop
        // small enough to stay in registers in the sandbox, and filled in one go.
        let mut end = i + 1;
        while end < n && key(end) == k {
            end += 1;
        }
        let id = match k {
            None => {
                has_null = true;
                NULL_CODE
            }
            Some(k) => *map.entry(k).or_insert_with(|| {
                firsts.push(i);
                (firsts.len() - 1) as u32
            }),
        };
        prov.resize(end, id);
        i = end;
    }
    (prov, firsts, has_null)
}

/// Factorises a dictionary-encoded column: the distinct values are hashed and sorted once,
/// then one pass over the rows maps each code to its value's rank and notes which codes occur.
#[inline(never)]
fn factorize_dict(values: &[Value], codes: &[u32]) -> Factor {
    // Entries may share a key (`1` and `1.0`), so rank keys rather than entries.
    let (ids, firsts, _) = factorize_by(values.len(), |j| obj_key(&values[j]));
    let k = firsts.len();
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&a, &b| cmp_values(&values[firsts[a]], &values[firsts[b]]));
    let mut rank = vec![0u32; k];
    for (r, &id) in order.iter().enumerate() {
        rank[id] = r as u32;
    }
    let rank_of_code: Vec<u32> = ids
        .iter()
        .map(|&id| {
            if id == NULL_CODE {
                NULL_CODE
            } else {
                rank[id as usize]
            }
        })
        .collect();
    let mut used = vec![false; values.len()];
    let mut out: Vec<u32> = codes
        .iter()
        .map(|&c| {
            used[c as usize] = true;
            rank_of_code[c as usize]
        })
        .collect();
    let has_null = (0..values.len()).any(|j| used[j] && rank_of_code[j] == NULL_CODE);
    // pandas' levels are the values the rows hold: when some dictionary entry never occurs,
    // rank again among those that do (rare: the host builds dictionaries from the rows).
    let mut occurs = vec![false; k];
    for j in 0..values.len() {
        if used[j] && rank_of_code[j] != NULL_CODE {
            occurs[rank_of_code[j] as usize] = true;
        }
    }
    let n_uniques = occurs.iter().filter(|&&o| o).count();
    if n_uniques < k {
        let mut compact = vec![NULL_CODE; k];
        let mut next = 0;
        for (r, &o) in occurs.iter().enumerate() {
            if o {
                compact[r] = next;
                next += 1;
            }
        }
        for c in &mut out {
            if *c != NULL_CODE {
                *c = compact[*c as usize];
            }
        }
    }
    Factor {
        codes: out,
        n_uniques: n_uniques as u32,
        has_null,
    }
}

/// Factorises one key column (pandas `factorize(sort=True)`).
pub fn factorize(s: &Series) -> Result<Factor> {
    match s {
        Series::Float64(v) => {
            let f = factorize_by(v.len(), |i| {
                let x = v[i];
                if x.is_nan() {
                    None
                } else if x == 0.0 {
                    Some(0u64)
                } else {
                    Some(x.to_bits())
                }
            });
            Ok(finish(f, |a, b| v[a].total_cmp(&v[b])))
        }
        Series::Int64(v) => {
            let f = factorize_by(v.len(), |i| Some(v[i]));
            Ok(finish(f, |a, b| v[a].cmp(&v[b])))
        }
        Series::Bool(v) => {
            let f = factorize_by(v.len(), |i| Some(v[i]));
            Ok(finish(f, |a, b| v[a].cmp(&v[b])))
        }
        Series::Datetime(v) => {
            let raw = v.raw();
            let f = factorize_by(raw.len(), |i| (raw[i] != NAT).then_some(raw[i]));
            Ok(finish(f, |a, b| raw[a].cmp(&raw[b])))
        }
        Series::Object(v) => {
            // A dictionary's rows can only hold its values: check those, not every row.
            let may_hold_list = match v {
                Objects::Plain(cells) => cells.iter().any(|x| matches!(x, Value::List(_))),
                Objects::Dict { values, .. } => values.iter().any(|x| matches!(x, Value::List(_))),
            };
            if may_hold_list && v.iter().any(|x| matches!(x, Value::List(_))) {
                return Err(PpError::params("unhashable type: 'list'"));
            }
            match v {
                Objects::Plain(cells) => {
                    let f = factorize_by(cells.len(), |i| obj_key(&cells[i]));
                    Ok(finish(f, |a, b| cmp_values(&cells[a], &cells[b])))
                }
                Objects::Dict { values, codes } => Ok(factorize_dict(values, codes)),
            }
        }
    }
}

/// The groups of a frame's rows.
pub struct Groups {
    /// First row of each group; groups are in pandas' sorted order.
    pub first: Vec<usize>,
    /// Rows of group `g` are `rows[offsets[g]..offsets[g + 1]]`, ascending.
    pub offsets: Vec<usize>,
    pub rows: Vec<usize>,
    /// Per key, per group: the key's sorted code (a missing key kept with `dropna=false`
    /// has code `n_uniques`, i.e. sorts last).
    pub key_codes: Vec<Vec<u32>>,
    /// Group of each row (`NULL_CODE` for a dropped row).
    pub group_of_row: Vec<u32>,
}

impl Groups {
    /// Number of groups.
    pub fn len(&self) -> usize {
        self.first.len()
    }

    /// Whether there is no group.
    pub fn is_empty(&self) -> bool {
        self.first.is_empty()
    }

    /// The rows of group `g`.
    pub fn rows_of(&self, g: usize) -> &[usize] {
        &self.rows[self.offsets[g]..self.offsets[g + 1]]
    }
}

/// Groups `n` rows by `keys` (`groupby(keys, sort=True, dropna=dropna)`). With no key, all
/// rows form one group (when there is at least one row).
pub fn group_by(keys: &[&Series], n: usize, dropna: bool) -> Result<Groups> {
    if keys.is_empty() {
        let groups = if n == 0 { 0 } else { 1 };
        return Ok(Groups {
            first: if groups == 1 { vec![0] } else { vec![] },
            offsets: if groups == 1 { vec![0, n] } else { vec![0] },
            rows: (0..n).collect(),
            key_codes: vec![],
            group_of_row: vec![0; n],
        });
    }
    let factors: Vec<Factor> = keys.iter().map(|s| factorize(s)).collect::<Result<_>>()?;
    // Cardinality of each key, with room for a kept missing value.
    let cards: Vec<u64> = factors
        .iter()
        .map(|f| u64::from(f.n_uniques) + u64::from(!dropna && f.has_null))
        .collect();
    let product = cards
        .iter()
        .try_fold(1u64, |acc, &c| acc.checked_mul(c.max(1)));
    let code_of = |f: &Factor, i: usize| -> Option<u32> {
        let c = f.codes[i];
        if c == NULL_CODE {
            if dropna { None } else { Some(f.n_uniques) }
        } else {
            Some(c)
        }
    };

    let unpack = |mut p: u64| -> Vec<u32> {
        let mut out = vec![0u32; cards.len()];
        for k in (0..cards.len()).rev() {
            out[k] = (p % cards[k]) as u32;
            p /= cards[k];
        }
        out
    };
    let mut reps: Vec<Vec<u32>> = Vec::new();
    // Mixed-radix packing preserves the lexicographic order of code tuples. When the packed
    // keys are few (at most twice the rows), fit in `u32`, a direct table numbers the groups
    // and every step reuses the first key's buffer: in the sandbox, memory not touched is
    // memory not faulted in and reset.
    let dense = product.filter(|&t| t < u64::from(NULL_CODE) && t <= (2 * n as u64).max(1 << 16));
    let group_of_row = match (dense, product) {
        (Some(total), _) => {
            let mut packed = pack_dense(factors, &cards, dropna);
            for p in dense_groups(&mut packed, total as usize) {
                reps.push(unpack(u64::from(p)));
            }
            packed
        }
        (None, Some(_)) => {
            let packed = pack(&factors, &cards, dropna, n);
            let mut distinct: Vec<u64> =
                packed.iter().copied().filter(|&p| p != u64::MAX).collect();
            distinct.sort_unstable();
            distinct.dedup();
            let mut map: FxMap<u64, u32> = FxMap::default();
            map.reserve(distinct.len());
            for (g, &p) in distinct.iter().enumerate() {
                map.insert(p, g as u32);
                reps.push(unpack(p));
            }
            packed
                .iter()
                .map(|p| if *p == u64::MAX { NULL_CODE } else { map[p] })
                .collect()
        }
        (None, None) => {
            // Too many combinations to pack: sort the code tuples themselves.
            let mut group_of_row = vec![NULL_CODE; n];
            let tuple =
                |i: usize| -> Option<Vec<u32>> { factors.iter().map(|f| code_of(f, i)).collect() };
            let mut keyed: Vec<(Vec<u32>, usize)> =
                (0..n).filter_map(|i| tuple(i).map(|t| (t, i))).collect();
            keyed.sort();
            for (t, i) in keyed {
                if reps.last() != Some(&t) {
                    reps.push(t);
                }
                group_of_row[i] = (reps.len() - 1) as u32;
            }
            group_of_row
        }
    };

    let ngroups = reps.len();
    let (offsets, rows) = place_rows(&group_of_row, ngroups);
    let first = (0..ngroups).map(|g| rows[offsets[g]]).collect();
    let mut key_codes = vec![Vec::with_capacity(ngroups); keys.len()];
    for rep in &reps {
        for (k, &c) in rep.iter().enumerate() {
            key_codes[k].push(c);
        }
    }
    Ok(Groups {
        first,
        offsets,
        rows,
        key_codes,
        group_of_row,
    })
}

/// Mixed-radix packing of the key codes of every row (order-preserving) in `u64`, for key
/// products too large for [`pack_dense`]; `u64::MAX` marks a dropped row. One pass per key
/// over contiguous codes (not one row at a time over the keys).
#[inline(never)]
fn pack(factors: &[Factor], cards: &[u64], dropna: bool, n: usize) -> Vec<u64> {
    let mut packed: Vec<u64> = vec![0; n];
    for (f, &card) in factors.iter().zip(cards) {
        for (slot, &c) in packed.iter_mut().zip(&f.codes) {
            if *slot == u64::MAX {
                continue;
            }
            *slot = match c {
                NULL_CODE if dropna => u64::MAX,
                NULL_CODE => *slot * card + u64::from(f.n_uniques),
                c => *slot * card + u64::from(c),
            };
        }
    }
    packed
}

/// [`pack`] into `u32`, in the first key's code buffer (`NULL_CODE` marks a dropped row).
/// Needs the product of the cardinalities below `NULL_CODE`.
#[inline(never)]
fn pack_dense(factors: Vec<Factor>, cards: &[u64], dropna: bool) -> Vec<u32> {
    let mut keys = factors.into_iter().zip(cards);
    let Some((first, _)) = keys.next() else {
        return Vec::new();
    };
    let mut packed = first.codes;
    if first.has_null && !dropna {
        let missing = first.n_uniques;
        for p in &mut packed {
            if *p == NULL_CODE {
                *p = missing;
            }
        }
    }
    // Whether `packed` may hold `NULL_CODE` (a row dropped for a missing key).
    let mut dropped = first.has_null && dropna;
    for (f, &card) in keys {
        // Fits: every partial product is below the whole one.
        let card = card as u32;
        if !dropped && !f.has_null {
            // Nothing missing: one multiply-add per row.
            for (p, &c) in packed.iter_mut().zip(&f.codes) {
                *p = *p * card + c;
            }
            continue;
        }
        for (p, &c) in packed.iter_mut().zip(&f.codes) {
            *p = match (*p, c) {
                (NULL_CODE, _) => NULL_CODE,
                (_, NULL_CODE) if dropna => NULL_CODE,
                (q, NULL_CODE) => q * card + f.n_uniques,
                (q, c) => q * card + c,
            };
        }
        dropped |= f.has_null && dropna;
    }
    packed
}

/// Numbers the distinct packed keys (all below `total`) in ascending order through a direct
/// table, replacing each row's packed key by its group in place; returns the packed key of
/// each group.
#[inline(never)]
fn dense_groups(packed: &mut [u32], total: usize) -> Vec<u32> {
    let mut table = vec![NULL_CODE; total];
    for &p in packed.iter() {
        if p != NULL_CODE {
            table[p as usize] = 0;
        }
    }
    let mut keys = Vec::new();
    for (p, slot) in table.iter_mut().enumerate() {
        if *slot == 0 {
            *slot = keys.len() as u32;
            keys.push(p as u32);
        }
    }
    for p in packed.iter_mut() {
        if *p != NULL_CODE {
            *p = table[*p as usize];
        }
    }
    keys
}

/// The rows of each group, ascending, as offsets into one array (a counting sort).
#[inline(never)]
fn place_rows(group_of_row: &[u32], ngroups: usize) -> (Vec<usize>, Vec<usize>) {
    let mut counts = vec![0usize; ngroups + 1];
    for &g in group_of_row {
        if g != NULL_CODE {
            counts[g as usize + 1] += 1;
        }
    }
    for g in 0..ngroups {
        counts[g + 1] += counts[g];
    }
    let offsets = counts.clone();
    let mut fill = counts;
    let mut rows = vec![0usize; offsets[ngroups]];
    for (i, &g) in group_of_row.iter().enumerate() {
        if g != NULL_CODE {
            rows[fill[g as usize]] = i;
            fill[g as usize] += 1;
        }
    }
    (offsets, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_and_unsorted_keys_factorise_alike() {
        let sorted = Series::Datetime(
            [Some(1), Some(1), None, Some(5), Some(9), Some(9)]
                .into_iter()
                .collect(),
        );
        let f = factorize(&sorted).unwrap();
        assert_eq!(f.codes, vec![0, 0, NULL_CODE, 1, 2, 2]);
        assert_eq!((f.n_uniques, f.has_null), (3, true));
        let shuffled = Series::Datetime([Some(9), Some(1), Some(5), Some(1)].into_iter().collect());
        let f = factorize(&shuffled).unwrap();
        assert_eq!(f.codes, vec![2, 0, 1, 0]);
        assert_eq!((f.n_uniques, f.has_null), (3, false));
    }

    #[test]
    fn dictionary_factorises_like_its_plain_rows() {
        // An unused entry, a missing value and two entries of one key (`1 == 1.0`).
        let values = vec![
            Value::Str("b".into()),
            Value::Str("a".into()),
            Value::Null,
            Value::Str("unused".into()),
            Value::Int(1),
            Value::Float(1.0),
        ];
        let dict = Objects::Dict {
            values,
            codes: vec![0, 1, 2, 0, 4, 5],
        };
        let plain = Series::Object(Objects::Plain(dict.clone().into_vec()));
        let f = factorize(&Series::Object(dict)).unwrap();
        assert_eq!(f.codes, vec![2, 1, NULL_CODE, 2, 0, 0]);
        assert_eq!((f.n_uniques, f.has_null), (3, true));
        let p = factorize(&plain).unwrap();
        assert_eq!((p.codes, p.n_uniques, p.has_null), (f.codes, 3, true));
    }

    #[test]
    fn has_null_reads_dictionary_codes() {
        let values = vec![Value::Str("a".into()), Value::Null];
        let unused = Series::Object(Objects::Dict {
            values: values.clone(),
            codes: vec![0, 0],
        });
        let used = Series::Object(Objects::Dict {
            values,
            codes: vec![0, 1],
        });
        assert!(!unused.has_null());
        assert!(used.has_null());
        assert!(Series::Float64(vec![1.0, f64::NAN]).has_null());
        assert!(!Series::Datetime([Some(1)].into_iter().collect()).has_null());
    }

    #[test]
    fn groups_sorted_and_nulls_dropped() {
        let plain = Series::Object(Objects::Plain(vec![
            Value::Str("b".into()),
            Value::Null,
            Value::Str("a".into()),
            Value::Str("b".into()),
        ]));
        // The same cells dictionary-encoded, with an unused entry and a repeated value.
        let dict = Series::Object(Objects::Dict {
            values: vec![
                Value::Str("b".into()),
                Value::Str("zzz".into()),
                Value::Null,
                Value::Str("a".into()),
                Value::Str("b".into()),
            ],
            codes: vec![0, 2, 3, 4],
        });
        assert_eq!(plain, dict);
        for a in [&plain, &dict] {
            let g = group_by(&[a], 4, true).unwrap();
            assert_eq!(g.first, vec![2, 0]);
            assert_eq!(g.rows_of(1), &[0, 3]);
            let g = group_by(&[a], 4, false).unwrap();
            assert_eq!(g.first, vec![2, 0, 1]);
        }
    }

    #[test]
    fn numbers_before_strings() {
        let a = Series::Object(
            vec![
                Value::Str("<NULL>".into()),
                Value::Float(2020.0),
                Value::Float(2019.0),
            ]
            .into(),
        );
        let g = group_by(&[&a], 3, true).unwrap();
        assert_eq!(g.first, vec![2, 1, 0]);
    }
}
