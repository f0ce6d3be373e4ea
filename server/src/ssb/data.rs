//! The Star Schema Benchmark's five tables, generated deterministically as PostgreSQL `COPY`
//! text rows (tab-separated; no generated value holds a tab, newline or backslash).
//!
//! Column names, value domains and sizes follow SSB's `dbgen` (O'Neil et al., "Star Schema
//! Benchmark", revision 3): `lineorder` SF×6,000,000 rows, `customer` SF×30,000, `supplier`
//! SF×2,000, `part` 200,000×⌊1+log2 SF⌋ (SF ≥ 1), and `dates` 2,556 days from 1992-01-01
//! (dbgen's count: its last day is 1998-12-30). Deviations, all documented in the README:
//! - below SF 1, `part` has max(SF×200,000, 1,000) rows, and `customer`/`supplier` at least 10;
//! - `lineorder` has exactly SF×6,000,000 rows (dbgen draws 1–7 lines for SF×1,500,000 orders,
//!   so its count only averages that); order keys are dense;
//! - so that the most selective standard queries (Q2.3, Q3.3, Q3.4, Q4.3) have results even at
//!   small scale factors, customers and suppliers 1–4 live in fixed cities (UNITED KI1,
//!   UNITED KI5, UNITED ST3, CHINA    2), parts 1–4 have fixed brands (MFGR#2239, MFGR#1412,
//!   MFGR#1207, MFGR#2224), and one order in 250 is drawn from those keys (about 0.4% of the
//!   rows); everything else is uniform as in dbgen.
//!
//! The random numbers come from SplitMix64 with a fixed seed per table, so the same scale
//! factor always produces the same rows.

use std::io::Write;

use chrono::{Datelike, NaiveDate};

/// Rows of each table at one scale factor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// `lineorder`.
    pub lineorder: u64,
    /// `customer`.
    pub customer: u64,
    /// `supplier`.
    pub supplier: u64,
    /// `part`.
    pub part: u64,
    /// `dates` (always [`DAYS`]).
    pub dates: u64,
}

/// Days in `dates`: 1992-01-01 … 1998-12-30, as dbgen writes them.
pub const DAYS: u64 = 2_556;

impl Sizes {
    /// The table sizes at scale factor `sf` (> 0).
    pub fn for_scale(sf: f64) -> Sizes {
        let scaled = |base: f64, min: u64| ((sf * base).round() as u64).max(min);
        let part = if sf >= 1.0 {
            200_000 * (1.0 + sf.log2()).floor() as u64
        } else {
            scaled(200_000.0, 1_000)
        };
        Sizes {
            lineorder: scaled(6_000_000.0, 1),
            customer: scaled(30_000.0, 10),
            supplier: scaled(2_000.0, 10),
            part,
            dates: DAYS,
        }
    }
}

/// SplitMix64: tiny, fast and deterministic; plenty for benchmark data.
struct Rng(u64);

impl Rng {
    fn new(stream: u64) -> Rng {
        Rng(0x5353_4220_4C49_5445 ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

/// One source of `COPY` rows.
pub trait RowSource: Send {
    /// Appends the next row or rows (`lineorder` writes one order: 1–7 lines); returns how
    /// many, 0 when the table is complete.
    fn write_next(&mut self, out: &mut Vec<u8>) -> u64;
}

/// Region names (SSB: `c_region`, `s_region`).
pub const REGIONS: [&str; 5] = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"];

/// TPC-H's 25 nations with their region's index in [`REGIONS`].
pub const NATIONS: [(&str, usize); 25] = [
    ("ALGERIA", 0),
    ("ARGENTINA", 1),
    ("BRAZIL", 1),
    ("CANADA", 1),
    ("EGYPT", 4),
    ("ETHIOPIA", 0),
    ("FRANCE", 3),
    ("GERMANY", 3),
    ("INDIA", 2),
    ("INDONESIA", 2),
    ("IRAN", 4),
    ("IRAQ", 4),
    ("JAPAN", 2),
    ("JORDAN", 4),
    ("KENYA", 0),
    ("MOROCCO", 0),
    ("MOZAMBIQUE", 0),
    ("PERU", 1),
    ("CHINA", 2),
    ("ROMANIA", 3),
    ("SAUDI ARABIA", 4),
    ("VIETNAM", 2),
    ("RUSSIA", 3),
    ("UNITED KINGDOM", 3),
    ("UNITED STATES", 1),
];

const UNITED_KINGDOM: usize = 23;
const UNITED_STATES: usize = 24;
const CHINA: usize = 18;

/// Nation and city digit of customers and suppliers 1–4 (see the module docs).
const FIXED_PLACES: [(usize, u64); 4] = [
    (UNITED_KINGDOM, 1),
    (UNITED_KINGDOM, 5),
    (UNITED_STATES, 3),
    (CHINA, 2),
];

/// Manufacturer, category and brand digits of parts 1–4.
const FIXED_BRANDS: [(u64, u64, u64); 4] = [(2, 2, 39), (1, 4, 12), (1, 2, 7), (2, 2, 24)];

const SEGMENTS: [&str; 5] = [
    "AUTOMOBILE",
    "BUILDING",
    "FURNITURE",
    "MACHINERY",
    "HOUSEHOLD",
];
const PRIORITIES: [&str; 5] = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECI", "5-LOW"];
const SHIP_MODES: [&str; 7] = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"];
const COLORS: [&str; 48] = [
    "almond",
    "antique",
    "aquamarine",
    "azure",
    "beige",
    "bisque",
    "black",
    "blanched",
    "blue",
    "blush",
    "brown",
    "burlywood",
    "burnished",
    "chartreuse",
    "chiffon",
    "chocolate",
    "coral",
    "cornflower",
    "cornsilk",
    "cream",
    "cyan",
    "dark",
    "deep",
    "dim",
    "dodger",
    "drab",
    "firebrick",
    "floral",
    "forest",
    "frosted",
    "gainsboro",
    "ghost",
    "goldenrod",
    "green",
    "grey",
    "honeydew",
    "hot",
    "indian",
    "ivory",
    "khaki",
    "lace",
    "lavender",
    "lawn",
    "lemon",
    "light",
    "lime",
    "linen",
    "magenta",
];
const TYPE_1: [&str; 6] = ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"];
const TYPE_2: [&str; 5] = ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"];
const TYPE_3: [&str; 5] = ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"];
const CONTAINER_1: [&str; 5] = ["SM", "LG", "MED", "JUMBO", "WRAP"];
const CONTAINER_2: [&str; 8] = ["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"];
const ADDRESS_CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 ,";

/// A city: the nation's name cut or padded to 9 characters and a digit (`UNITED KI1`).
pub fn city(nation: &str, digit: u64) -> String {
    let prefix: String = nation.chars().take(9).collect();
    format!("{prefix:<9}{digit}")
}

fn address(rng: &mut Rng, out: &mut Vec<u8>) {
    let len = rng.range(10, 25);
    for _ in 0..len {
        out.push(ADDRESS_CHARS[rng.below(ADDRESS_CHARS.len() as u64) as usize]);
    }
}

/// Nation index and city digit of customer or supplier `key`.
fn place(rng: &mut Rng, key: u64) -> (usize, u64) {
    let (nation, digit) = (rng.below(25) as usize, rng.below(10));
    match FIXED_PLACES.get((key - 1) as usize) {
        Some(fixed) => *fixed,
        None => (nation, digit),
    }
}

fn phone(rng: &mut Rng, nation: usize, out: &mut Vec<u8>) {
    let _ = write!(
        out,
        "{}-{}-{}-{}",
        nation + 10,
        rng.range(100, 999),
        rng.range(100, 999),
        rng.range(1000, 9999)
    );
}

/// `customer` (c_custkey, c_name, c_address, c_city, c_nation, c_region, c_phone,
/// c_mktsegment) or `supplier` (the same columns with `s_`, without a segment): both tables
/// place their rows alike, so one generator writes either.
pub struct Parties {
    rng: Rng,
    next: u64,
    count: u64,
    /// `Customer` or `Supplier`, the name prefix; customers also get a market segment.
    kind: &'static str,
}

impl Parties {
    /// All `count` customers.
    pub fn customers(count: u64) -> Parties {
        Parties {
            rng: Rng::new(1),
            next: 1,
            count,
            kind: "Customer",
        }
    }

    /// All `count` suppliers.
    pub fn suppliers(count: u64) -> Parties {
        Parties {
            rng: Rng::new(2),
            next: 1,
            count,
            kind: "Supplier",
        }
    }
}

impl RowSource for Parties {
    fn write_next(&mut self, out: &mut Vec<u8>) -> u64 {
        if self.next > self.count {
            return 0;
        }
        let key = self.next;
        self.next += 1;
        let rng = &mut self.rng;
        let (nation, digit) = place(rng, key);
        let (name, region) = NATIONS[nation];
        let _ = write!(out, "{key}\t{}#{key:09}\t", self.kind);
        address(rng, out);
        let _ = write!(
            out,
            "\t{}\t{name}\t{}\t",
            city(name, digit),
            REGIONS[region]
        );
        phone(rng, nation, out);
        if self.kind == "Customer" {
            let _ = write!(out, "\t{}", rng.pick(&SEGMENTS));
        }
        out.push(b'\n');
        1
    }
}

/// `part`: p_partkey, p_name, p_mfgr, p_category, p_brand1, p_color, p_type, p_size,
/// p_container.
pub struct Parts {
    rng: Rng,
    next: u64,
    count: u64,
}

impl Parts {
    /// All `count` parts.
    pub fn new(count: u64) -> Parts {
        Parts {
            rng: Rng::new(3),
            next: 1,
            count,
        }
    }
}

impl RowSource for Parts {
    fn write_next(&mut self, out: &mut Vec<u8>) -> u64 {
        if self.next > self.count {
            return 0;
        }
        let key = self.next;
        self.next += 1;
        let rng = &mut self.rng;
        let drawn = (rng.range(1, 5), rng.range(1, 5), rng.range(1, 40));
        let (m, c, b) = FIXED_BRANDS
            .get((key - 1) as usize)
            .copied()
            .unwrap_or(drawn);
        let _ = writeln!(
            out,
            "{key}\t{} {}\tMFGR#{m}\tMFGR#{m}{c}\tMFGR#{m}{c}{b:02}\t{}\t{} {} {}\t{}\t{} {}",
            rng.pick(&COLORS),
            rng.pick(&COLORS),
            rng.pick(&COLORS),
            rng.pick(&TYPE_1),
            rng.pick(&TYPE_2),
            rng.pick(&TYPE_3),
            rng.range(1, 50),
            rng.pick(&CONTAINER_1),
            rng.pick(&CONTAINER_2),
        );
        1
    }
}

fn first_day() -> NaiveDate {
    NaiveDate::from_ymd_opt(1992, 1, 1).unwrap_or_default()
}

/// `yyyymmdd` of the day `offset` days after 1992-01-01.
fn datekey(offset: u64) -> u32 {
    let d = first_day() + chrono::Days::new(offset);
    d.year() as u32 * 10_000 + d.month() * 100 + d.day()
}

fn offset_of(y: i32, m: u32, d: u32) -> u64 {
    let day = NaiveDate::from_ymd_opt(y, m, d).unwrap_or_default();
    (day - first_day()).num_days().max(0) as u64
}

/// dbgen's selling seasons: (name, first month, first day, last month, last day).
const SEASONS: [(&str, u32, u32, u32, u32); 5] = [
    ("Christmas", 11, 1, 12, 31),
    ("Summer", 5, 1, 8, 31),
    ("Winter", 1, 1, 3, 31),
    ("Spring", 4, 1, 4, 30),
    ("Fall", 9, 1, 10, 31),
];

/// dbgen's holidays (month, day).
const HOLIDAYS: [(u32, u32); 10] = [
    (12, 24),
    (1, 1),
    (2, 20),
    (4, 20),
    (5, 20),
    (7, 20),
    (8, 20),
    (9, 20),
    (10, 20),
    (11, 20),
];

/// `dates`: d_datekey, d_date, d_dayofweek, d_month, d_year, d_yearmonthnum, d_yearmonth,
/// d_daynuminweek, d_daynuminmonth, d_daynuminyear, d_monthnuminyear, d_weeknuminyear,
/// d_sellingseason, d_lastdayinweekfl, d_lastdayinmonthfl, d_holidayfl, d_weekdayfl.
/// Weeks start on Sunday (`d_daynuminweek` 1), so Saturday is the last day of a week.
pub struct Dates {
    next: u64,
}

impl Dates {
    /// The 2,556 days.
    pub fn new() -> Dates {
        Dates { next: 0 }
    }
}

impl Default for Dates {
    fn default() -> Self {
        Dates::new()
    }
}

impl RowSource for Dates {
    fn write_next(&mut self, out: &mut Vec<u8>) -> u64 {
        if self.next >= DAYS {
            return 0;
        }
        let d = first_day() + chrono::Days::new(self.next);
        self.next += 1;
        let (y, m, day) = (d.year(), d.month(), d.day());
        let weekday = d.weekday();
        let in_week = weekday.num_days_from_sunday() + 1;
        let last_in_month = (d + chrono::Days::new(1)).month() != m;
        let season = SEASONS
            .iter()
            .find(|(_, m1, d1, m2, d2)| (m, day) >= (*m1, *d1) && (m, day) <= (*m2, *d2))
            .map_or("", |s| s.0);
        let _ = writeln!(
            out,
            "{}\t{}\t{}\t{}\t{y}\t{}\t{}\t{in_week}\t{day}\t{}\t{m}\t{}\t{season}\t{}\t{}\t{}\t{}",
            datekey(self.next - 1),
            d.format("%B %-d, %Y"),
            d.format("%A"),
            d.format("%B"),
            y * 100 + m as i32,
            d.format("%b%Y"),
            d.ordinal(),
            (d.ordinal() - 1) / 7 + 1,
            u8::from(in_week == 7),
            u8::from(last_in_month),
            u8::from(HOLIDAYS.contains(&(m, day))),
            u8::from((2..=6).contains(&in_week)),
        );
        1
    }
}

/// `lineorder`: lo_orderkey, lo_linenumber, lo_custkey, lo_partkey, lo_suppkey, lo_orderdate,
/// lo_orderpriority, lo_shippriority, lo_quantity, lo_extendedprice, lo_ordtotalprice,
/// lo_discount, lo_revenue, lo_supplycost, lo_tax, lo_commitdate, lo_shipmode. Prices are in
/// cents (dbgen's retail price of the part times the quantity).
pub struct LineOrders {
    rng: Rng,
    sizes: Sizes,
    written: u64,
    order: u64,
    /// Last order date: 151 days before the end of `dates`, as in dbgen.
    last_order_day: u64,
    dec_1997: (u64, u64),
    year_1997: (u64, u64),
}

/// One order in this many is drawn from the fixed keys (see the module docs).
const PLANTED_EVERY: u64 = 250;

impl LineOrders {
    /// All `sizes.lineorder` lines, over the given dimension sizes.
    pub fn new(sizes: Sizes) -> LineOrders {
        LineOrders {
            rng: Rng::new(4),
            sizes,
            written: 0,
            order: 0,
            last_order_day: offset_of(1998, 8, 2),
            dec_1997: (offset_of(1997, 12, 1), offset_of(1997, 12, 31)),
            year_1997: (offset_of(1997, 1, 1), offset_of(1997, 12, 31)),
        }
    }
}

/// dbgen's retail price of a part, in cents.
fn retail_price(part: u64) -> u64 {
    90_000 + (part / 10) % 20_001 + 100 * (part % 1_000)
}

struct Line {
    part: u64,
    supp: u64,
    quantity: u64,
    extended: u64,
    discount: u64,
    tax: u64,
    commit: u64,
    mode: &'static str,
}

impl RowSource for LineOrders {
    fn write_next(&mut self, out: &mut Vec<u8>) -> u64 {
        let left = self.sizes.lineorder - self.written;
        if left == 0 {
            return 0;
        }
        let s = self.sizes;
        let rng = &mut self.rng;
        let index = self.order;
        self.order += 1;
        let key = self.order;
        let lines = rng.range(1, 7).min(left);
        let mut cust = rng.range(1, s.customer);
        let mut day = rng.range(0, self.last_order_day);
        let priority = rng.pick(&PRIORITIES);
        // Which fixed keys this order uses, if it is one of the planted ones.
        let template =
            (index % PLANTED_EVERY == PLANTED_EVERY / 2).then_some((index / PLANTED_EVERY) % 4);
        match template {
            Some(0) => {
                cust = rng.range(1, 2);
                day = rng.range(self.dec_1997.0, self.dec_1997.1);
            }
            Some(1) => {
                cust = 3;
                day = rng.range(self.year_1997.0, self.year_1997.1);
            }
            Some(2) => cust = 4,
            _ => {}
        }
        let mut items: [Option<Line>; 7] = Default::default();
        let mut total = 0;
        for slot in items.iter_mut().take(lines as usize) {
            let (part, supp) = match template {
                Some(0) => (1, rng.range(1, 2)),
                Some(1) => (2, 3),
                Some(2) => (4, 4),
                Some(_) => (3, 3),
                None => (rng.range(1, s.part), rng.range(1, s.supplier)),
            };
            let quantity = rng.range(1, 50);
            let extended = quantity * retail_price(part);
            let discount = rng.range(0, 10);
            let tax = rng.range(0, 8);
            total += extended * (100 + tax) * (100 - discount) / 10_000;
            *slot = Some(Line {
                part,
                supp,
                quantity,
                extended,
                discount,
                tax,
                commit: day + rng.range(30, 90),
                mode: rng.pick(&SHIP_MODES),
            });
        }
        let orderdate = datekey(day);
        for (n, line) in items.iter().flatten().enumerate() {
            let _ = writeln!(
                out,
                "{key}\t{}\t{cust}\t{}\t{}\t{orderdate}\t{priority}\t0\t{}\t{}\t{total}\t{}\t{}\t{}\t{}\t{}\t{}",
                n + 1,
                line.part,
                line.supp,
                line.quantity,
                line.extended,
                line.discount,
                line.extended * (100 - line.discount) / 100,
                retail_price(line.part) * 6 / 10,
                line.tax,
                datekey(line.commit),
                line.mode,
            );
        }
        self.written += lines;
        lines
    }
}

/// The tables' DDL, in load order; `lineorder` last. Keys and indexes come after the load.
pub const TABLES: [(&str, &str); 5] = [
    (
        "dates",
        "CREATE TABLE dates (d_datekey INTEGER NOT NULL, d_date VARCHAR(18) NOT NULL, \
         d_dayofweek VARCHAR(9) NOT NULL, d_month VARCHAR(9) NOT NULL, d_year INTEGER NOT NULL, \
         d_yearmonthnum INTEGER NOT NULL, d_yearmonth VARCHAR(7) NOT NULL, \
         d_daynuminweek INTEGER NOT NULL, d_daynuminmonth INTEGER NOT NULL, \
         d_daynuminyear INTEGER NOT NULL, d_monthnuminyear INTEGER NOT NULL, \
         d_weeknuminyear INTEGER NOT NULL, d_sellingseason VARCHAR(12) NOT NULL, \
         d_lastdayinweekfl INTEGER NOT NULL, d_lastdayinmonthfl INTEGER NOT NULL, \
         d_holidayfl INTEGER NOT NULL, d_weekdayfl INTEGER NOT NULL)",
    ),
    (
        "customer",
        "CREATE TABLE customer (c_custkey INTEGER NOT NULL, c_name VARCHAR(25) NOT NULL, \
         c_address VARCHAR(25) NOT NULL, c_city VARCHAR(10) NOT NULL, \
         c_nation VARCHAR(15) NOT NULL, c_region VARCHAR(12) NOT NULL, \
         c_phone VARCHAR(15) NOT NULL, c_mktsegment VARCHAR(10) NOT NULL)",
    ),
    (
        "supplier",
        "CREATE TABLE supplier (s_suppkey INTEGER NOT NULL, s_name VARCHAR(25) NOT NULL, \
         s_address VARCHAR(25) NOT NULL, s_city VARCHAR(10) NOT NULL, \
         s_nation VARCHAR(15) NOT NULL, s_region VARCHAR(12) NOT NULL, \
         s_phone VARCHAR(15) NOT NULL)",
    ),
    (
        "part",
        "CREATE TABLE part (p_partkey INTEGER NOT NULL, p_name VARCHAR(22) NOT NULL, \
         p_mfgr VARCHAR(6) NOT NULL, p_category VARCHAR(7) NOT NULL, \
         p_brand1 VARCHAR(9) NOT NULL, p_color VARCHAR(11) NOT NULL, \
         p_type VARCHAR(25) NOT NULL, p_size INTEGER NOT NULL, \
         p_container VARCHAR(10) NOT NULL)",
    ),
    (
        "lineorder",
        "CREATE TABLE lineorder (lo_orderkey BIGINT NOT NULL, lo_linenumber INTEGER NOT NULL, \
         lo_custkey INTEGER NOT NULL, lo_partkey INTEGER NOT NULL, lo_suppkey INTEGER NOT NULL, \
         lo_orderdate INTEGER NOT NULL, lo_orderpriority VARCHAR(15) NOT NULL, \
         lo_shippriority VARCHAR(1) NOT NULL, lo_quantity INTEGER NOT NULL, \
         lo_extendedprice INTEGER NOT NULL, lo_ordtotalprice INTEGER NOT NULL, \
         lo_discount INTEGER NOT NULL, lo_revenue INTEGER NOT NULL, \
         lo_supplycost INTEGER NOT NULL, lo_tax INTEGER NOT NULL, \
         lo_commitdate INTEGER NOT NULL, lo_shipmode VARCHAR(10) NOT NULL)",
    ),
];

/// Primary keys and the indexes on `lineorder`'s foreign keys, created after the load.
pub const INDEXES: [&str; 9] = [
    "ALTER TABLE dates ADD PRIMARY KEY (d_datekey)",
    "ALTER TABLE customer ADD PRIMARY KEY (c_custkey)",
    "ALTER TABLE supplier ADD PRIMARY KEY (s_suppkey)",
    "ALTER TABLE part ADD PRIMARY KEY (p_partkey)",
    "ALTER TABLE lineorder ADD PRIMARY KEY (lo_orderkey, lo_linenumber)",
    "CREATE INDEX lineorder_orderdate_idx ON lineorder (lo_orderdate)",
    "CREATE INDEX lineorder_custkey_idx ON lineorder (lo_custkey)",
    "CREATE INDEX lineorder_suppkey_idx ON lineorder (lo_suppkey)",
    "CREATE INDEX lineorder_partkey_idx ON lineorder (lo_partkey)",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn all(mut src: impl RowSource) -> (u64, String) {
        let mut out = Vec::new();
        let mut rows = 0;
        loop {
            let n = src.write_next(&mut out);
            if n == 0 {
                break;
            }
            rows += n;
        }
        (rows, String::from_utf8(out).expect("utf-8"))
    }

    #[test]
    fn sizes_follow_dbgen() {
        let s = Sizes::for_scale(0.01);
        assert_eq!(
            (s.lineorder, s.customer, s.supplier, s.part),
            (60_000, 300, 20, 2_000)
        );
        let s = Sizes::for_scale(0.1);
        assert_eq!(
            (s.lineorder, s.customer, s.supplier, s.part),
            (600_000, 3_000, 200, 20_000)
        );
        let s = Sizes::for_scale(1.0);
        assert_eq!((s.lineorder, s.part), (6_000_000, 200_000));
        assert_eq!(Sizes::for_scale(10.0).part, 800_000);
        assert_eq!(Sizes::for_scale(0.001).part, 1_000);
    }

    #[test]
    fn dates_cover_dbgen_days() {
        let (rows, text) = all(Dates::new());
        assert_eq!(rows, DAYS);
        let first: Vec<&str> = text.lines().next().unwrap().split('\t').collect();
        assert_eq!(
            first,
            [
                "19920101",
                "January 1, 1992",
                "Wednesday",
                "January",
                "1992",
                "199201",
                "Jan1992",
                "4",
                "1",
                "1",
                "1",
                "1",
                "Winter",
                "0",
                "0",
                "1",
                "1"
            ]
        );
        assert!(text.lines().last().unwrap().starts_with("19981230\t"));
        assert!(text.lines().all(|l| l.split('\t').count() == 17));
    }

    #[test]
    fn lineorder_is_deterministic_and_exact() {
        let sizes = Sizes::for_scale(0.001);
        let (rows, a) = all(LineOrders::new(sizes));
        let (_, b) = all(LineOrders::new(sizes));
        assert_eq!(rows, 6_000);
        assert_eq!(a.lines().count(), 6_000);
        assert_eq!(a, b);
        for line in a.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 17);
            let q: u64 = f[8].parse().unwrap();
            let d: u64 = f[11].parse().unwrap();
            assert!((1..=50).contains(&q) && d <= 10, "{line}");
        }
    }

    #[test]
    fn cities_and_brands() {
        assert_eq!(city("UNITED KINGDOM", 1), "UNITED KI1");
        assert_eq!(city("CHINA", 2), "CHINA    2");
        let (_, text) = all(Parties::customers(10));
        assert!(
            text.lines()
                .next()
                .unwrap()
                .contains("\tUNITED KI1\tUNITED KINGDOM\tEUROPE\t")
        );
        let (_, text) = all(Parts::new(5));
        assert!(
            text.lines()
                .next()
                .unwrap()
                .contains("\tMFGR#2\tMFGR#22\tMFGR#2239\t")
        );
    }
}
