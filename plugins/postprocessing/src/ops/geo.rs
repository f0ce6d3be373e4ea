//! The geographic operations: `geohash_encode`, `geohash_decode` (python-geohash 0.9) and
//! `geodetic_parse` (geopy's `Point`).
//!
//! python-geohash does its work in C on 64-bit fixed-point numbers: a coordinate divided by
//! its range (90 or 180) is mapped from `[-1, 1)` onto `u64`, and the geohash bits are the
//! interleaved high bits of the two integers. That mapping is reproduced bit for bit, so
//! codes and decoded centres agree with Superset's exactly. Decoding returns the centre of
//! the cell (python-geohash's `decode` adds half a cell to the south-west corner).

use liteset_pyrepr as py;

use crate::error::PpError;
use crate::frame::{Frame, Label, Series, Value};
use crate::ops::append::append_columns;
use crate::ops::args::{Options, Signature, get, invalid, opt_bool};
use crate::ops::geodetic::parse_point;

const BASE32: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";

/// python-geohash's default precision.
const PRECISION: usize = 12;

/// `double_to_i64` of python-geohash: `[-1, 1)` onto `u64`, 0 at `2^63`, truncating the
/// magnitude (so negative values round up).
fn to_fixed(x: f64) -> Option<u64> {
    if !(-1.0..1.0).contains(&x) {
        return None;
    }
    let bits = x.to_bits();
    let negative = bits >> 63 == 1;
    let exp = ((bits >> 52) & 0x7ff) as i32;
    if exp == 0 {
        return Some(1 << 63);
    }
    let mantissa = (bits & 0x000f_ffff_ffff_ffff) | 0x0010_0000_0000_0000;
    let shift = exp - 0x3ff + 11;
    let magnitude = if shift > 0 {
        mantissa << shift
    } else {
        mantissa.checked_shr((-shift) as u32).unwrap_or(0)
    };
    Some(if negative {
        (1u64 << 63) - magnitude
    } else {
        magnitude + (1 << 63)
    })
}

/// `i64_to_double` of python-geohash: the inverse mapping, truncating to 53 bits.
fn from_fixed(v: u64) -> f64 {
    const HALF: u64 = 1 << 63;
    if v == HALF {
        return 0.0;
    }
    let (negative, magnitude) = if v < HALF {
        (true, HALF - v)
    } else {
        (false, v - HALF)
    };
    let lz = magnitude.leading_zeros();
    let normalized = if lz > 11 {
        magnitude << (lz - 11)
    } else {
        magnitude >> (11 - lz)
    };
    let bits = ((0x3ffu64 - u64::from(lz)) << 52) + (normalized & 0x000f_ffff_ffff_ffff);
    let x = f64::from_bits(bits);
    if negative { -x } else { x }
}

/// `geohash.encode(latitude, longitude)` (12 characters). `Err` carries Superset's outcome:
/// the bare `Exception("invalid latitude.")` (a 500 there) or the C encoder's `ValueError`
/// (which Superset reports as "Invalid longitude/latitude").
pub fn encode(latitude: f64, longitude: f64) -> Result<String, PpError> {
    if !(-90.0..90.0).contains(&latitude) && !latitude.is_nan() {
        return Err(invalid("invalid latitude."));
    }
    let invalid_lonlat = || invalid("Invalid longitude/latitude");
    if !longitude.is_finite() {
        // NaN fails in the C encoder; an infinite longitude never leaves Python's
        // normalisation loop, which no server should reproduce.
        return Err(invalid_lonlat());
    }
    let mut longitude = longitude;
    if !(-180.0..180.0).contains(&longitude) {
        if longitude.abs() > 1e12 {
            return Err(invalid_lonlat());
        }
        while longitude < -180.0 {
            longitude += 360.0;
        }
        while longitude >= 180.0 {
            longitude -= 360.0;
        }
    }
    let lat = to_fixed(latitude / 90.0).ok_or_else(invalid_lonlat)?;
    let lon = to_fixed(longitude / 180.0).ok_or_else(invalid_lonlat)?;
    let mut out = String::with_capacity(PRECISION);
    for c in 0..PRECISION {
        let mut code = 0usize;
        for b in 0..5 {
            let k = c * 5 + b;
            // Bits alternate longitude, latitude, starting from the top of each.
            let source = if k % 2 == 0 { lon } else { lat };
            let bit = (source >> (63 - k / 2)) & 1;
            code = (code << 1) | bit as usize;
        }
        out.push(char::from(BASE32[code]));
    }
    Ok(out)
}

/// `geohash.decode(code)`: the centre `(latitude, longitude)` of the cell, or `None` for a
/// character outside the geohash alphabet (upper-case letters are accepted, as in C).
pub fn decode(code: &str) -> Option<(f64, f64)> {
    let (mut lat, mut lon) = (0u64, 0u64);
    let mut nbits = 0usize;
    for byte in code.bytes() {
        if byte == 0 {
            // The C decoder stops at a NUL byte.
            break;
        }
        let value = BASE32
            .iter()
            .position(|&b| b == byte.to_ascii_lowercase() && byte.is_ascii())?
            as u64;
        for b in (0..5).rev() {
            let bit = (value >> b) & 1;
            let k = nbits;
            nbits += 1;
            if k >= 128 {
                continue;
            }
            if k.is_multiple_of(2) {
                lon |= bit << (63 - k / 2);
            } else {
                lat |= bit << (63 - k / 2);
            }
        }
    }
    let lat_bits = nbits / 2;
    let lon_bits = nbits - lat_bits;
    let latitude = from_fixed(lat) * 90.0 + 90.0 / 2f64.powi(lat_bits as i32);
    let longitude = from_fixed(lon) * 180.0 + 180.0 / 2f64.powi(lon_bits as i32);
    Some((latitude, longitude))
}

const ENCODE: Signature = Signature {
    name: "geohash_encode",
    params: &[("geohash", true), ("longitude", true), ("latitude", true)],
};

const DECODE: Signature = Signature {
    name: "geohash_decode",
    params: &[("geohash", true), ("longitude", true), ("latitude", true)],
};

const GEODETIC: Signature = Signature {
    name: "geodetic_parse",
    params: &[
        ("geodetic", true),
        ("longitude", true),
        ("latitude", true),
        ("altitude", false),
    ],
};

/// A required column-name option.
fn name_option<'a>(options: &'a Options, key: &str) -> Result<&'a str, PpError> {
    match options.get(key) {
        Some(serde_json::Value::String(s)) => Ok(s),
        other => Err(invalid(format!(
            "`{key}` must be a column name, not {}",
            other.map_or("None".into(), py::json)
        ))),
    }
}

/// `df[name]`: the first column labelled `name` (pandas' `KeyError` otherwise).
fn column<'a>(df: &'a Frame, name: &str) -> Result<&'a Series, PpError> {
    df.position(name)
        .map(|p| &df.columns[p])
        .ok_or_else(|| invalid(format!("Column {} does not exist", py::str(name))))
}

fn str_label(name: &str) -> Label {
    vec![Value::Str(name.into())]
}

/// Superset's `geohash_encode(df, geohash, longitude, latitude)`: a geohash column computed
/// from a latitude and a longitude column. Unless the target is named `geohash`, the
/// `latitude` and `longitude` copies Superset builds on the way are appended too.
pub fn geohash_encode(df: Frame, options: &Options) -> Result<Frame, PpError> {
    ENCODE.check(options)?;
    let target = name_option(options, "geohash")?;
    let lat_name = name_option(options, "latitude")?;
    let lon_name = name_option(options, "longitude")?;
    let lat_col = column(&df, lat_name)?.clone();
    let lon_col = column(&df, lon_name)?.clone();
    let lats = coordinates(&lat_col)?;
    let lons = coordinates(&lon_col)?;
    let mut codes = Vec::with_capacity(lats.len());
    for (lat, lon) in lats.iter().zip(&lons) {
        codes.push(Value::Str(encode(*lat, *lon)?.into()));
    }
    let derived = vec![
        (str_label("latitude"), lat_col),
        (str_label("longitude"), lon_col),
        (str_label("geohash"), Series::Object(codes.into())),
    ];
    Ok(append_columns(
        df,
        derived,
        &[("geohash".to_string(), target.to_string())],
    ))
}

/// A coordinate column as floats, the way a row of `DataFrame.apply(axis=1)` hands them to
/// python-geohash (a null object cell is a Python `TypeError` there).
fn coordinates(series: &Series) -> Result<Vec<f64>, PpError> {
    match series {
        Series::Float64(v) => Ok(v.clone()),
        Series::Int64(v) => Ok(v.iter().map(|x| *x as f64).collect()),
        Series::Bool(v) => Ok(v.iter().map(|b| f64::from(u8::from(*b))).collect()),
        Series::Object(v) => v
            .iter()
            .map(|x| match x {
                Value::Int(i) => Ok(*i as f64),
                Value::Float(f) => Ok(*f),
                Value::Bool(b) => Ok(f64::from(u8::from(*b))),
                _ => Err(invalid("Latitudes and longitudes must be numbers")),
            })
            .collect(),
        Series::Datetime(_) => Err(invalid("Latitudes and longitudes must be numbers")),
    }
}

/// Superset's `geohash_decode(df, geohash, longitude, latitude)`: latitude and longitude
/// columns (cell centres) decoded from a geohash column.
pub fn geohash_decode(df: Frame, options: &Options) -> Result<Frame, PpError> {
    DECODE.check(options)?;
    let source = name_option(options, "geohash")?;
    let lat_name = name_option(options, "latitude")?;
    let lon_name = name_option(options, "longitude")?;
    let codes = column(&df, source)?;
    let n = codes.len();
    if n == 0 {
        // Unpacking `zip(*[])` into two columns raises a `ValueError`.
        return Err(invalid("Invalid geohash string"));
    }
    let (mut lats, mut lons) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let Value::Str(code) = codes.get(i) else {
            return Err(invalid("Geohashes must be strings"));
        };
        let (lat, lon) = decode(&code).ok_or_else(|| invalid("Invalid geohash string"))?;
        lats.push(lat);
        lons.push(lon);
    }
    let derived = vec![
        (str_label("latitude"), Series::Float64(lats)),
        (str_label("longitude"), Series::Float64(lons)),
    ];
    let mapping = [
        ("latitude".to_string(), lat_name.to_string()),
        ("longitude".to_string(), lon_name.to_string()),
    ];
    Ok(append_columns(df, derived, &mapping))
}

/// Superset's `geodetic_parse(df, geodetic, longitude, latitude, altitude=None)`: latitude,
/// longitude and altitude (km) columns parsed from point strings. A null cell is the point
/// (0, 0, 0), as `Point(None)` is. Without an `altitude` name the parsed altitude is still
/// appended (as `altitude`) unless every name is the identity.
pub fn geodetic_parse(df: Frame, options: &Options) -> Result<Frame, PpError> {
    GEODETIC.check(options)?;
    let source = name_option(options, "geodetic")?;
    let lat_name = name_option(options, "latitude")?;
    let lon_name = name_option(options, "longitude")?;
    // `if altitude:` — an empty or null name means "not requested".
    let alt_name = match get(options, "altitude") {
        Some(serde_json::Value::String(s)) if !s.is_empty() => Some(s.as_str()),
        Some(other) if opt_bool(options, "altitude").unwrap_or(false) => {
            return Err(invalid(format!(
                "`altitude` must be a column name, not {}",
                py::json(other)
            )));
        }
        _ => None,
    };
    let points = column(&df, source)?;
    let n = points.len();
    if n == 0 {
        return Err(invalid("Invalid geodetic string"));
    }
    let (mut lats, mut lons, mut alts) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for i in 0..n {
        let (lat, lon, alt) = match points.get(i) {
            Value::Str(s) => parse_point(&s).ok_or_else(|| invalid("Invalid geodetic string"))?,
            Value::Null if matches!(points, Series::Object(_)) => (0.0, 0.0, 0.0),
            // A number (NaN included) is `Point(single_number)`, a `ValueError`.
            Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::Null => {
                return Err(invalid("Invalid geodetic string"));
            }
            _ => return Err(invalid("Geodetic points must be strings")),
        };
        lats.push(lat);
        lons.push(lon);
        alts.push(alt);
    }
    let derived = vec![
        (str_label("latitude"), Series::Float64(lats)),
        (str_label("longitude"), Series::Float64(lons)),
        (str_label("altitude"), Series::Float64(alts)),
    ];
    let mut mapping = vec![
        ("latitude".to_string(), lat_name.to_string()),
        ("longitude".to_string(), lon_name.to_string()),
    ];
    if let Some(a) = alt_name {
        mapping.push(("altitude".to_string(), a.to_string()));
    }
    Ok(append_columns(df, derived, &mapping))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_python_geohash() {
        assert_eq!(encode(37.7749, -122.4194).unwrap(), "9q8yyk8ytpxr");
        assert_eq!(encode(48.8566, 2.3522).unwrap(), "u09tvw0f64r7");
        assert_eq!(encode(0.0, 0.0).unwrap(), "s00000000000");
        assert_eq!(encode(-0.0001, 179.9999).unwrap(), "rzzzzzzzmtm7");
        assert_eq!(encode(95.0, 0.0).unwrap_err().message, "invalid latitude.");
        assert!(encode(f64::NAN, 0.0).is_err());
    }

    #[test]
    fn decodes_cell_centres() {
        assert_eq!(decode("ukq8"), Some((68.994140625, 20.56640625)));
        assert_eq!(
            decode("9q8yyk8ytpxr"),
            Some((37.774899965152144, -122.41939986124635))
        );
        assert_eq!(
            decode("rzzzzzzzzzzz"),
            Some((-8.381903171539307e-08, 179.99999983236194))
        );
        assert_eq!(decode("9q8yA"), None);
        assert_eq!(decode("UKQ8"), decode("ukq8"));
    }
}
