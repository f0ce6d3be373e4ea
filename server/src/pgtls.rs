//! TLS to PostgreSQL: libpq's `sslmode` and `sslrootcert` over rustls, one mechanism for every
//! PostgreSQL connection Liteset opens (the metadata store, analytical databases, their cancel
//! requests, `load-examples`).
//!
//! The modes are libpq's, because Superset's users write libpq URIs (psycopg2 hands the query
//! string to libpq) and expect libpq's meaning:
//!
//! | `sslmode` | TLS | certificate checked |
//! | --- | --- | --- |
//! | `disable` | never | — |
//! | `allow`, `prefer` (the default) | when the server offers it | no |
//! | `require` | always | no; with a root certificate, as `verify-ca` (libpq does the same) |
//! | `verify-ca` | always | chain to a trusted root; the host name is not compared |
//! | `verify-full` | always | chain and host name (DNS name or IP address in its SAN) |
//!
//! Trusted roots, first found: the database's `server_cert` (PEM, Superset's column; with it the
//! mode defaults to `verify-full`, as Superset's `get_extra_params` makes it), the file named by
//! `sslrootcert`, `sslrootcert=system` (libpq 16's word: the Mozilla roots of `webpki-roots`,
//! `verify-full` only), else the same Mozilla roots. Client certificates (`sslcert`, `sslkey`)
//! and revocation lists are refused rather than ignored, so nobody believes they are in use.
//!
//! The crypto provider is rustls' ring provider, chosen here for every config rather than taken
//! from a process default that may be unset (or set by another crate to something else); it is
//! the provider reqwest already builds, so no second one is compiled. Connections made without
//! verification still check the handshake's signatures, and SCRAM authentication binds itself
//! to the server's certificate (`tls-server-end-point`, through tokio-postgres-rustls) when the
//! server offers SCRAM-SHA-256-PLUS, which a man in the middle cannot forge even where the
//! certificate itself is not verified.
//!
//! Nothing here logs, and no message contains a URI, a password or a certificate's bytes.

use std::fmt;
use std::io::Read;
use std::path::Path;
use std::sync::{Arc, LazyLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{WebPkiServerVerifier, verify_server_cert_signed_by_trust_anchor};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore};
use rustls::{Error as RustlsError, SignatureScheme};
use tokio_postgres::config::SslMode as WireMode;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres_rustls::MakeRustlsConnect;

/// The most bytes read from an `sslrootcert` file: a bundle of every public root is ~250 KiB,
/// and a path naming a device (`/dev/zero`) must not read forever.
const MAX_ROOT_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// A TLS setting that cannot be used; the text names the option, never a secret.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TlsError(String);

/// libpq's `sslmode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    /// No TLS.
    Disable,
    /// TLS if the server offers it (libpq tries plain first; here both mean `prefer`).
    Allow,
    /// TLS if the server offers it, certificate not checked.
    Prefer,
    /// TLS or nothing; certificate checked only against a given root (then as `VerifyCa`).
    Require,
    /// TLS, chain verified against the roots, host name not checked.
    VerifyCa,
    /// TLS, chain and host name verified.
    VerifyFull,
}

impl SslMode {
    /// Parses libpq's spelling.
    pub fn parse(value: &str) -> Result<SslMode, TlsError> {
        Ok(match value {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(TlsError(format!(
                    "invalid sslmode value: \"{other}\" (disable, allow, prefer, require, \
                     verify-ca or verify-full)"
                )));
            }
        })
    }

    /// libpq's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// The TLS options of a connection URI's query string.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// `sslmode`, when given.
    pub sslmode: Option<SslMode>,
    /// `sslrootcert`: a file of PEM certificates, or `system`.
    pub sslrootcert: Option<String>,
}

impl TlsOptions {
    /// Takes `key=value` if it is a TLS option: `Ok(true)` when it was, `Ok(false)` when it is
    /// some other option, an error for a TLS option that cannot be honoured.
    pub fn take(&mut self, key: &str, value: &str) -> Result<bool, TlsError> {
        match key {
            "sslmode" => self.sslmode = Some(SslMode::parse(value)?),
            "sslrootcert" => self.sslrootcert = Some(value.to_owned()).filter(|v| !v.is_empty()),
            // libpq's defaults for these are files in ~/.postgresql; an empty value is that.
            "sslcert" | "sslkey" | "sslpassword" | "sslcrl" | "sslcrldir" if value.is_empty() => {}
            "sslcertmode" if matches!(value, "disable" | "allow") => {}
            "sslcert" | "sslkey" | "sslpassword" | "sslcertmode" => {
                return Err(TlsError(format!(
                    "{key} is not supported: Liteset does not present client certificates to \
                     PostgreSQL"
                )));
            }
            "sslcrl" | "sslcrldir" => {
                return Err(TlsError(format!(
                    "{key} is not supported: Liteset does not check certificate revocation lists"
                )));
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// Splits the TLS options off a `postgresql://` URL (the metadata store's), so tokio-postgres,
/// which knows neither `verify-*` modes nor `sslrootcert`, parses the rest. Pure: no file is read.
pub fn split_url(url: &str) -> Result<(String, TlsOptions), TlsError> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut options = TlsOptions::default();
    let mut kept = Vec::new();
    for part in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once('=').unwrap_or((part, ""));
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .map(|s| s.into_owned())
                .map_err(|_| TlsError("the URL's query string is not valid UTF-8".into()))
        };
        if !options.take(&decode(key)?, &decode(value)?)? {
            kept.push(part);
        }
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((rest, options))
}

/// The tokio-postgres configuration of a `postgresql://` URL with its TLS connector: the
/// metadata store's and `load-examples`' way in. Errors never contain the URL.
pub fn url_config(url: &str) -> Result<(tokio_postgres::Config, PgTls), TlsError> {
    let (rest, options) = split_url(url)?;
    let mut config: tokio_postgres::Config = rest
        .parse()
        .map_err(|e| TlsError(format!("invalid PostgreSQL URL: {e}")))?;
    let tls = PgTls::new(&options, None)?;
    tls.configure(&mut config);
    Ok((config, tls))
}

/// Whether `pem` is what Superset's `server_cert_validator` accepts: one or more PEM
/// certificates, each a well-formed X.509 certificate.
pub fn validate_server_cert(pem: &str) -> Result<(), TlsError> {
    roots_from_pem(pem.as_bytes(), "server_cert").map(|_| ())
}

/// Trusted roots from PEM text: at least one certificate, every one parsing.
fn roots_from_pem(pem: &[u8], what: &str) -> Result<RootCertStore, TlsError> {
    let invalid = || TlsError(format!("{what}: Invalid certificate"));
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|_| invalid())?;
        roots.add(cert).map_err(|_| invalid())?;
    }
    if roots.is_empty() {
        return Err(invalid());
    }
    Ok(roots)
}

/// The roots of an `sslrootcert` file, read bounded and only if it is a regular file.
fn roots_from_file(path: &str) -> Result<RootCertStore, TlsError> {
    let fail = |why: &str| {
        TlsError(format!(
            "could not read root certificate file \"{path}\": {why}"
        ))
    };
    let io = |e: std::io::Error| fail(&e.kind().to_string());
    let meta = std::fs::metadata(Path::new(path)).map_err(io)?;
    if !meta.is_file() {
        return Err(fail("not a regular file"));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(io)?
        .take(MAX_ROOT_FILE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    roots_from_pem(&bytes, "sslrootcert").map_err(|_| fail("no valid PEM certificate in it"))
}

/// The Mozilla roots webpki-roots carries: trust where no root is given.
fn public_roots() -> RootCertStore {
    RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    }
}

/// The crypto provider of every PostgreSQL TLS config (see the module documentation).
static PROVIDER: LazyLock<Arc<CryptoProvider>> =
    LazyLock::new(|| Arc::new(rustls::crypto::ring::default_provider()));

/// What the handshake checks of the server's certificate.
enum Check {
    /// Nothing of the certificate (`prefer`, `require` without roots).
    Nothing,
    /// The chain to these roots.
    Chain(Arc<RootCertStore>),
    /// The chain to these roots and the host name.
    Full(Arc<RootCertStore>),
}

/// A connection's TLS: the mode and the rustls connector tokio-postgres opens TLS with. Cheap to
/// clone (the config is shared).
#[derive(Clone)]
pub struct PgTls {
    mode: SslMode,
    connector: MakeRustlsConnect,
}

impl fmt::Debug for PgTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PgTls({})", self.mode.as_str())
    }
}

impl PgTls {
    /// The TLS of a connection with `options` and, for an analytical database, its
    /// `server_cert` (PEM; empty counts as none). Reads an `sslrootcert` file now.
    pub fn new(options: &TlsOptions, server_cert: Option<&str>) -> Result<PgTls, TlsError> {
        let server_cert = server_cert.filter(|c| !c.trim().is_empty());
        let system = options.sslrootcert.as_deref() == Some("system");
        let default_mode = if server_cert.is_some() || system {
            SslMode::VerifyFull
        } else {
            SslMode::Prefer
        };
        let mode = options.sslmode.unwrap_or(default_mode);
        if system && mode != SslMode::VerifyFull && server_cert.is_none() {
            return Err(TlsError(format!(
                "weak sslmode \"{}\" may not be used with sslrootcert=system (use \
                 \"verify-full\")",
                mode.as_str()
            )));
        }
        // Superset hands server_cert to libpq as sslrootcert, over the URI's: it wins here too.
        let given = match (server_cert, options.sslrootcert.as_deref()) {
            (Some(pem), _) => Some(roots_from_pem(pem.as_bytes(), "server_cert")?),
            (None, Some("system")) => Some(public_roots()),
            (None, Some(path)) => Some(roots_from_file(path)?),
            (None, None) => None,
        };
        let check = match mode {
            SslMode::Disable | SslMode::Allow | SslMode::Prefer => Check::Nothing,
            SslMode::Require => given.map_or(Check::Nothing, |r| Check::Chain(Arc::new(r))),
            SslMode::VerifyCa => Check::Chain(Arc::new(given.unwrap_or_else(public_roots))),
            SslMode::VerifyFull => Check::Full(Arc::new(given.unwrap_or_else(public_roots))),
        };
        let verifier: Arc<dyn ServerCertVerifier> = match check {
            Check::Nothing => Arc::new(AnyCertificate),
            Check::Chain(roots) => Arc::new(ChainOnly { roots }),
            Check::Full(roots) => {
                WebPkiServerVerifier::builder_with_provider(roots, PROVIDER.clone())
                    .build()
                    .map_err(|e| TlsError(format!("TLS setup failed: {e}")))?
            }
        };
        let config = ClientConfig::builder_with_provider(PROVIDER.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError(format!("TLS setup failed: {e}")))?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(PgTls {
            mode,
            connector: MakeRustlsConnect::new(config),
        })
    }

    /// The effective mode.
    pub fn mode(&self) -> SslMode {
        self.mode
    }

    /// Sets `config`'s TLS negotiation to this mode (tokio-postgres knows three: the checks of
    /// the stricter ones are in the verifier).
    pub fn configure(&self, config: &mut tokio_postgres::Config) {
        config.ssl_mode(match self.mode {
            SslMode::Disable => WireMode::Disable,
            SslMode::Allow | SslMode::Prefer => WireMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => WireMode::Require,
        });
    }
}

impl<S> MakeTlsConnect<S> for PgTls
where
    MakeRustlsConnect: MakeTlsConnect<S>,
{
    type Stream = <MakeRustlsConnect as MakeTlsConnect<S>>::Stream;
    type TlsConnect = <MakeRustlsConnect as MakeTlsConnect<S>>::TlsConnect;
    type Error = <MakeRustlsConnect as MakeTlsConnect<S>>::Error;

    fn make_tls_connect(&mut self, domain: &str) -> Result<Self::TlsConnect, Self::Error> {
        self.connector.make_tls_connect(domain)
    }
}

/// `prefer`/`require` without roots: libpq's encryption without authentication. The handshake's
/// signatures are still verified, so the server holds the key of the certificate it sent.
#[derive(Debug)]
struct AnyCertificate;

/// `verify-ca`: the chain must reach a trusted root; the name is not compared (libpq's meaning).
#[derive(Debug)]
struct ChainOnly {
    roots: Arc<RootCertStore>,
}

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, RustlsError> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, RustlsError> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &PROVIDER.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, RustlsError> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &PROVIDER.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        PROVIDER
            .signature_verification_algorithms
            .supported_schemes()
    }
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, RustlsError> {
        let cert = ParsedCertificate::try_from(end_entity)?;
        verify_server_cert_signed_by_trust_anchor(
            &cert,
            &self.roots,
            intermediates,
            now,
            PROVIDER.signature_verification_algorithms.all,
        )?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, RustlsError> {
        AnyCertificate.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, RustlsError> {
        AnyCertificate.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        AnyCertificate.supported_verify_schemes()
    }
}

/// The TLS failure behind a tokio-postgres error, worded as libpq words it (which is what
/// Superset shows: "SSL error: certificate verify failed"), or `None` when TLS is not the
/// cause.
pub fn describe(error: &tokio_postgres::Error) -> Option<String> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        let rustls = cause.downcast_ref::<RustlsError>().or_else(|| {
            cause
                .downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<RustlsError>())
        });
        if let Some(e) = rustls {
            return Some(rustls_message(e));
        }
        source = cause.source();
    }
    // tokio-postgres' own TLS failures (its error kinds are private; its Display names them).
    if error.to_string() == "error performing TLS handshake" {
        let cause = std::error::Error::source(error).map(ToString::to_string);
        return Some(match cause.as_deref() {
            Some("server does not support TLS") => {
                "server does not support SSL, but SSL was required".to_owned()
            }
            Some(cause) => format!("SSL error: {cause}"),
            None => "SSL error".to_owned(),
        });
    }
    None
}

fn rustls_message(error: &RustlsError) -> String {
    match error {
        RustlsError::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => {
            let detail = match error {
                RustlsError::InvalidCertificate(CertificateError::NotValidForNameContext {
                    expected,
                    ..
                }) => format!(" \"{}\"", expected.to_str()),
                _ => String::new(),
            };
            format!("SSL error: server certificate does not match host name{detail} ({error})")
        }
        RustlsError::InvalidCertificate(CertificateError::UnknownIssuer) => {
            "SSL error: certificate verify failed: the server's certificate is not signed by a \
             trusted root certificate (wrong sslrootcert or server_cert?)"
                .to_owned()
        }
        RustlsError::InvalidCertificate(e) => {
            format!("SSL error: certificate verify failed: {e}")
        }
        other => format!("SSL error: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_as_libpq_spells_them() {
        for m in [
            "disable",
            "allow",
            "prefer",
            "require",
            "verify-ca",
            "verify-full",
        ] {
            assert_eq!(SslMode::parse(m).expect(m).as_str(), m);
        }
        let e = SslMode::parse("verify_full").expect_err("underscore");
        assert!(e.to_string().contains("invalid sslmode value"), "{e}");
    }

    #[test]
    fn split_url_takes_only_tls_options() {
        let (rest, o) = split_url(
            "postgresql://u:p%3Fw@h:5/db?application_name=x&sslmode=verify-full&sslrootcert=%2Ftmp%2Fca%20b.pem",
        )
        .expect("split");
        assert_eq!(rest, "postgresql://u:p%3Fw@h:5/db?application_name=x");
        assert_eq!(o.sslmode, Some(SslMode::VerifyFull));
        assert_eq!(o.sslrootcert.as_deref(), Some("/tmp/ca b.pem"));
        let (rest, o) = split_url("postgresql://u@h/db?sslmode=disable").expect("split");
        assert_eq!(rest, "postgresql://u@h/db");
        assert_eq!(o.sslmode, Some(SslMode::Disable));
        let (rest, o) = split_url("postgresql://u@h/db").expect("split");
        assert_eq!(
            (rest.as_str(), o),
            ("postgresql://u@h/db", TlsOptions::default())
        );
    }

    #[test]
    fn client_certificates_and_crls_are_refused_not_ignored() {
        for key in ["sslcert", "sslkey", "sslcrl"] {
            let e = split_url(&format!("postgresql://u:secret@h/db?{key}=/x"))
                .expect_err(key)
                .to_string();
            assert!(e.contains(key) && !e.contains("secret"), "{e}");
        }
    }

    #[test]
    fn url_config_errors_never_show_the_url() {
        let e = url_config("postgresql://u:hunter2@h/db?sslmode=nope").expect_err("mode");
        assert!(!e.to_string().contains("hunter2"), "{e}");
        let e = url_config("postgresql://u:hunter2@h/db?sslrootcert=/no/such/file.pem")
            .expect_err("missing file");
        assert!(e.to_string().contains("/no/such/file.pem"), "{e}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }

    #[test]
    fn default_modes_follow_libpq_and_superset() {
        let none = TlsOptions::default();
        assert_eq!(
            PgTls::new(&none, None).expect("tls").mode(),
            SslMode::Prefer
        );
        assert_eq!(
            PgTls::new(&none, Some("  ")).expect("tls").mode(),
            SslMode::Prefer
        );
        let system = TlsOptions {
            sslmode: None,
            sslrootcert: Some("system".into()),
        };
        assert_eq!(
            PgTls::new(&system, None).expect("tls").mode(),
            SslMode::VerifyFull
        );
        let weak = TlsOptions {
            sslmode: Some(SslMode::Require),
            sslrootcert: Some("system".into()),
        };
        assert!(PgTls::new(&weak, None).is_err());
        let mut cfg = tokio_postgres::Config::new();
        let full = TlsOptions {
            sslmode: Some(SslMode::VerifyCa),
            sslrootcert: None,
        };
        PgTls::new(&full, None).expect("tls").configure(&mut cfg);
        assert_eq!(cfg.get_ssl_mode(), WireMode::Require);
    }

    #[test]
    fn server_certs_must_be_pem_certificates() {
        for bad in [
            "",
            "not a certificate",
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        ] {
            let e = validate_server_cert(bad).expect_err(bad);
            assert_eq!(e.to_string(), "server_cert: Invalid certificate");
        }
        assert!(PgTls::new(&TlsOptions::default(), Some("garbage")).is_err());
    }

    #[test]
    fn device_files_are_not_read_as_roots() {
        let e = roots_from_file("/dev/zero").expect_err("device");
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
}
