//! The MariaDB server the MySQL engine tests use: the one `tests/mariadb.sh` started (as
//! `bash tests/run` does), named by `LITESET_TEST_MYSQL_URL` (a BI reader with SELECT and SHOW
//! VIEW), `LITESET_TEST_MYSQL_FILE_URL` (also FILE, DML and DDL: Liteset's own checks must
//! hold where privileges would not) and `LITESET_TEST_MYSQL_ADMIN_URL` (all privileges, for
//! fixtures and the process list).
//!
//! Without those variables the tests that need the server are skipped with a loud message
//! ([`mariadb`] returns `None`); CI always sets them.

/// The connection URIs of the test server's users.
#[derive(Clone, Debug)]
pub struct TestMaria {
    /// The BI reader (`SELECT`, `SHOW VIEW` on `liteset_test`); its password has characters
    /// that need percent-encoding.
    pub reader_url: String,
    /// A user with `FILE` and DML/DDL on `liteset_test`.
    pub file_url: String,
    /// All privileges.
    pub admin_url: String,
    /// The server's `secure_file_priv` directory (where `INTO OUTFILE` could write).
    pub files_dir: Option<String>,
}

/// The test server, or `None` (with a loud message on stderr) when `tests/mariadb.sh` did not
/// run.
pub fn mariadb() -> Option<TestMaria> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    match (
        var("LITESET_TEST_MYSQL_URL"),
        var("LITESET_TEST_MYSQL_FILE_URL"),
        var("LITESET_TEST_MYSQL_ADMIN_URL"),
    ) {
        (Some(reader_url), Some(file_url), Some(admin_url)) => Some(TestMaria {
            reader_url,
            file_url,
            admin_url,
            files_dir: var("LITESET_TEST_MYSQL_FILES_DIR"),
        }),
        _ => {
            eprintln!(
                "\n*** SKIPPED: LITESET_TEST_MYSQL_URL is not set; run through `bash tests/run` \
                 (which sources tests/mariadb.sh) to test the MySQL engine ***\n"
            );
            None
        }
    }
}
