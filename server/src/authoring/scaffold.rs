//! `liteset plugin new`: a plugin crate from the templates next to this file.
//!
//! The templates are complete crates with placeholders (`{{name}}`, …); the black-box test
//! `tests/tests/authoring.rs` builds and tests what they generate, so a template that stops
//! compiling against the SDK fails CI.

use std::path::{Path, PathBuf};

use super::{AuthoringError, NewArgs, NewKind, Result};

const CARGO_TOML: &str = include_str!("templates/Cargo.toml.tmpl");
const README: &str = include_str!("templates/README.md.tmpl");
const GITIGNORE: &str = include_str!("templates/gitignore.tmpl");
const POST_PROCESSOR: &str = include_str!("templates/post_processor.rs.tmpl");
const VIZ: &str = include_str!("templates/viz.rs.tmpl");

/// The SDK of the checkout this binary was compiled from; a default for authors working in
/// that checkout. A binary copied elsewhere has no such folder and asks for `--sdk-path`.
const CHECKOUT_SDK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../sdk");

/// The names the server accepts (see `plugins::registry`), so a generated plugin installs.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// Names of the built-in plugins and operations: the server refuses uploads taking them.
fn reserved(name: &str) -> bool {
    name == crate::plugins::BUILTIN_POSTPROCESSING
        || name == crate::plugins::BUILTIN_VIZ
        || crate::query::context::POST_PROCESSING_OPERATIONS.contains(&name)
}

/// The SDK folder to depend on, absolute, checked to hold `liteset-sdk`.
fn sdk_path(given: Option<&Path>) -> Result<PathBuf> {
    let (path, hint) = match given {
        Some(p) => (p.to_path_buf(), ""),
        None => (
            PathBuf::from(CHECKOUT_SDK),
            " (the checkout this liteset binary was built from); pass --sdk-path",
        ),
    };
    let manifest = std::fs::read_to_string(path.join("Cargo.toml")).map_err(|e| {
        AuthoringError::Usage(format!(
            "no liteset-sdk crate at {}{hint}: {e}",
            path.display()
        ))
    })?;
    if !manifest.contains("name = \"liteset-sdk\"") {
        return Err(AuthoringError::Usage(format!(
            "{} is not the liteset-sdk crate",
            path.display()
        )));
    }
    std::fs::canonicalize(&path)
        .map_err(|e| AuthoringError::Usage(format!("{}: {e}", path.display())))
}

/// A TOML basic string holding `s`.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn render(template: &str, vars: &[(&str, &str)]) -> String {
    vars.iter().fold(template.to_owned(), |t, (k, v)| {
        t.replace(&format!("{{{{{k}}}}}"), v)
    })
}

/// Writes the crate; prints where and what to do next.
pub fn new(args: &NewArgs) -> Result<()> {
    let name = args.name.as_str();
    if !valid_name(name) {
        return Err(AuthoringError::Usage(format!(
            "plugin name {name:?} is invalid: use 1 to 64 lowercase letters, digits, '_' or '-', \
             starting with a letter"
        )));
    }
    if reserved(name) {
        return Err(AuthoringError::Usage(format!(
            "plugin name {name:?} is reserved for a built-in operation; choose another"
        )));
    }
    let dir = args.path.clone().unwrap_or_else(|| PathBuf::from(name));
    if dir.exists()
        && std::fs::read_dir(&dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(AuthoringError::Usage(format!(
            "{} exists and is not empty",
            dir.display()
        )));
    }
    let sdk = sdk_path(args.sdk_path.as_deref())?;
    let sdk_text = sdk.to_string_lossy().into_owned();
    // The package keeps the name (cargo accepts '-' and '_'); the library's file name, and so
    // the `.wasm`'s, uses '_' as rustc does.
    let crate_name = name.replace('-', "_");
    let (kind, kind_text, lib, usage, try_it) = match args.kind {
        NewKind::PostProcessor => (
            "post-processor",
            "post-processor",
            POST_PROCESSOR,
            format!(
                "A chart uses it as one step of its query's `post_processing` list:\n\n\
                 ```json\n{{\"operation\": \"{name}\", \"options\": {{\"column\": \"sales\", \"factor\": 100}}}}\n```\n\n\
                 It adds `sales_scaled` = `sales` × `factor` (see `src/lib.rs`)."
            ),
            format!(
                "## Try it locally\n\n\
                 `liteset plugin test` runs the component under the server's limits on a table \
                 given as JSON records (what `/api/v1/chart/data` returns in `data`):\n\n\
                 ```sh\n\
                 echo '[{{\"city\": \"Cork\", \"sales\": 1.5}}, {{\"city\": \"Paris\", \"sales\": null}}]' > input.json\n\
                 liteset plugin test target/wasm32-wasip2/release/{crate_name}.wasm \\\n  \
                 --input input.json --params '{{\"column\": \"sales\", \"factor\": 10}}'\n\
                 ```"
            ),
        ),
        NewKind::Viz => (
            "viz",
            "viz (chart type)",
            VIZ,
            format!(
                "It renders charts whose `viz_type` is `{name}`: `build_query` turns the chart's \
                 `params` (a `metric`, `groupby` columns) into a query, `render` draws the \
                 result as horizontal bars in SVG (see `src/lib.rs`). Create a chart with\n\n\
                 ```json\n{{\"slice_name\": \"People by city\", \"viz_type\": \"{name}\", \"datasource_id\": 1, \"datasource_type\": \"table\",\n \
                 \"params\": \"{{\\\"metric\\\": \\\"count\\\", \\\"groupby\\\": [\\\"city\\\"]}}\"}}\n```\n\n\
                 and fetch `/api/v1/chart/<id>/render.svg` or its thumbnail."
            ),
            format!(
                "## Try it locally\n\n\
                 `liteset plugin test` runs the component under the server's limits: its \
                 `build_query` on the form data, then its `render` on a result table given as \
                 JSON records (what `/api/v1/chart/data` returns in `data`):\n\n\
                 ```sh\n\
                 echo '[{{\"city\": \"Cork\", \"count\": 3}}, {{\"city\": \"Paris\", \"count\": 5}}]' > result.json\n\
                 liteset plugin test target/wasm32-wasip2/release/{crate_name}.wasm --input result.json \\\n  \
                 --form-data '{{\"metric\": \"count\", \"groupby\": [\"city\"]}}' --svg chart.svg --png chart.png\n\
                 ```"
            ),
        ),
    };
    let sdk_comment = format!("Liteset's SDK, by path: {sdk_text}");
    let vars: [(&str, &str); 9] = [
        ("name", name),
        ("package", name),
        ("crate", &crate_name),
        ("kind", kind),
        ("kind_text", kind_text),
        (
            "sdk_dep",
            &format!("{{ path = {} }}", toml_string(&sdk_text)),
        ),
        ("sdk_comment", &sdk_comment),
        ("usage", &usage),
        ("try", &try_it),
    ];
    let sdk_note = format!(
        "`{sdk_text}` (by default the `sdk/` folder of the Liteset checkout the `liteset` binary \
         was built from; `liteset plugin new --sdk-path` picks another)"
    );
    let files: [(&str, String); 4] = [
        ("Cargo.toml", render(CARGO_TOML, &vars)),
        ("src/lib.rs", render(lib, &vars)),
        (
            "README.md",
            render(&README.replace("{{sdk_note}}", &sdk_note), &vars),
        ),
        (".gitignore", GITIGNORE.to_owned()),
    ];
    for (file, text) in &files {
        let path = dir.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                AuthoringError::Io(format!("cannot create {}: {e}", parent.display()))
            })?;
        }
        std::fs::write(&path, text)
            .map_err(|e| AuthoringError::Io(format!("cannot write {}: {e}", path.display())))?;
    }
    println!("created {kind} plugin {name} in {}", dir.display());
    println!(
        "next: cd {} && cargo test && liteset plugin build",
        dir.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_servers_rules() {
        assert!(valid_name("myviz"));
        assert!(valid_name("my-viz_2"));
        assert!(!valid_name("MyViz"));
        assert!(!valid_name("2viz"));
        assert!(!valid_name(""));
        assert!(!valid_name(&"a".repeat(65)));
        assert!(reserved("pivot"));
        assert!(reserved("charts"));
        assert!(!reserved("zscore"));
    }

    #[test]
    fn templates_are_filled() {
        let dir = tempfile::tempdir().unwrap();
        for (kind, sub) in [(NewKind::PostProcessor, "pp"), (NewKind::Viz, "viz")] {
            let path = dir.path().join(sub);
            new(&NewArgs {
                name: "my-plugin".into(),
                kind,
                path: Some(path.clone()),
                sdk_path: None,
            })
            .unwrap();
            for file in ["Cargo.toml", "src/lib.rs", "README.md", ".gitignore"] {
                let text = std::fs::read_to_string(path.join(file)).unwrap();
                assert!(
                    !text.contains("{{"),
                    "{file} has an unfilled placeholder: {text}"
                );
            }
            let toml = std::fs::read_to_string(path.join("Cargo.toml")).unwrap();
            assert!(toml.contains("name = \"my-plugin\""), "{toml}");
            assert!(toml.contains("liteset-sdk = { path = \"/"), "{toml}");
            let readme = std::fs::read_to_string(path.join("README.md")).unwrap();
            assert!(readme.contains("my_plugin.wasm"), "{readme}");
            // A second `new` into the same folder is refused.
            let again = new(&NewArgs {
                name: "my-plugin".into(),
                kind,
                path: Some(path),
                sdk_path: None,
            });
            assert!(matches!(again, Err(AuthoringError::Usage(_))));
        }
    }

    #[test]
    fn toml_strings_escape() {
        assert_eq!(toml_string(r#"a"b\c"#), r#""a\"b\\c""#);
    }
}
