//! Guest tokens: how a page embedding a dashboard (Superset's `@superset-ui/embedded-sdk`)
//! authenticates its visitors (Superset's `create_guest_access_token`,
//! `get_guest_user_from_request`).
//!
//! A trusted backend with `can_grant_guest_token` mints a short-lived HS256 token naming the
//! dashboards its visitor may see and row-level clauses to add; the embedded app sends it in
//! `X-GuestToken` (configurable) on every call. The token has its own secret and audience, so
//! neither a login token nor a token for another deployment passes as one.

use chrono::Utc;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Error;

/// `user` of a token: who the visitor is, for display only.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct GuestUser {
    /// Defaults to `guest_user`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Defaults to `Guest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_name: Option<String>,
    /// Defaults to `User`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_name: Option<String>,
}

/// One resource a token grants: `{"type": "dashboard", "id": <dashboard id or embedded uuid>}`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct GuestResource {
    /// Only `dashboard` exists.
    #[serde(rename = "type")]
    pub kind: String,
    /// The dashboard's id or its embedded configuration's uuid, as a string.
    #[serde(deserialize_with = "string_or_number")]
    pub id: String,
}

/// A row-level clause of a token: on one dataset, or on every dataset when `dataset` is absent.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct GuestRls {
    /// The dataset id it filters; every dataset when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<i64>,
    /// The SQL predicate.
    pub clause: String,
}

/// The claims Superset writes (`user`, `resources`, `rls_rules`, `iat`, `exp`, `aud`,
/// `type: guest`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GuestClaims {
    /// Who the visitor is.
    pub user: GuestUser,
    /// What they may see.
    pub resources: Vec<GuestResource>,
    /// Row-level clauses added to the datasets' rules.
    pub rls_rules: Vec<GuestRls>,
    /// Issued at (epoch seconds; Superset writes a float).
    pub iat: f64,
    /// Expiry (epoch seconds; Superset writes a float).
    pub exp: f64,
    /// The deployment the token is for.
    pub aud: String,
    /// Always `guest`.
    #[serde(rename = "type")]
    pub token_type: String,
}

/// A JSON string or number as a string (Superset's schema takes `id` as a string; clients send
/// both).
fn string_or_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(serde::de::Error::custom("Not a valid string.")),
    }
}

/// Signs and verifies guest tokens.
#[derive(Clone)]
pub struct GuestKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    audience: String,
    ttl_secs: f64,
}

impl GuestKeys {
    /// Keys from the guest secret, the audience and the lifetime.
    pub fn new(secret: &[u8], audience: &str, ttl_secs: u64) -> GuestKeys {
        GuestKeys {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            audience: audience.to_owned(),
            ttl_secs: ttl_secs as f64,
        }
    }

    /// Mints a token for `user` granting `resources` with `rls` added.
    pub fn issue(
        &self,
        user: GuestUser,
        resources: Vec<GuestResource>,
        rls: Vec<GuestRls>,
    ) -> Result<String, Error> {
        let now = Utc::now().timestamp() as f64;
        let claims = GuestClaims {
            user,
            resources,
            rls_rules: rls,
            iat: now,
            exp: now + self.ttl_secs,
            aud: self.audience.clone(),
            token_type: "guest".into(),
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding).map_err(|e| {
            Error::Internal {
                message: format!("cannot sign guest token: {e}"),
            }
        })
    }

    /// Verifies signature, audience, expiry and type (Superset's `parse_jwt_guest_token` and
    /// the claim checks of `get_guest_user_from_request`). Every failure is the same
    /// [`Error::InvalidGuestToken`] (Superset: an anonymous caller, 401): a caller learns
    /// nothing about which check failed; the log says.
    pub fn verify(&self, token: &str) -> Result<GuestClaims, Error> {
        let refused = |why: &str| {
            tracing::info!(message = "Invalid guest token.", reason = why);
            Error::InvalidGuestToken
        };
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 0;
        // Superset writes float times, which jsonwebtoken's own check does not read: checked
        // below.
        validation.validate_exp = false;
        validation.set_required_spec_claims(&["aud"]);
        validation.set_audience(&[&self.audience]);
        let data = jsonwebtoken::decode::<GuestClaims>(token, &self.decoding, &validation)
            .map_err(|e| refused(&e.to_string()))?;
        let claims = data.claims;
        if claims.token_type != "guest" {
            return Err(refused("not a guest token"));
        }
        // NaN never passes.
        let now = Utc::now().timestamp() as f64;
        if claims.exp.is_nan() || claims.exp <= now {
            return Err(refused("expired"));
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> GuestKeys {
        GuestKeys::new(b"secret", "liteset", 300)
    }

    #[test]
    fn a_token_round_trips_and_keeps_its_grants() {
        let k = keys();
        let t = k
            .issue(
                GuestUser::default(),
                vec![GuestResource {
                    kind: "dashboard".into(),
                    id: "7".into(),
                }],
                vec![GuestRls {
                    dataset: None,
                    clause: "a = 1".into(),
                }],
            )
            .unwrap();
        let c = k.verify(&t).unwrap();
        assert_eq!(c.resources[0].id, "7");
        assert_eq!(c.rls_rules[0].clause, "a = 1");
    }

    #[test]
    fn other_secrets_audiences_and_tampering_are_refused() {
        let t = keys().issue(GuestUser::default(), vec![], vec![]).unwrap();
        assert!(GuestKeys::new(b"other", "liteset", 300).verify(&t).is_err());
        assert!(
            GuestKeys::new(b"secret", "elsewhere", 300)
                .verify(&t)
                .is_err()
        );
        let mut parts: Vec<String> = t.split('.').map(str::to_owned).collect();
        parts[2] = parts[2].chars().rev().collect();
        assert!(keys().verify(&parts.join(".")).is_err());
        let expired = GuestKeys::new(b"secret", "liteset", 0);
        let t = expired.issue(GuestUser::default(), vec![], vec![]).unwrap();
        assert!(matches!(expired.verify(&t), Err(Error::InvalidGuestToken)));
    }
}
