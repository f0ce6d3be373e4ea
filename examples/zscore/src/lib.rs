//! `zscore`: a post-processor flagging outliers of a numeric column.
//!
//! As a step of a chart's `post_processing` list:
//!
//! ```json
//! {"operation": "zscore", "options": {"column": "sales", "threshold": 3}}
//! ```
//!
//! adds `sales__zscore` = (x − mean) / standard deviation and `sales__outlier` =
//! |z| > threshold. The mean and the sample standard deviation (pandas' default, ddof = 1)
//! skip nulls; a null value has a null z-score and a null flag. With fewer than two values or
//! no spread the z-scores are 0 and nothing is an outlier.

use liteset_sdk::{Column, Invocation, PluginError, PluginInfo, PostProcessor, Table, Value};
use serde_json::Value as Json;

/// The plugin.
pub struct ZScore;

/// `threshold` when the options give none.
pub const DEFAULT_THRESHOLD: f64 = 3.0;

/// The options of a step.
#[derive(Debug, PartialEq)]
pub struct Params {
    /// The numeric column to score.
    pub column: String,
    /// |z| above this is an outlier.
    pub threshold: f64,
}

impl Params {
    /// Reads and checks the options JSON.
    pub fn parse(params: &str) -> Result<Params, PluginError> {
        let json: Json = serde_json::from_str(params)
            .map_err(|e| PluginError::invalid_params(format!("options are not JSON: {e}")))?;
        let column = json["column"]
            .as_str()
            .filter(|c| !c.is_empty())
            .ok_or_else(|| PluginError::invalid_params("`column` (a column name) is required"))?
            .to_owned();
        let threshold = match &json["threshold"] {
            Json::Null => DEFAULT_THRESHOLD,
            t => t
                .as_f64()
                .filter(|t| t.is_finite() && *t >= 0.0)
                .ok_or_else(|| PluginError::invalid_params("`threshold` must be a number ≥ 0"))?,
        };
        Ok(Params { column, threshold })
    }
}

/// z-scores of `values` (nulls stay null).
pub fn zscores(values: &[Option<f64>]) -> Vec<Option<f64>> {
    let present: Vec<f64> = values.iter().flatten().copied().collect();
    let n = present.len() as f64;
    let mean = present.iter().sum::<f64>() / n.max(1.0);
    let var = if present.len() < 2 {
        0.0
    } else {
        present.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
    };
    let sd = var.sqrt();
    values
        .iter()
        .map(|v| v.map(|v| if sd > 0.0 { (v - mean) / sd } else { 0.0 }))
        .collect()
}

impl PostProcessor for ZScore {
    fn info() -> PluginInfo {
        PluginInfo::post_processor("zscore", env!("CARGO_PKG_VERSION"))
            .label("Z-score outliers")
            .description("Adds <column>__zscore and a boolean <column>__outlier (|z| > threshold)")
            .params_schema(
                r#"{"type":"object","required":["column"],"properties":{
                    "column":{"type":"string"},
                    "threshold":{"type":"number","minimum":0,"default":3}}}"#,
            )
    }

    fn process(ctx: &Invocation, params: &str, mut input: Table) -> Result<Table, PluginError> {
        let p = Params::parse(params)?;
        let column = input
            .column(&p.column)
            .ok_or_else(|| PluginError::invalid_input(format!("no column `{}`", p.column)))?;
        if !column.data.is_numeric() {
            return Err(PluginError::invalid_input(format!(
                "`{}` is not numeric",
                p.column
            )));
        }
        let values: Vec<Option<f64>> = (0..column.len())
            .map(|i| match column.get(i) {
                Value::Null => None,
                v => v.as_f64(),
            })
            .collect();
        let z = zscores(&values);
        let outliers: Vec<Option<bool>> =
            z.iter().map(|z| z.map(|z| z.abs() > p.threshold)).collect();
        liteset_sdk::log::debug!(
            "request {}: {} outliers in {} rows",
            ctx.request_id,
            outliers.iter().filter(|o| **o == Some(true)).count(),
            z.len()
        );
        // Replace the columns when a previous run left them (the step is idempotent).
        for col in [
            Column::float64(format!("{}__zscore", p.column), z),
            Column::boolean(format!("{}__outlier", p.column), outliers),
        ] {
            match input.column_mut(&col.name.clone()) {
                Some(existing) => *existing = col,
                None => input.push_column(col)?,
            }
        }
        Ok(input)
    }
}

liteset_sdk::export_post_processor!(ZScore);

#[cfg(test)]
mod tests {
    use super::*;
    use liteset_sdk::testing::{post_processor_info, run_post_processor, table};

    #[test]
    fn scores_and_flags_with_the_threshold() {
        // Six values: mean 10, sample sd = sqrt(300 / 5) ≈ 7.75, so 25 is z ≈ 1.94.
        let input = table! {
            "day" => utf8 [Some("a"), Some("b"), Some("c"), Some("d"), Some("e"), Some("f"), Some("g")],
            "sales" => float64 [Some(5.0), Some(5.0), None, Some(5.0), Some(10.0), Some(25.0), Some(10.0)],
        };
        let out =
            run_post_processor::<ZScore>(r#"{"column":"sales","threshold":1.5}"#, input).unwrap();
        let z = out.column("sales__zscore").unwrap();
        let flag = out.column("sales__outlier").unwrap();
        assert!(z.is_null(2) && flag.is_null(2));
        let z5 = z.get(5).as_f64().unwrap();
        assert!((z5 - 15.0 / 60f64.sqrt()).abs() < 1e-12, "{z5}");
        assert!(flag.bool().unwrap()[5]);
        assert!(!flag.bool().unwrap()[0]);
        assert_eq!(
            out.column_names().collect::<Vec<_>>(),
            ["day", "sales", "sales__zscore", "sales__outlier"]
        );
    }

    #[test]
    fn the_default_threshold_is_three() {
        let mut values = vec![0i64; 20];
        values.push(100);
        let input = liteset_sdk::TableBuilder::new()
            .int64("n", values)
            .build()
            .unwrap();
        let out = run_post_processor::<ZScore>(r#"{"column":"n"}"#, input).unwrap();
        let flags = out.column("n__outlier").unwrap().bool().unwrap().to_vec();
        assert_eq!(flags.iter().filter(|f| **f).count(), 1);
        assert!(flags[20]);
    }

    #[test]
    fn no_spread_means_no_outliers() {
        assert_eq!(zscores(&[Some(1.0), Some(1.0)]), [Some(0.0), Some(0.0)]);
        assert_eq!(zscores(&[Some(4.0), None]), [Some(0.0), None]);
        assert!(zscores(&[]).is_empty());
    }

    #[test]
    fn running_twice_replaces_the_columns() {
        let input = table! { "x" => float64 [1.0, 2.0, 3.0] };
        let once = run_post_processor::<ZScore>(r#"{"column":"x"}"#, input).unwrap();
        let twice = run_post_processor::<ZScore>(r#"{"column":"x"}"#, once.clone()).unwrap();
        assert_eq!(once, twice);
    }

    #[test]
    fn bad_options_and_input() {
        let t = || table! { "x" => float64 [1.0], "s" => utf8 [Some("a")] };
        for (params, want) in [
            (
                "{}",
                PluginError::invalid_params("`column` (a column name) is required"),
            ),
            (
                r#"{"column":"x","threshold":-1}"#,
                PluginError::invalid_params("`threshold` must be a number ≥ 0"),
            ),
            (
                r#"{"column":"y"}"#,
                PluginError::invalid_input("no column `y`"),
            ),
            (
                r#"{"column":"s"}"#,
                PluginError::invalid_input("`s` is not numeric"),
            ),
        ] {
            assert_eq!(
                run_post_processor::<ZScore>(params, t()).unwrap_err(),
                want,
                "{params}"
            );
        }
    }

    #[test]
    fn info_is_installable() {
        assert_eq!(post_processor_info::<ZScore>().unwrap().name, "zscore");
    }
}
