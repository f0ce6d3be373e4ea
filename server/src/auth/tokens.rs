//! JWT access and refresh tokens with flask-jwt-extended's claims and error texts, so that
//! Superset clients (which key their refresh logic on those texts) work unchanged.

use chrono::Utc;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use super::Error;

/// Whether a token grants API access or only the right to mint a new access token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TokenType {
    /// Sent as Bearer on every API call.
    Access,
    /// Accepted only by `POST /security/refresh`.
    Refresh,
}

/// The claims flask-jwt-extended writes, in its names.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Claims {
    /// True for tokens minted by a password login, false for refreshed ones.
    pub fresh: bool,
    /// Issued at (epoch seconds).
    pub iat: i64,
    /// Unique token id.
    pub jti: String,
    /// Access or refresh.
    #[serde(rename = "type")]
    pub token_type: TokenType,
    /// The user id as a string (PyJWT ≥ 2.10 refuses integers).
    #[serde(default)]
    pub sub: serde_json::Value,
    /// Not before (epoch seconds).
    pub nbf: i64,
    /// Double-submit CSRF value flask-jwt puts in every token.
    pub csrf: String,
    /// Expiry (epoch seconds).
    pub exp: i64,
}

/// Signs and verifies tokens with HS256 and the server's secret key, as Superset does
/// (`JWT_SECRET_KEY` falls back to `SECRET_KEY`).
#[derive(Clone)]
pub struct TokenKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    access_ttl_secs: i64,
    refresh_ttl_secs: i64,
    /// Tokens whose signature and claims were checked: token → (user id, type, expiry). A
    /// client sends the same token on every call, and checking it costs more than the rest of
    /// authentication together. Only tokens that passed [`TokenKeys::verify`] enter, and a hit
    /// is still refused once its expiry passes.
    verified: moka::sync::Cache<Box<str>, (i64, TokenType, i64)>,
}

impl TokenKeys {
    /// Keys from the secret and the configured lifetimes.
    pub fn new(secret: &[u8], access_ttl_secs: u64, refresh_ttl_secs: u64) -> TokenKeys {
        TokenKeys {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            access_ttl_secs: i64::try_from(access_ttl_secs).unwrap_or(i64::MAX / 2),
            refresh_ttl_secs: i64::try_from(refresh_ttl_secs).unwrap_or(i64::MAX / 2),
            verified: moka::sync::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(std::time::Duration::from_secs(600))
                .build(),
        }
    }

    /// Mints a token for `user_id`.
    pub fn issue(&self, user_id: i64, token_type: TokenType, fresh: bool) -> Result<String, Error> {
        let now = Utc::now().timestamp();
        let ttl = match token_type {
            TokenType::Access => self.access_ttl_secs,
            TokenType::Refresh => self.refresh_ttl_secs,
        };
        let claims = Claims {
            fresh,
            iat: now,
            jti: uuid::Uuid::new_v4().to_string(),
            token_type,
            sub: serde_json::Value::String(user_id.to_string()),
            nbf: now,
            csrf: uuid::Uuid::new_v4().to_string(),
            exp: now.saturating_add(ttl),
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding).map_err(|e| {
            Error::Internal {
                message: format!("cannot sign token: {e}"),
            }
        })
    }

    /// Verifies a token and returns the user id it names, checking that it has `expected` type.
    pub fn verify(&self, token: &str, expected: TokenType) -> Result<i64, Error> {
        if let Some((uid, kind, exp)) = self.verified.get(token)
            && kind == expected
            && exp > Utc::now().timestamp()
        {
            return Ok(uid);
        }
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 0;
        validation.validate_nbf = true;
        // `sub` is checked below: PyJWT refuses a non-string subject with its own message,
        // which jsonwebtoken would report as a missing claim.
        validation.set_required_spec_claims(&["exp"]);
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &validation)
            .map_err(|e| token_error(e.kind(), token))?;
        let claims = data.claims;
        if claims.token_type != expected {
            return Err(Error::Token {
                expired: false,
                msg: match expected {
                    TokenType::Refresh => "Only refresh tokens are allowed",
                    TokenType::Access => "Only non-refresh tokens are allowed",
                }
                .into(),
            });
        }
        let sub = match &claims.sub {
            serde_json::Value::String(s) => s,
            serde_json::Value::Null => {
                return Err(Error::Token {
                    expired: false,
                    msg: "Missing claim: sub".into(),
                });
            }
            _ => {
                return Err(Error::Token {
                    expired: false,
                    msg: "Subject must be a string".into(),
                });
            }
        };
        let uid = sub.parse::<i64>().map_err(|_| Error::UserNotLoaded {
            id: sub.chars().take(64).collect(),
        })?;
        self.verified
            .insert(token.into(), (uid, claims.token_type, claims.exp));
        Ok(uid)
    }
}

/// flask-jwt-extended / PyJWT texts for each failure.
fn token_error(kind: &ErrorKind, token: &str) -> Error {
    let invalid = |msg: &str| Error::Token {
        expired: false,
        msg: msg.into(),
    };
    match kind {
        ErrorKind::ExpiredSignature => Error::Token {
            expired: true,
            msg: "Token has expired".into(),
        },
        ErrorKind::InvalidSignature => invalid("Signature verification failed"),
        ErrorKind::ImmatureSignature => invalid("The token is not yet valid (nbf)"),
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => {
            invalid("The specified alg value is not allowed")
        }
        ErrorKind::MissingRequiredClaim(c) => {
            invalid(&format!("Token is missing the \"{c}\" claim"))
        }
        _ if token.split('.').count() < 3 => invalid("Not enough segments"),
        ErrorKind::Json(_) => invalid("Invalid payload string"),
        _ => invalid("Invalid token"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> TokenKeys {
        TokenKeys::new(b"0123456789abcdef0123456789abcdef", 900, 3600)
    }

    #[test]
    fn issued_access_token_verifies_to_its_user() {
        let k = keys();
        let t = k.issue(42, TokenType::Access, true).unwrap();
        assert_eq!(k.verify(&t, TokenType::Access).unwrap(), 42);
    }

    #[test]
    fn refresh_token_is_refused_where_access_is_expected() {
        let k = keys();
        let t = k.issue(1, TokenType::Refresh, false).unwrap();
        let Err(Error::Token { expired, msg }) = k.verify(&t, TokenType::Access) else {
            panic!("expected a token error");
        };
        assert_eq!(
            (expired, msg.as_str()),
            (false, "Only non-refresh tokens are allowed")
        );
    }

    #[test]
    fn expired_token_says_token_has_expired() {
        let k = TokenKeys::new(b"0123456789abcdef0123456789abcdef", 0, 0);
        let mut claims: Claims = serde_json::from_value(serde_json::json!({
            "fresh": true, "iat": 1, "jti": "x", "type": "access", "sub": "1",
            "nbf": 1, "csrf": "y", "exp": 2
        }))
        .unwrap();
        claims.exp = 2;
        let t = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &k.encoding).unwrap();
        let Err(Error::Token { expired, msg }) = k.verify(&t, TokenType::Access) else {
            panic!("expected a token error");
        };
        assert_eq!((expired, msg.as_str()), (true, "Token has expired"));
    }

    #[test]
    fn tampered_token_fails_signature_check() {
        let k = keys();
        let t = k.issue(1, TokenType::Access, true).unwrap();
        let other = TokenKeys::new(b"another-secret-another-secret-xx", 900, 900);
        let Err(Error::Token { expired, msg }) = other.verify(&t, TokenType::Access) else {
            panic!("expected a token error");
        };
        assert_eq!(
            (expired, msg.as_str()),
            (false, "Signature verification failed")
        );
    }

    #[test]
    fn garbage_is_not_enough_segments() {
        let Err(Error::Token { expired, msg }) = keys().verify("abc", TokenType::Access) else {
            panic!("expected a token error");
        };
        assert_eq!((expired, msg.as_str()), (false, "Not enough segments"));
    }

    #[test]
    fn integer_subject_is_refused() {
        let k = keys();
        let claims = serde_json::json!({
            "fresh": true, "iat": 1, "jti": "x", "type": "access", "sub": 1,
            "nbf": 1, "csrf": "y", "exp": 4_000_000_000i64
        });
        let t = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &k.encoding).unwrap();
        let Err(Error::Token { msg, .. }) = k.verify(&t, TokenType::Access) else {
            panic!("expected a token error");
        };
        assert_eq!(msg, "Subject must be a string");
    }
}
