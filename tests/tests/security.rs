//! The adversarial suite: black-box attacks by ordinary accounts against the real binary, on
//! SQLite and PostgreSQL metadata and real analytics databases. One module per class of
//! defect; each test tries several spellings of its attack and asserts both the refusal
//! (4xx in Superset's envelope) and that nothing was left behind.
//!
//! Run alone with `bash tests/run -p liteset-tests --test security`.

// A test crate root resolves `mod x;` beside itself (tests/tests/x.rs), hence the paths.
#[path = "security/common.rs"]
mod common;
#[path = "security/engines.rs"]
mod engines;
#[path = "security/every_engine.rs"]
mod every_engine;
#[path = "security/exposure.rs"]
mod exposure;
#[path = "security/guest.rs"]
mod guest;
#[path = "security/imports.rs"]
mod imports;
#[path = "security/matrix.rs"]
mod matrix;
#[path = "security/rls.rs"]
mod rls;
#[path = "security/schemathesis.rs"]
mod schemathesis;
#[path = "security/sqlcheck.rs"]
mod sqlcheck;
#[path = "security/web.rs"]
mod web;
