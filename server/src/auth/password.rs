//! Password hashing and verification.
//!
//! This module owns the password formats Liteset reads and writes:
//!
//! * **New hashes** are Argon2id PHC strings (`$argon2id$v=19$m=19456,t=2,p=1$…`), using the
//!   OWASP-recommended parameters for an interactive login path and a random salt from the OS.
//! * **Legacy hashes** imported from a Superset metadata database are werkzeug strings of the
//!   form `method$salt$hexdigest`, where `method` is `scrypt[:N:r:p]` or
//!   `pbkdf2[:sha256|sha512[:iterations]]`. They verify, and [`needs_rehash`] reports them so the
//!   login path can upgrade them to Argon2id once it holds the plaintext.
//!
//! Stored hashes are treated as hostile input: an administrator may import a user table from
//! anywhere, so cost parameters are capped *before* any work is done, and anything malformed,
//! unknown (including werkzeug's unsalted `plain` method) or too expensive simply fails to
//! verify. Verification never panics on stored data.
//!
//! What this module must not do: no I/O of any kind (the caller loads and stores hashes), and
//! never log a password or put one in an error message. Diagnostics name only a fixed reason,
//! never the stored string, because a mis-imported column may hold plaintext passwords.
//!
//! Hashing is deliberately CPU- and memory-heavy (werkzeug's default scrypt needs 32 MiB), so
//! async callers should use [`hash_password_blocking`] and [`verify_password_blocking`], which run
//! on a few dedicated hashing threads, which also bound how many run at once.

use std::num::NonZeroUsize;
use std::sync::{Arc, LazyLock};

use argon2::password_hash::{PasswordHash, PasswordHasher, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use rand::rngs::OsRng;
use sha2::{Sha256, Sha512};
use subtle::ConstantTimeEq;

/// Argon2id memory cost of new hashes, in KiB (19 MiB, OWASP's recommendation).
const ARGON2_M_COST_KIB: u32 = 19_456;
/// Argon2id iteration count of new hashes.
const ARGON2_T_COST: u32 = 2;
/// Argon2id lane count of new hashes.
const ARGON2_P_COST: u32 = 1;
/// Argon2id output length of new hashes, in bytes.
const ARGON2_OUTPUT_LEN: usize = 32;

/// Largest Argon2 memory cost accepted from a stored hash (256 MiB), matching the scrypt cap.
const ARGON2_MAX_M_COST_KIB: u32 = 256 * 1024;
/// Largest Argon2 iteration count accepted from a stored hash.
const ARGON2_MAX_T_COST: u32 = 10;
/// Largest Argon2 lane count accepted from a stored hash.
const ARGON2_MAX_P_COST: u32 = 16;

/// werkzeug's scrypt parameters when the method is a bare `scrypt`.
const SCRYPT_DEFAULT_N: u64 = 1 << 15;
const SCRYPT_DEFAULT_R: u32 = 8;
const SCRYPT_DEFAULT_P: u32 = 1;
/// werkzeug's scrypt output length (hashlib's default `dklen`).
const SCRYPT_OUTPUT_LEN: usize = 64;
/// Largest accepted log2(N) for scrypt.
const SCRYPT_MAX_LOG_N: u32 = 20;
/// Largest accepted scrypt working memory, `128 * N * r` bytes.
const SCRYPT_MAX_MEMORY_BYTES: u64 = 256 * 1024 * 1024;
/// Largest accepted scrypt parallelism.
const SCRYPT_MAX_P: u32 = 16;

/// werkzeug 3.1's iteration count when the method names no count (`pbkdf2:sha256`).
const PBKDF2_DEFAULT_ITERATIONS: u32 = 1_000_000;
/// Largest PBKDF2 iteration count accepted from a stored hash.
const PBKDF2_MAX_ITERATIONS: u32 = 10_000_000;

/// Failure to produce a hash or to run a hashing job.
///
/// Verification itself never errors: a hash that cannot be checked is simply not a match.
/// No variant carries a password or a stored hash.
#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    /// The Argon2 implementation refused to hash (in practice: invalid parameters).
    #[error("password hashing failed: {message}")]
    Hash {
        /// The library's description of the failure.
        message: String,
    },
    /// The hashing job panicked or was dropped before it finished.
    #[error("password hashing task {reason}")]
    Join {
        /// `"panicked"` or `"was cancelled"`.
        reason: &'static str,
    },
    /// The hashing workers could not be started, or their queue is full.
    #[error("password hashing is unavailable")]
    Unavailable,
}

/// Hashes a new password as an Argon2id PHC string with Liteset's current parameters.
///
/// Blocks for tens of milliseconds and allocates ~19 MiB; from async code use
/// [`hash_password_blocking`].
pub fn hash_password(password: &str) -> Result<String, PasswordError> {
    let salt = SaltString::generate(&mut OsRng);
    let params = Params::new(
        ARGON2_M_COST_KIB,
        ARGON2_T_COST,
        ARGON2_P_COST,
        Some(ARGON2_OUTPUT_LEN),
    )
    .map_err(|e| PasswordError::Hash {
        message: e.to_string(),
    })?;
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|e| PasswordError::Hash {
            message: e.to_string(),
        })
}

/// Checks `password` against a stored hash in any supported format.
///
/// Accepts Argon2 PHC strings and werkzeug `scrypt` / `pbkdf2` (sha256 or sha512) hashes.
/// Returns `false` for a wrong password and for anything malformed, of an unknown method (such
/// as werkzeug's unsalted `plain`) or whose cost parameters exceed this module's caps; it never
/// panics. Digests are compared in constant time. Blocking: from async code use
/// [`verify_password_blocking`].
pub fn verify_password(password: &str, stored: &str) -> bool {
    if stored.starts_with('$') {
        verify_argon2(password, stored)
    } else {
        verify_werkzeug(password, stored)
    }
}

/// Like [`hash_password`], but runs on the hashing workers so the async executor stays
/// responsive, and waits for a slot in the process-wide limiter so concurrent logins cannot
/// exhaust memory.
pub async fn hash_password_blocking(password: String) -> Result<String, PasswordError> {
    run_limited(move || hash_password(&password)).await?
}

/// Like [`verify_password`], but runs on the hashing workers.
///
/// `Ok(false)` means "no match" (including malformed hashes); `Err` means the job did not run.
pub async fn verify_password_blocking(
    password: String,
    stored: String,
) -> Result<bool, PasswordError> {
    run_limited(move || verify_password(&password, &stored)).await
}

/// Whether a stored hash should be replaced by a fresh [`hash_password`] after a successful login.
///
/// True for every werkzeug format and for Argon2 hashes whose algorithm, version, parameters or
/// output length differ from the ones new hashes get, so parameter changes roll out as users log
/// in. Anything unparseable also reports true; callers should only ask after
/// [`verify_password`] has succeeded.
pub fn needs_rehash(stored: &str) -> bool {
    let Ok(hash) = PasswordHash::new(stored) else {
        return true;
    };
    if hash.algorithm != Algorithm::Argon2id.ident() || hash.version != Some(Version::V0x13.into())
    {
        return true;
    }
    let Ok(params) = Params::try_from(&hash) else {
        return true;
    };
    !(params.m_cost() == ARGON2_M_COST_KIB
        && params.t_cost() == ARGON2_T_COST
        && params.p_cost() == ARGON2_P_COST
        && params.output_len() == Some(ARGON2_OUTPUT_LEN)
        && params.keyid().is_empty()
        && params.data().is_empty())
}

/// A job for the hashing workers.
type HashJob = Box<dyn FnOnce() + Send>;

/// Hashing jobs wait here for a worker; bounded so a login flood is refused, not queued forever.
const HASH_QUEUE_LEN: usize = 1024;

/// A fixed set of worker threads, sized to the CPU count (at least 2), that run every hash.
///
/// Dedicated threads rather than tokio's blocking pool: Argon2 and scrypt allocate tens of MiB
/// per call, and glibc keeps freed memory in the arena of the thread that used it. Spread over
/// the blocking pool's many threads that grew the server to ~680 MB RSS under a login load;
/// with a few long-lived workers it stays at a few times one hash's working set. The workers
/// also bound concurrency: a job runs to completion even if its caller gives up, so a client
/// disconnecting cannot free a slot while its hash is still being computed.
static HASH_WORKERS: LazyLock<Option<std::sync::mpsc::SyncSender<HashJob>>> = LazyLock::new(|| {
    let cpus = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    let (tx, rx) = std::sync::mpsc::sync_channel::<HashJob>(HASH_QUEUE_LEN);
    let rx = Arc::new(std::sync::Mutex::new(rx));
    for n in 0..cpus.max(2) {
        let rx = Arc::clone(&rx);
        let spawned = std::thread::Builder::new()
            .name(format!("liteset-hash-{n}"))
            .spawn(move || {
                loop {
                    // The lock is held only while taking a job, not while running it.
                    let job = match rx.lock() {
                        Ok(guard) => guard.recv(),
                        Err(_) => return,
                    };
                    match job {
                        Ok(job) => job(),
                        Err(_) => return,
                    }
                }
            });
        if spawned.is_err() {
            return None;
        }
    }
    Some(tx)
});

/// Runs `job` on a hashing worker and waits for its result.
async fn run_limited<T, F>(job: F) -> Result<T, PasswordError>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let workers = HASH_WORKERS.as_ref().ok_or(PasswordError::Unavailable)?;
    let (done, result) = tokio::sync::oneshot::channel();
    let job: HashJob = Box::new(move || {
        // The caller gave up while the job waited (the login queue's deadline, a client gone):
        // nobody would read the result, so the worker moves on to the next login.
        if done.is_closed() {
            return;
        }
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        let _ = done.send(outcome);
    });
    workers
        .try_send(job)
        .map_err(|_| PasswordError::Unavailable)?;
    match result.await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(_)) => Err(PasswordError::Join { reason: "panicked" }),
        Err(_) => Err(PasswordError::Join {
            reason: "was cancelled",
        }),
    }
}

/// Records why a stored hash was refused and returns `false`.
///
/// Only the fixed reason is logged, never the stored string or the password.
fn reject(reason: &'static str) -> bool {
    tracing::debug!(reason, "stored password hash rejected");
    false
}

/// Like [`reject`], but at warn level: the hash may be genuine, yet its user cannot log in.
fn reject_cost(reason: &'static str) -> bool {
    tracing::warn!(reason, "stored password hash exceeds cost limits");
    false
}

thread_local! {
    /// Argon2's working memory, kept per hashing worker and reused by every verification, so
    /// the allocator never has to hand out (and then fragment) ~19 MiB per login.
    static ARGON2_BLOCKS: std::cell::RefCell<Vec<argon2::Block>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` with at least `n` Argon2 blocks of this thread's reusable memory. Memory beyond
/// what Liteset's own parameters need (an imported hash with a larger cost) is released after.
fn with_argon2_blocks<T>(n: usize, f: impl FnOnce(&mut [argon2::Block]) -> T) -> T {
    ARGON2_BLOCKS.with_borrow_mut(|blocks| {
        if blocks.len() < n {
            blocks.resize(n, argon2::Block::new());
        }
        let result = f(&mut blocks[..n]);
        let ours = usize::try_from(ARGON2_M_COST_KIB).unwrap_or(usize::MAX);
        if blocks.len() > ours {
            blocks.truncate(ours);
            blocks.shrink_to_fit();
        }
        result
    })
}

/// Verifies an Argon2 PHC string after capping its cost parameters.
fn verify_argon2(password: &str, stored: &str) -> bool {
    let Ok(hash) = PasswordHash::new(stored) else {
        return reject("not a valid PHC string");
    };
    let Ok(algorithm) = Algorithm::try_from(hash.algorithm) else {
        return reject("PHC algorithm is not argon2");
    };
    let Ok(params) = Params::try_from(&hash) else {
        return reject("invalid argon2 parameters");
    };
    if params.m_cost() > ARGON2_MAX_M_COST_KIB
        || params.t_cost() > ARGON2_MAX_T_COST
        || params.p_cost() > ARGON2_MAX_P_COST
    {
        return reject_cost("argon2 cost above limit");
    }
    let version = match hash.version.map(Version::try_from).transpose() {
        Ok(v) => v.unwrap_or_default(),
        Err(_) => return reject("unknown argon2 version"),
    };
    let (Some(salt), Some(expected)) = (hash.salt, hash.hash) else {
        return reject("PHC string lacks salt or hash");
    };
    let mut salt_buf = [0u8; 64];
    let Ok(salt) = salt.decode_b64(&mut salt_buf) else {
        return reject("argon2 salt is not valid base64");
    };
    let mut out = vec![0u8; expected.len()];
    let argon = Argon2::new(algorithm, version, params.clone());
    let computed = with_argon2_blocks(params.block_count(), |blocks| {
        argon.hash_password_into_with_memory(password.as_bytes(), salt, &mut out, blocks)
    });
    computed.is_ok() && bool::from(out.ct_eq(expected.as_bytes()))
}

/// A werkzeug key-derivation method with validated, bounded parameters.
enum LegacyKdf {
    Scrypt(scrypt::Params),
    Pbkdf2Sha256 { iterations: u32 },
    Pbkdf2Sha512 { iterations: u32 },
}

impl LegacyKdf {
    /// Digest length werkzeug stores for this method, in bytes.
    fn output_len(&self) -> usize {
        match self {
            Self::Scrypt(_) => SCRYPT_OUTPUT_LEN,
            Self::Pbkdf2Sha256 { .. } => 32,
            Self::Pbkdf2Sha512 { .. } => 64,
        }
    }

    /// Fills `out` with the derived key; `false` if the library refused.
    fn derive(&self, password: &[u8], salt: &[u8], out: &mut [u8]) -> bool {
        match self {
            Self::Scrypt(params) => scrypt::scrypt(password, salt, params, out).is_ok(),
            Self::Pbkdf2Sha256 { iterations } => {
                pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, *iterations, out);
                true
            }
            Self::Pbkdf2Sha512 { iterations } => {
                pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, *iterations, out);
                true
            }
        }
    }
}

/// Verifies a werkzeug `method$salt$hexdigest` string, as `check_password_hash` does.
fn verify_werkzeug(password: &str, stored: &str) -> bool {
    // werkzeug splits on the first two `$`; a `$` in the digest then makes it non-hex.
    let mut parts = stored.splitn(3, '$');
    let (Some(method), Some(salt), Some(digest_hex)) = (parts.next(), parts.next(), parts.next())
    else {
        return reject("not a method$salt$digest string");
    };
    let kdf = match parse_method(method) {
        Ok(kdf) => kdf,
        Err(Refusal::Malformed(reason)) => return reject(reason),
        Err(Refusal::TooCostly(reason)) => return reject_cost(reason),
    };
    // werkzeug compares the lowercase hex strings, so uppercase digits never match there either.
    if !digest_hex
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return reject("digest is not lowercase hex");
    }
    let Ok(expected) = hex::decode(digest_hex) else {
        return reject("digest is not hex");
    };
    if expected.len() != kdf.output_len() {
        return reject("digest has the wrong length");
    }
    let mut actual = vec![0u8; expected.len()];
    if !kdf.derive(password.as_bytes(), salt.as_bytes(), &mut actual) {
        return reject("key derivation refused the parameters");
    }
    actual.ct_eq(&expected).into()
}

/// Why a werkzeug method string was refused.
enum Refusal {
    Malformed(&'static str),
    TooCostly(&'static str),
}

/// Parses and bounds a werkzeug method such as `scrypt:32768:8:1` or `pbkdf2:sha256:600000`.
fn parse_method(method: &str) -> Result<LegacyKdf, Refusal> {
    let mut fields = method.split(':');
    let name = fields.next().unwrap_or_default();
    let args: Vec<&str> = fields.collect();
    match (name, args.as_slice()) {
        ("scrypt", []) => scrypt_kdf(SCRYPT_DEFAULT_N, SCRYPT_DEFAULT_R, SCRYPT_DEFAULT_P),
        ("scrypt", [n, r, p]) => scrypt_kdf(
            parse_number(n)?,
            parse_number(r)?.try_into().map_err(|_| too_costly_r())?,
            parse_number(p)?.try_into().map_err(|_| too_costly_p())?,
        ),
        ("pbkdf2", []) => pbkdf2_kdf("sha256", PBKDF2_DEFAULT_ITERATIONS),
        ("pbkdf2", [digest]) => pbkdf2_kdf(digest, PBKDF2_DEFAULT_ITERATIONS),
        ("pbkdf2", [digest, iterations]) => {
            let iterations = parse_number(iterations)?;
            if iterations == 0 {
                return Err(Refusal::Malformed("pbkdf2 iteration count is zero"));
            }
            let iterations = u32::try_from(iterations)
                .ok()
                .filter(|&i| i <= PBKDF2_MAX_ITERATIONS)
                .ok_or(Refusal::TooCostly("pbkdf2 iteration count above limit"))?;
            pbkdf2_kdf(digest, iterations)
        }
        ("scrypt" | "pbkdf2", _) => Err(Refusal::Malformed("wrong number of method arguments")),
        _ => Err(Refusal::Malformed("unsupported hash method")),
    }
}

fn too_costly_r() -> Refusal {
    Refusal::TooCostly("scrypt memory above limit")
}

fn too_costly_p() -> Refusal {
    Refusal::TooCostly("scrypt parallelism above limit")
}

/// Parses a decimal method argument: ASCII digits only, as werkzeug writes them (no sign).
fn parse_number(field: &str) -> Result<u64, Refusal> {
    if field.is_empty() || !field.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Refusal::Malformed("method argument is not a number"));
    }
    field
        .parse()
        .map_err(|_| Refusal::Malformed("method argument is too large"))
}

/// Validates werkzeug scrypt parameters against this module's caps.
fn scrypt_kdf(n: u64, r: u32, p: u32) -> Result<LegacyKdf, Refusal> {
    if n < 2 || !n.is_power_of_two() {
        return Err(Refusal::Malformed("scrypt N is not a power of two above 1"));
    }
    let log_n = n.trailing_zeros();
    if log_n > SCRYPT_MAX_LOG_N {
        return Err(Refusal::TooCostly("scrypt N above limit"));
    }
    if r == 0 || p == 0 {
        return Err(Refusal::Malformed("scrypt r and p must be positive"));
    }
    if p > SCRYPT_MAX_P {
        return Err(too_costly_p());
    }
    let memory = n
        .checked_mul(u64::from(r))
        .and_then(|nr| nr.checked_mul(128));
    if memory.is_none_or(|bytes| bytes > SCRYPT_MAX_MEMORY_BYTES) {
        return Err(too_costly_r());
    }
    let log_n = u8::try_from(log_n).map_err(|_| Refusal::TooCostly("scrypt N above limit"))?;
    scrypt::Params::new(log_n, r, p, SCRYPT_OUTPUT_LEN)
        .map(LegacyKdf::Scrypt)
        .map_err(|_| Refusal::Malformed("scrypt parameters out of range"))
}

/// Selects the PBKDF2 digest werkzeug names in the method.
fn pbkdf2_kdf(digest: &str, iterations: u32) -> Result<LegacyKdf, Refusal> {
    match digest {
        "sha256" => Ok(LegacyKdf::Pbkdf2Sha256 { iterations }),
        "sha512" => Ok(LegacyKdf::Pbkdf2Sha512 { iterations }),
        _ => Err(Refusal::Malformed("unsupported pbkdf2 digest")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Vectors computed with Python's hashlib and checked with werkzeug 3.1.8's
    // `check_password_hash` (true for the password, false for the password + "x").
    const SCRYPT_PW: &str = "scrypt:32768:8:1$SALT16charsXXXXX$0cf744e536eb7b63fd96e5767fd1591fca482fa3f89728a4052bcdd63f9b64de096ddf12aa36cf3e3c7f2d6b95216c2dee6d074fece16ca1941a0a2db687484f";
    const SCRYPT_NON_ASCII: &str = "scrypt:32768:8:1$Zx9qLm2PaR7tVb4N$6d5298b3b8c58925714fef107c0760f840b442eb3c8766bdb9eff8939c7cb9c77f4a570addca07035e2440a434755ff36a40fff2a6ab176546abcb3ad52a9a66";
    const SCRYPT_N1024: &str = "scrypt:1024:8:1$smallsalt$3a4d2b46c49da14d5324e7cbbc699fd28b604a7e607650f77bc1e34cb137ea263002fa632e648db7c110ad5045b299534d209ac12e2b243ca7c386c7618276c9";
    const PBKDF2_600K: &str = "pbkdf2:sha256:600000$aB3dE6gH9jK2mN5p$1e835e95a4cbedfb02773d85a1c6369f49a30b784884222c0d0055a91dc7c668";
    const PBKDF2_260K: &str = "pbkdf2:sha256:260000$Qw8eRt5yUi2oPa1s$0711d4ff612230ea872e9fc9c07e19a9d08be6b560238e967cc4f0530eebd8aa";
    const PBKDF2_NO_COUNT: &str = "pbkdf2:sha256$Mn6bVc3xZl9kJh2g$978be6b790f0d1b5d3b00ba9d5c24b7a733741000f5fb4e5e633258e30c63c15";
    // Cheap vectors (few iterations) for behaviour that does not depend on the count.
    const PBKDF2_NON_ASCII: &str = "pbkdf2:sha256:1000$Lk7jHg4fDs1aZx0c$89ba241e77ad114619443faf3445db14d59bf510b6246d4260df56d33b675c83";
    const PBKDF2_SHA512: &str = "pbkdf2:sha512:1000$Po4iUy7tRe1wQa5s$0110b13ecea2e22919d2a5c67408c75fddc1b501936bbcb9b0aa04a64354ea08bb13780b20ca319fa93834ce6eb22694c38dd0b872a9c03af44dc51db66bbafc";
    const PBKDF2_SHA512_NON_ASCII: &str = "pbkdf2:sha512:2000$Ur5tYh8jKl2mNb4v$6401a3ef4afa1900191c7bf73e56d7f1fc03abe8e8d94b41bd3e9c3b973efd63c268bb7c8eb45e13dcf3d2eed32613e4cfc029e01ddacc6321bc3e179df49b92";

    // PBKDF2 runs through generic code compiled at our crate's opt-level (0 in test builds), so
    // real werkzeug iteration counts cost seconds here; those vectors are checked once with the
    // right password and once with a wrong one, in separate tests so they run in parallel.

    fn assert_verifies_only(password: &str, stored: &str) {
        assert!(verify_password(password, stored), "right password");
        assert!(
            !verify_password(&format!("{password}x"), stored),
            "wrong password"
        );
        assert!(!verify_password("", stored), "empty password");
    }

    #[test]
    fn werkzeug_scrypt_hash_verifies_with_the_right_password_only() {
        assert_verifies_only("pw", SCRYPT_PW);
    }

    #[test]
    fn werkzeug_scrypt_hash_of_a_non_ascii_password_verifies() {
        assert_verifies_only("pässwörd", SCRYPT_NON_ASCII);
        assert!(!verify_password("passwort", SCRYPT_NON_ASCII));
    }

    #[test]
    fn werkzeug_scrypt_hash_with_non_default_cost_verifies() {
        assert_verifies_only("pw", SCRYPT_N1024);
    }

    #[test]
    fn werkzeug_pbkdf2_sha256_600000_hash_verifies_with_the_right_password() {
        assert!(verify_password("correct horse", PBKDF2_600K));
    }

    #[test]
    fn werkzeug_pbkdf2_sha256_600000_hash_fails_with_a_wrong_password() {
        assert!(!verify_password("correct horsf", PBKDF2_600K));
    }

    #[test]
    fn werkzeug_pbkdf2_sha256_260000_hash_verifies_with_the_right_password_only() {
        assert!(verify_password("correct horse", PBKDF2_260K));
        assert!(!verify_password("Correct horse", PBKDF2_260K));
    }

    #[test]
    fn werkzeug_pbkdf2_without_iteration_count_verifies_with_one_million_iterations() {
        assert!(verify_password("letmein", PBKDF2_NO_COUNT));
    }

    #[test]
    fn werkzeug_pbkdf2_without_iteration_count_fails_with_a_wrong_password() {
        assert!(!verify_password("letmeout", PBKDF2_NO_COUNT));
    }

    #[test]
    fn werkzeug_pbkdf2_methods_without_arguments_use_werkzeug_defaults() {
        for method in ["pbkdf2", "pbkdf2:sha256"] {
            assert!(
                matches!(
                    parse_method(method),
                    Ok(LegacyKdf::Pbkdf2Sha256 {
                        iterations: 1_000_000
                    })
                ),
                "{method}"
            );
        }
        assert!(matches!(
            parse_method("pbkdf2:sha512"),
            Ok(LegacyKdf::Pbkdf2Sha512 {
                iterations: 1_000_000
            })
        ));
        let Ok(LegacyKdf::Scrypt(params)) = parse_method("scrypt") else {
            panic!("bare scrypt should parse");
        };
        assert_eq!(
            (params.log_n(), params.r(), params.p()),
            (15, 8, 1),
            "scrypt defaults"
        );
    }

    #[test]
    fn werkzeug_pbkdf2_hash_of_a_non_ascii_password_verifies() {
        assert_verifies_only("pässwörd", PBKDF2_NON_ASCII);
        assert!(!verify_password("passwort", PBKDF2_NON_ASCII));
    }

    #[test]
    fn werkzeug_pbkdf2_sha512_hash_verifies_with_the_right_password_only() {
        assert_verifies_only("letmein", PBKDF2_SHA512);
        assert_verifies_only("🔑 ключ", PBKDF2_SHA512_NON_ASCII);
    }

    #[test]
    fn tampered_werkzeug_digest_salt_or_method_does_not_verify() {
        let mut digest_flipped = SCRYPT_N1024.to_owned();
        let last = digest_flipped.pop();
        digest_flipped.push(if last == Some('f') { 'e' } else { 'f' });
        assert!(!verify_password("pw", &digest_flipped));
        let salt_changed = SCRYPT_N1024.replacen("smallsalt", "smallsalT", 1);
        assert!(!verify_password("pw", &salt_changed));
        let count_changed = PBKDF2_SHA512.replacen(":1000$", ":1001$", 1);
        assert!(!verify_password("letmein", &count_changed));
        let digest_changed = PBKDF2_NON_ASCII.replacen("pbkdf2:sha256:", "pbkdf2:sha512:", 1);
        assert!(!verify_password("pässwörd", &digest_changed));
        let uppercase_method = PBKDF2_NON_ASCII.replacen("sha256", "SHA256", 1);
        assert!(!verify_password("pässwörd", &uppercase_method));
        // Equivalent spellings werkzeug never writes are not accepted either.
        let uppercase_digest = SCRYPT_N1024.replacen("3a4d2b", "3A4D2B", 1);
        assert!(!verify_password("pw", &uppercase_digest));
        let signed_count = SCRYPT_N1024.replacen(":8:1$", ":8:+1$", 1);
        assert!(!verify_password("pw", &signed_count));
    }

    #[test]
    fn argon2_hash_round_trips() {
        let stored = hash_password("s3cret pässword").expect("hash");
        assert!(verify_password("s3cret pässword", &stored));
        assert!(!verify_password("s3cret password", &stored));
        assert!(!verify_password("", &stored));
    }

    #[test]
    fn empty_password_can_be_hashed_and_verified() {
        let stored = hash_password("").expect("hash");
        assert!(verify_password("", &stored));
        assert!(!verify_password(" ", &stored));
    }

    #[test]
    fn fresh_hash_is_argon2id_with_owasp_parameters() {
        let stored = hash_password("pw").expect("hash");
        assert!(
            stored.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "unexpected prefix: {stored}"
        );
    }

    #[test]
    fn hashing_the_same_password_twice_gives_different_hashes() {
        let first = hash_password("pw").expect("hash");
        let second = hash_password("pw").expect("hash");
        assert_ne!(first, second);
        assert!(verify_password("pw", &first));
        assert!(verify_password("pw", &second));
    }

    #[test]
    fn fresh_hash_does_not_need_rehash() {
        let stored = hash_password("pw").expect("hash");
        assert!(!needs_rehash(&stored));
    }

    #[test]
    fn werkzeug_hashes_need_rehash() {
        for stored in [
            SCRYPT_PW,
            SCRYPT_N1024,
            PBKDF2_600K,
            PBKDF2_260K,
            PBKDF2_NO_COUNT,
            PBKDF2_NON_ASCII,
            PBKDF2_SHA512,
        ] {
            assert!(needs_rehash(stored), "{stored}");
        }
    }

    #[test]
    fn argon2_hash_with_other_parameters_verifies_but_needs_rehash() {
        let salt = SaltString::generate(&mut OsRng);
        let weaker = Params::new(8 * 1024, 1, 1, None).expect("params");
        let stored = Argon2::new(Algorithm::Argon2id, Version::V0x13, weaker)
            .hash_password(b"pw", &salt)
            .expect("hash")
            .to_string();
        assert!(verify_password("pw", &stored));
        assert!(needs_rehash(&stored));

        let argon2i = Argon2::new(Algorithm::Argon2i, Version::V0x13, Params::default())
            .hash_password(b"pw", &salt)
            .expect("hash")
            .to_string();
        assert!(verify_password("pw", &argon2i));
        assert!(needs_rehash(&argon2i));
    }

    #[test]
    fn unparseable_hashes_need_rehash() {
        assert!(needs_rehash(""));
        assert!(needs_rehash("plain$$pw"));
        assert!(needs_rehash("$argon2id$"));
    }

    #[test]
    fn malformed_stored_hashes_are_rejected_without_panicking() {
        let long_n = format!("scrypt:{}:8:1$s${}", "9".repeat(40), "00".repeat(64));
        let cases: Vec<&str> = vec![
            "",
            "$",
            "$$",
            "$$$",
            "plain",
            "plain$$pw",
            "pw",
            "sha256$salt$5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8",
            "md5$salt$0123456789abcdef0123456789abcdef",
            "scrypt",
            "scrypt$",
            "scrypt$x",
            "scrypt:abc$x$y",
            "scrypt:32768:8$s$00",
            "scrypt:32768:8:1:1$s$00",
            "scrypt:32768:8:-1$s$00",
            "scrypt::8:1$s$00",
            &long_n,
            "pbkdf2:sha256:0$s$zz",
            "pbkdf2:sha256:-5$s$00",
            "pbkdf2:sha256:1:2$s$00",
            "pbkdf2:sha1:1000$s$0123456789abcdef0123456789abcdef01234567",
            "pbkdf2:md5:1000$s$0123456789abcdef0123456789abcdef",
            "pbkdf2:sha256:1000$s$not hex at all",
            "pbkdf2:sha256:1000$s$abc",
            "pbkdf2:sha256:1000$s$00ff",
            "pbkdf2:sha256:1000$s$ü",
            "pbkdf2:sha256:1000$s$",
            "scrypt:1024:8:1$s$00ff",
            // Extra `$` ends up in the digest, which then is not hex.
            "pbkdf2:sha256:1000$s$ab$cd",
            "$argon2id$",
            "$argon2id$v=19$m=19456,t=2,p=1$",
            "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$",
            "$argon2id$v=19$m=abc,t=2,p=1$c2FsdHNhbHQ$aGFzaA",
            "$argon2id$v=19$m=1,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo",
            "$argon2id$v=99$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo",
            "$argon2id$v=19$m=19456,t=2,p=1,x=3$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo",
            "$pbkdf2-sha256$i=1000$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo",
            "$scrypt$ln=15,r=8,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo",
            "$2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW",
            "\0\0\0",
        ];
        for stored in cases {
            assert!(!verify_password("pw", stored), "{stored:?}");
            assert!(!verify_password("", stored), "{stored:?}");
        }
    }

    #[test]
    fn scrypt_costs_beyond_the_limits_are_rejected_before_computing() {
        let digest = "00".repeat(64);
        for method in [
            "scrypt:4294967296:8:1",     // log2(N) = 32
            "scrypt:2097152:1:1",        // log2(N) = 21
            "scrypt:1048576:3:1",        // 384 MiB
            "scrypt:32768:65536:1",      // 256 GiB
            "scrypt:32768:4294967296:1", // r does not fit in u32
            "scrypt:32768:8:17",         // p above 16
            "scrypt:32768:8:4294967296", // p does not fit in u32
            "scrypt:1000:8:1",           // N not a power of two
            "scrypt:1:8:1",              // N = 1
            "scrypt:0:8:1",
            "scrypt:32768:0:1",
            "scrypt:32768:8:0",
            "scrypt:65536:1:1", // scrypt requires N < 2^(16 r)
        ] {
            let stored = format!("{method}$salt${digest}");
            assert!(!verify_password("pw", &stored), "{method}");
        }
    }

    #[test]
    fn pbkdf2_iteration_counts_beyond_the_limit_are_rejected() {
        let digest = "00".repeat(32);
        for method in [
            "pbkdf2:sha256:10000001",
            "pbkdf2:sha256:4294967296",
            "pbkdf2:sha256:18446744073709551616",
            "pbkdf2:sha256:0",
        ] {
            let stored = format!("{method}$salt${digest}");
            assert!(!verify_password("pw", &stored), "{method}");
        }
    }

    #[test]
    fn argon2_costs_beyond_the_limits_are_rejected_before_computing() {
        let stored = hash_password("pw").expect("hash");
        for (from, to) in [
            ("m=19456,", "m=4194304,"),
            ("t=2,", "t=1000,"),
            ("p=1$", "p=64$"),
        ] {
            let hostile = stored.replacen(from, to, 1);
            assert_ne!(hostile, stored);
            assert!(!verify_password("pw", &hostile), "{hostile}");
        }
    }

    #[tokio::test]
    async fn blocking_variants_hash_and_verify_inside_a_runtime() {
        let stored = hash_password_blocking("pässwörd".to_owned())
            .await
            .expect("hash");
        assert!(
            verify_password_blocking("pässwörd".to_owned(), stored.clone())
                .await
                .expect("verify")
        );
        assert!(
            !verify_password_blocking("wrong".to_owned(), stored)
                .await
                .expect("verify")
        );
    }

    #[tokio::test]
    async fn blocking_verify_checks_werkzeug_hashes_and_rejects_garbage() {
        assert!(
            verify_password_blocking("pw".to_owned(), SCRYPT_PW.to_owned())
                .await
                .expect("verify")
        );
        assert!(
            !verify_password_blocking("pw".to_owned(), "scrypt:abc$x$y".to_owned())
                .await
                .expect("verify")
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_concurrent_blocking_jobs_all_complete() {
        let jobs: Vec<_> = (0..12)
            .map(|i| {
                tokio::spawn(async move {
                    let password = format!("password-{i}");
                    let stored = hash_password_blocking(password.clone()).await?;
                    verify_password_blocking(password, stored).await
                })
            })
            .collect();
        for job in jobs {
            assert!(job.await.expect("task").expect("hash and verify"));
        }
    }
}
