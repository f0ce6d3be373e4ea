//! `prophet`: only the option checks. Forecasting needs the optional `prophet` package,
//! which the reference Superset lacks too; valid options end in the same 400 it returns.

use serde_json::Value as Json;

use crate::error::{PpError, Result};
use crate::frame::Frame;
use crate::ops::{Opts, truthy};

/// Superset's `PROPHET_TIME_GRAIN_MAP` keys.
const TIME_GRAINS: &[&str] = &[
    "PT1S",
    "PT1M",
    "PT5M",
    "PT10M",
    "PT15M",
    "PT30M",
    "PT1H",
    "P1D",
    "P1W",
    "P1M",
    "P3M",
    "P1Y",
    "1969-12-28T00:00:00Z/P1W",
    "1969-12-29T00:00:00Z/P1W",
    "P1W/1970-01-03T00:00:00Z",
    "P1W/1970-01-04T00:00:00Z",
];

/// Runs `prophet` up to the point where the model would be fitted.
pub fn run(frame: Frame, options: &Json) -> Result<Frame> {
    let opts = Opts::parse(
        "prophet",
        options,
        &[
            "time_grain",
            "periods",
            "confidence_interval",
            "yearly_seasonality",
            "weekly_seasonality",
            "daily_seasonality",
            "index",
        ],
        &["time_grain", "periods", "confidence_interval"],
    )?;
    let time_grain = opts.get("time_grain").filter(|t| truthy(t));
    let Some(time_grain) = time_grain else {
        return Err(PpError::params("Time grain missing"));
    };
    let grain = time_grain.as_str().unwrap_or("");
    if !TIME_GRAINS.contains(&grain) {
        let shown = time_grain
            .as_str()
            .map_or_else(|| time_grain.to_string(), String::from);
        return Err(PpError::params(format!("Unsupported time grain: {shown}")));
    }
    let periods_ok = match opts.get("periods") {
        Some(Json::Number(n)) => n.as_i64().is_some_and(|p| p >= 0) || n.as_u64().is_some(),
        Some(Json::Bool(_)) => true,
        _ => false,
    };
    if !periods_ok {
        return Err(PpError::params("Periods must be a whole number"));
    }
    let ci = opts.get("confidence_interval").and_then(Json::as_f64);
    if !ci.is_some_and(|c| c > 0.0 && c < 1.0) {
        return Err(PpError::params(
            "Confidence interval must be between 0 and 1 (exclusive)",
        ));
    }
    let index = opts
        .string("index")?
        .filter(|s| !s.is_empty())
        .unwrap_or("__timestamp");
    if !frame.has_level0(index) {
        return Err(PpError::params("DataFrame must include temporal column"));
    }
    if frame.labels.len() < 2 {
        return Err(PpError::params("DataFrame include at least one series"));
    }
    Err(PpError::unsupported("`prophet` package not installed"))
}
