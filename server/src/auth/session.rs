//! The `session` cookie and CSRF tokens.
//!
//! Like Flask's, the session is a signed (not encrypted) cookie: it carries the logged-in user
//! id (for browser logins) and the raw CSRF secret. A CSRF token handed to clients is that raw
//! secret signed with a timestamp, as Flask-WTF's `URLSafeTimedSerializer` does, so a request
//! passes only when the header's token and the cookie's secret belong together and are fresh.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use chrono::Utc;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Name of the cookie, as Flask names it.
pub const SESSION_COOKIE: &str = "session";

/// What the session cookie holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionData {
    /// User logged in through the browser form; `None` for a CSRF-only session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<i64>,
    /// Raw CSRF secret; tokens are this value signed with a timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csrf: Option<String>,
    /// When the session was created (epoch seconds).
    pub iat: i64,
}

/// Why a CSRF check failed; the texts are Flask-WTF's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CsrfError {
    /// No token in header or form.
    #[error("The CSRF token is missing.")]
    TokenMissing,
    /// No CSRF secret in the session cookie.
    #[error("The CSRF session token is missing.")]
    SessionTokenMissing,
    /// Signature did not verify.
    #[error("The CSRF token is invalid.")]
    Invalid,
    /// Older than the configured lifetime.
    #[error("The CSRF token has expired.")]
    Expired,
    /// Token and session secret belong to different sessions.
    #[error("The CSRF tokens do not match.")]
    Mismatch,
}

/// Keys and lifetimes for cookies and CSRF tokens, derived from the secret key.
#[derive(Clone)]
pub struct SessionKeys {
    session_key: [u8; 32],
    csrf_key: [u8; 32],
    session_ttl_secs: i64,
    csrf_ttl_secs: i64,
}

/// A purpose-specific key, so that a value signed for one use never verifies for another.
fn derive(secret: &[u8], purpose: &str) -> [u8; 32] {
    let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC accepts any key length");
    mac.update(purpose.as_bytes());
    mac.finalize().into_bytes().into()
}

fn sign(key: &[u8; 32], data: &[u8]) -> Vec<u8> {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC accepts any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

fn verify(key: &[u8; 32], data: &[u8], sig: &[u8]) -> bool {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC accepts any key length");
    mac.update(data);
    mac.verify_slice(sig).is_ok()
}

impl SessionKeys {
    /// Derives the keys from the server secret.
    pub fn new(secret: &[u8], session_ttl_secs: u64, csrf_ttl_secs: u64) -> SessionKeys {
        SessionKeys {
            session_key: derive(secret, "liteset.session.cookie"),
            csrf_key: derive(secret, "liteset.wtf-csrf-token"),
            session_ttl_secs: i64::try_from(session_ttl_secs).unwrap_or(i64::MAX / 2),
            csrf_ttl_secs: i64::try_from(csrf_ttl_secs).unwrap_or(i64::MAX / 2),
        }
    }

    /// Session lifetime, for the cookie's Max-Age.
    pub fn session_ttl_secs(&self) -> i64 {
        self.session_ttl_secs
    }

    /// Serialises and signs a session for the cookie.
    pub fn encode_session(&self, data: &SessionData) -> String {
        let payload = B64.encode(serde_json::to_vec(data).unwrap_or_default());
        let sig = B64.encode(sign(&self.session_key, payload.as_bytes()));
        format!("{payload}.{sig}")
    }

    /// Reads a cookie value; a forged, malformed or expired one is treated as no session.
    pub fn decode_session(&self, cookie: &str) -> Option<SessionData> {
        let (payload, sig) = cookie.split_once('.')?;
        let sig = B64.decode(sig).ok()?;
        if !verify(&self.session_key, payload.as_bytes(), &sig) {
            return None;
        }
        let data: SessionData = serde_json::from_slice(&B64.decode(payload).ok()?).ok()?;
        let age = Utc::now().timestamp() - data.iat;
        (0..=self.session_ttl_secs).contains(&age).then_some(data)
    }

    /// A fresh random CSRF secret for a session.
    pub fn new_csrf_secret() -> String {
        hex::encode(rand::random::<[u8; 20]>())
    }

    /// The token clients send back: the session's secret, timestamped and signed.
    pub fn csrf_token(&self, secret: &str) -> String {
        let ts = Utc::now().timestamp().to_string();
        let body = format!("{}.{}", B64.encode(secret), B64.encode(&ts));
        let sig = B64.encode(sign(&self.csrf_key, body.as_bytes()));
        format!("{body}.{sig}")
    }

    /// Checks a token against the session's secret.
    pub fn check_csrf(
        &self,
        token: Option<&str>,
        session: Option<&SessionData>,
    ) -> Result<(), CsrfError> {
        let token = token
            .filter(|t| !t.is_empty())
            .ok_or(CsrfError::TokenMissing)?;
        let secret = session
            .and_then(|s| s.csrf.as_deref())
            .ok_or(CsrfError::SessionTokenMissing)?;
        let mut parts = token.rsplitn(2, '.');
        let (Some(sig), Some(body)) = (parts.next(), parts.next()) else {
            return Err(CsrfError::Invalid);
        };
        let sig = B64.decode(sig).map_err(|_| CsrfError::Invalid)?;
        if !verify(&self.csrf_key, body.as_bytes(), &sig) {
            return Err(CsrfError::Invalid);
        }
        let (raw, ts) = body.split_once('.').ok_or(CsrfError::Invalid)?;
        let raw = B64.decode(raw).map_err(|_| CsrfError::Invalid)?;
        let ts: i64 = String::from_utf8(B64.decode(ts).map_err(|_| CsrfError::Invalid)?)
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or(CsrfError::Invalid)?;
        if Utc::now().timestamp() - ts > self.csrf_ttl_secs {
            return Err(CsrfError::Expired);
        }
        if subtle::ConstantTimeEq::ct_eq(raw.as_slice(), secret.as_bytes()).into() {
            Ok(())
        } else {
            Err(CsrfError::Mismatch)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> SessionKeys {
        SessionKeys::new(b"test-secret-test-secret-test-secret", 3600, 3600)
    }

    fn session_with_csrf() -> SessionData {
        SessionData {
            uid: Some(7),
            csrf: Some(SessionKeys::new_csrf_secret()),
            iat: Utc::now().timestamp(),
        }
    }

    #[test]
    fn session_round_trips() {
        let k = keys();
        let s = session_with_csrf();
        assert_eq!(k.decode_session(&k.encode_session(&s)), Some(s));
    }

    #[test]
    fn forged_session_is_ignored() {
        let k = keys();
        let cookie = k.encode_session(&session_with_csrf());
        let (payload, sig) = cookie.split_once('.').unwrap();
        let forged = B64.encode(br#"{"uid":1,"iat":0}"#);
        assert_eq!(k.decode_session(&format!("{forged}.{sig}")), None);
        assert_eq!(k.decode_session(payload), None);
    }

    #[test]
    fn csrf_token_matches_its_own_session_only() {
        let k = keys();
        let s = session_with_csrf();
        let t = k.csrf_token(s.csrf.as_deref().unwrap());
        assert_eq!(k.check_csrf(Some(&t), Some(&s)), Ok(()));
        let other = session_with_csrf();
        assert_eq!(
            k.check_csrf(Some(&t), Some(&other)),
            Err(CsrfError::Mismatch)
        );
        assert_eq!(k.check_csrf(None, Some(&s)), Err(CsrfError::TokenMissing));
        assert_eq!(
            k.check_csrf(Some(&t), None),
            Err(CsrfError::SessionTokenMissing)
        );
        assert_eq!(
            k.check_csrf(Some("a.b.c"), Some(&s)),
            Err(CsrfError::Invalid)
        );
    }

    #[test]
    fn old_csrf_token_has_expired() {
        let k = SessionKeys::new(b"test-secret-test-secret-test-secret", 3600, 0);
        let s = session_with_csrf();
        let body = format!(
            "{}.{}",
            B64.encode(s.csrf.as_deref().unwrap()),
            B64.encode("1000")
        );
        let sig = B64.encode(sign(&k.csrf_key, body.as_bytes()));
        let t = format!("{body}.{sig}");
        assert_eq!(k.check_csrf(Some(&t), Some(&s)), Err(CsrfError::Expired));
    }
}
