//! Runs a `post_processing` list over the input of a golden fixture and prints the
//! response (or the error): handy to try cases the fixtures do not cover.
//! `cargo run --example pp_run -p liteset-plugin-postprocessing -- <fixture.json> '<steps json>'`

use liteset_plugin_postprocessing::io::{frame_from_records, frame_to_response};
use liteset_plugin_postprocessing::run_pipeline;
use serde_json::{Map, Value as Json};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("fixture path");
    let case: Json = serde_json::from_str(&std::fs::read_to_string(path).expect("readable"))
        .expect("json fixture");
    let steps: Json = match args.next() {
        Some(s) => serde_json::from_str(&s).expect("steps json"),
        None => case["post_processing"].clone(),
    };
    let input = &case["input"];
    let colnames: Vec<String> = input["colnames"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let empty = Map::new();
    let dtypes = input["pandas_dtypes"].as_object().unwrap_or(&empty);
    let records = input["data"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let frame = frame_from_records(&colnames, dtypes, records);
    match run_pipeline(frame, &steps).and_then(|f| frame_to_response(&f)) {
        Ok(r) => {
            println!("colnames {:?}", r.colnames);
            println!("coltypes {:?}", r.coltypes);
            println!("indexnames {}", Json::Array(r.indexnames));
            for row in r.data {
                println!("{}", Json::Object(row));
            }
        }
        Err(e) => println!("ERROR {:?}: {}", e.kind, e.message),
    }
}
