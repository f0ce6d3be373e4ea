//! Authentication (who is calling) and authorization (may they do this).
//!
//! Owns password verification, tokens, sessions, CSRF, the failed-login limit, the built-in
//! role catalog and the one [`AuthService::authorize`] check every endpoint calls. It must not
//! know HTTP: the api layer extracts credentials from requests and renders [`Error`]s.

pub mod catalog;
pub mod guest;
mod limiter;
pub mod password;
pub mod session;
pub mod tokens;

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use moka::future::Cache;
use sha2::Digest;

use crate::config::{AuthConfig, EmbeddedConfig};
use crate::store::{self, NewUser, Role, Store, User};
pub use guest::{GuestKeys, GuestResource, GuestRls, GuestUser};
pub use limiter::{LoginLimiter, LoginQueue, LoginSubject};
pub use session::{CsrfError, SessionData, SessionKeys};
pub use tokens::{TokenKeys, TokenType};

/// Auth failures. Each carries the exact text Superset (FAB, flask-jwt) answers with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No credentials where the endpoint needs them (flask-jwt's 401).
    #[error("Missing Authorization Header")]
    MissingCredentials,
    /// The Authorization header is not `Bearer <token>`.
    #[error("{msg}")]
    BadAuthorizationHeader {
        /// flask-jwt's text.
        msg: &'static str,
    },
    /// A token failed verification: expired, or invalid (flask-jwt answers them differently).
    #[error("{msg}")]
    Token {
        /// Whether the token was valid but past its `exp`.
        expired: bool,
        /// flask-jwt's text.
        msg: String,
    },
    /// The token names a user that does not exist or is inactive.
    #[error("Error loading the user {id}")]
    UserNotLoaded {
        /// The `sub` claim.
        id: String,
    },
    /// Wrong username or password, or an inactive user.
    #[error("Not authorized")]
    BadCredentials,
    /// A guest token that is expired, tampered with, for another audience or no guest token
    /// (Superset treats its caller as anonymous).
    #[error("Not authorized")]
    InvalidGuestToken,
    /// Authenticated but lacking the permission.
    #[error("Forbidden")]
    Forbidden,
    /// Too many failed logins for this username and address.
    #[error("Too many failed login attempts; retry in {retry_after_secs} seconds")]
    TooManyAttempts {
        /// Seconds until the window resets.
        retry_after_secs: u64,
    },
    /// Password verification is saturated (its queue is full, or the wait for it expired).
    #[error("The server is busy; retry shortly")]
    Busy {
        /// Seconds to wait before retrying.
        retry_after_secs: u64,
    },
    /// CSRF check failed.
    #[error(transparent)]
    Csrf(#[from] CsrfError),
    /// Metadata store failure.
    #[error(transparent)]
    Store(#[from] store::Error),
    /// Anything else that is our fault.
    #[error("{message}")]
    Internal {
        /// Description for the log, never for the client.
        message: String,
    },
}

impl From<password::PasswordError> for Error {
    fn from(e: password::PasswordError) -> Self {
        match e {
            // Every hashing worker's queue place is taken: a load condition, not a fault.
            password::PasswordError::Unavailable => Error::Busy {
                retry_after_secs: 1,
            },
            e => Error::Internal {
                message: e.to_string(),
            },
        }
    }
}

/// An authenticated user with everything authorization needs, cached briefly.
#[derive(Clone, Debug)]
pub struct CurrentUser {
    /// The stored user.
    pub user: User,
    /// Granted roles.
    pub roles: Vec<Role>,
    /// Union of the roles' (permission, view_menu) pairs.
    pub permissions: HashSet<(String, String)>,
    /// [`CurrentUser::grants`], derived once: the user is cached across requests and most
    /// requests ask several times.
    grants: std::sync::OnceLock<crate::store::catalog::Grants>,
    /// Set for a guest-token caller (an embedded dashboard's visitor): what the token grants.
    /// Such a user is no stored user (its `user.id` is 0) and reaches only the token's
    /// dashboards, whatever its role holds.
    pub guest: Option<Arc<Guest>>,
}

/// What a verified guest token grants.
#[derive(Debug)]
pub struct Guest {
    /// The token's row-level clauses.
    pub rls: Vec<GuestRls>,
    /// The dashboards, charts, datasets and native filters it reaches.
    pub reach: Arc<crate::store::catalog::GuestReach>,
    /// A fingerprint of the token, to keep one visitor's browser state apart from another's.
    pub key: String,
}

impl CurrentUser {
    /// Whether any role grants `(permission, view_menu)`.
    pub fn has(&self, permission: &str, view_menu: &str) -> bool {
        // A borrowed-pair lookup would need a custom key type; the allocation is two short
        // strings and runs once per request.
        self.permissions
            .contains(&(permission.to_owned(), view_menu.to_owned()))
    }

    /// Whether the user holds the Admin role.
    pub fn is_admin(&self) -> bool {
        self.guest.is_none() && self.roles.iter().any(|r| r.name == catalog::ADMIN)
    }

    /// The user's data-access grants (Superset's `all_*_access`, `database_access`,
    /// `schema_access` and `datasource_access` permissions) for scoping catalog lists.
    pub fn grants(&self) -> &crate::store::catalog::Grants {
        self.grants.get_or_init(|| self.derive_grants())
    }

    fn derive_grants(&self) -> crate::store::catalog::Grants {
        if let Some(g) = &self.guest {
            return crate::store::catalog::Grants {
                guest: Some(g.reach.clone()),
                ..Default::default()
            };
        }
        let views = |perm: &str| -> Vec<String> {
            self.permissions
                .iter()
                .filter(|(p, _)| p == perm)
                .map(|(_, v)| v.clone())
                .collect()
        };
        crate::store::catalog::Grants {
            all: self.has("all_datasource_access", "all_datasource_access")
                || self.has("all_database_access", "all_database_access"),
            // `[name].(id:N)`: the id is authoritative, the name is for people.
            database_ids: views("database_access")
                .iter()
                .filter_map(|v| {
                    v.rsplit_once("(id:")
                        .and_then(|(_, rest)| rest.strip_suffix(')'))
                        .and_then(|id| id.parse().ok())
                })
                .collect(),
            schema_perms: views("schema_access"),
            datasource_perms: views("datasource_access"),
            user_id: Some(self.user.id),
            guest: None,
        }
    }
}

/// Who is making a request, as established from its credentials.
#[derive(Clone, Debug)]
pub enum Principal {
    /// A valid session cookie or access token.
    User(Arc<CurrentUser>),
    /// No credentials at all.
    Anonymous,
    /// Credentials were present but invalid; reported only if the endpoint is not public.
    Rejected(Arc<Error>),
}

impl Principal {
    /// The user, if authenticated.
    pub fn user(&self) -> Option<&Arc<CurrentUser>> {
        match self {
            Principal::User(u) => Some(u),
            _ => None,
        }
    }
}

/// Tokens returned by a successful API login.
#[derive(Clone, Debug)]
pub struct LoginTokens {
    /// Access token.
    pub access_token: String,
    /// Refresh token, when requested.
    pub refresh_token: Option<String>,
}

/// Everything auth needs at run time. One per process, shared by handlers.
pub struct AuthService {
    store: Store,
    tokens: TokenKeys,
    sessions: SessionKeys,
    limiter: LoginLimiter,
    queue: LoginQueue,
    users: Cache<i64, Arc<CurrentUser>>,
    public: Cache<(), Arc<HashSet<(String, String)>>>,
    public_role_like: Option<String>,
    guest_keys: GuestKeys,
    guest_role: String,
    /// Verified guest tokens → their principal, for the permission cache's lifetime (a
    /// token's expiry is checked again on every use).
    guests: Cache<Box<str>, (Arc<CurrentUser>, f64)>,
}

impl AuthService {
    /// Builds the service from the secret key and auth settings.
    pub fn new(
        store: Store,
        secret: &[u8],
        cfg: &AuthConfig,
        embedded: &EmbeddedConfig,
    ) -> AuthService {
        let ttl = Duration::from_secs(cfg.permission_cache_ttl_secs);
        AuthService {
            store,
            tokens: TokenKeys::new(
                secret,
                cfg.access_token_ttl_secs,
                cfg.refresh_token_ttl_secs,
            ),
            sessions: SessionKeys::new(secret, cfg.session_ttl_secs, cfg.csrf_ttl_secs),
            limiter: LoginLimiter::new(
                cfg.max_failed_logins,
                Duration::from_secs(cfg.failed_login_window_secs),
            ),
            queue: LoginQueue::new(
                cfg.login_queue_len,
                cfg.login_queue_per_user,
                Duration::from_millis(cfg.login_queue_timeout_ms),
            ),
            users: Cache::builder()
                .max_capacity(100_000)
                .time_to_live(ttl)
                .build(),
            public: Cache::builder().time_to_live(ttl).build(),
            public_role_like: cfg.public_role_like.clone(),
            guest_keys: GuestKeys::new(
                &embedded.guest_secret(secret),
                &embedded.guest_token_audience,
                embedded.guest_token_ttl_secs,
            ),
            guest_role: embedded.guest_role_name.clone(),
            guests: Cache::builder()
                .max_capacity(10_000)
                .time_to_live(ttl)
                .build(),
        }
    }

    /// Mints a guest token (`POST /security/guest_token/`); the caller checked the grant and
    /// the resources.
    pub fn issue_guest_token(
        &self,
        user: GuestUser,
        resources: Vec<GuestResource>,
        rls: Vec<GuestRls>,
    ) -> Result<String, Error> {
        self.guest_keys.issue(user, resources, rls)
    }

    /// The principal of a guest token: a user that is no stored user, with the guest role's
    /// grants capped to viewing (plus what viewing the token's dashboards needs, which the
    /// token itself grants) and reaching only what the token names.
    async fn guest(&self, token: &str) -> Result<Arc<CurrentUser>, Error> {
        let now = chrono::Utc::now().timestamp() as f64;
        if let Some((user, exp)) = self.guests.get(token).await
            && exp > now
        {
            return Ok(user);
        }
        let claims = self.guest_keys.verify(token)?;
        let keys: Vec<String> = claims
            .resources
            .iter()
            .filter(|r| r.kind == "dashboard")
            .map(|r| r.id.clone())
            .collect();
        let reach = Arc::new(self.store.guest_reach(&keys).await?);
        let roles: Vec<Role> = self
            .store
            .role_by_name(&self.guest_role)
            .await?
            .into_iter()
            .collect();
        let held: HashSet<(String, String)> = self
            .store
            .role_permissions(&self.guest_role)
            .await?
            .into_iter()
            .collect();
        let permissions = catalog::guest_permissions(&held);
        let u = &claims.user;
        let now_dt = chrono::Utc::now().naive_utc();
        let user = Arc::new(CurrentUser {
            user: User {
                id: 0,
                username: u.username.clone().unwrap_or_else(|| "guest_user".into()),
                first_name: u.first_name.clone().unwrap_or_else(|| "Guest".into()),
                last_name: u.last_name.clone().unwrap_or_else(|| "User".into()),
                email: String::new(),
                active: true,
                password_hash: None,
                login_count: 0,
                fail_login_count: 0,
                last_login: None,
                created_on: now_dt,
                changed_on: now_dt,
            },
            roles,
            permissions,
            grants: Default::default(),
            guest: Some(Arc::new(Guest {
                rls: claims.rls_rules,
                reach,
                key: hex::encode(&sha2::Sha256::digest(token.as_bytes())[..12]),
            })),
        });
        self.guests
            .insert(token.into(), (user.clone(), claims.exp))
            .await;
        Ok(user)
    }

    /// Session and CSRF keys, for the HTTP layer's cookie handling.
    pub fn sessions(&self) -> &SessionKeys {
        &self.sessions
    }

    /// Creates the built-in roles and their permissions (Superset's `superset init`).
    /// Idempotent: re-running restores the built-in roles' grants exactly.
    pub async fn sync_roles(&self) -> Result<(), Error> {
        for (role, pvms) in catalog::builtin_roles(self.public_role_like.as_deref()) {
            self.store.sync_role(role, &pvms).await?;
        }
        self.public.invalidate_all();
        self.users.invalidate_all();
        Ok(())
    }

    /// Creates a user with a freshly hashed password.
    pub async fn create_user(&self, mut new: NewUser, password: String) -> Result<User, Error> {
        new.password_hash = Some(password::hash_password_blocking(password).await?);
        Ok(self.store.create_user(&new).await?)
    }

    /// Verifies a username (or email) and password; FAB's `auth_user_db`. Every login path
    /// (the API and the browser form) comes through here.
    ///
    /// The attempt is counted as failed before the password is checked and cleared on success, so
    /// concurrent guesses all count; past the limit the answer is `TooManyAttempts` without a
    /// verification. The check itself waits in the [`LoginQueue`]; an attempt it turns away
    /// (`Busy`) was not evaluated and does not count. Any other failure keeps the count, since
    /// it may come after the password was checked.
    pub async fn login(
        &self,
        login: &str,
        password: &str,
        client: Option<IpAddr>,
    ) -> Result<User, Error> {
        // The account is resolved first, so its username and its email share one count.
        let user = self.store.user_for_login(login).await?;
        let subject = LoginSubject::of(login, user.as_ref().map(|u| u.id));
        let reservation = self.limiter.reserve(&subject, client).await?;
        match self.queue.run(&subject, self.verify(user, password)).await {
            Ok(user) => {
                self.limiter.succeeded(reservation).await;
                Ok(user)
            }
            Err(e @ Error::Busy { .. }) => {
                self.limiter.not_evaluated(reservation).await;
                Err(e)
            }
            Err(e) => {
                if matches!(e, Error::BadCredentials) {
                    tracing::info!(message = "Login failed.", username = %login);
                }
                Err(e)
            }
        }
    }

    /// The password check of the account a login resolved to, and its bookkeeping.
    async fn verify(&self, user: Option<User>, password: &str) -> Result<User, Error> {
        let verified = match &user {
            Some(u) if u.active => match &u.password_hash {
                Some(hash) => {
                    password::verify_password_blocking(password.to_owned(), hash.clone()).await?
                }
                None => false,
            },
            _ => {
                // Spend the same time as a real check so response timing does not reveal
                // which usernames exist.
                let _ = password::verify_password_blocking(password.to_owned(), DUMMY_HASH.clone())
                    .await;
                false
            }
        };
        match user {
            Some(u) if verified => {
                let rehash = match &u.password_hash {
                    Some(h) if password::needs_rehash(h) => {
                        Some(password::hash_password_blocking(password.to_owned()).await?)
                    }
                    _ => None,
                };
                self.store.record_login_success(u.id, rehash).await?;
                Ok(u)
            }
            other => {
                if let Some(u) = other {
                    self.store.record_login_failure(u.id).await?;
                }
                Err(Error::BadCredentials)
            }
        }
    }

    /// Mints the tokens of an API login.
    pub fn issue_login_tokens(&self, user_id: i64, refresh: bool) -> Result<LoginTokens, Error> {
        Ok(LoginTokens {
            access_token: self.tokens.issue(user_id, TokenType::Access, true)?,
            refresh_token: if refresh {
                Some(self.tokens.issue(user_id, TokenType::Refresh, false)?)
            } else {
                None
            },
        })
    }

    /// Exchanges a refresh token for a new (non-fresh) access token.
    pub async fn refresh(&self, bearer: Option<&str>) -> Result<String, Error> {
        let token = bearer_token(bearer)?.ok_or(Error::MissingCredentials)?;
        let uid = self.tokens.verify(token, TokenType::Refresh)?;
        self.load_user(uid).await?;
        self.tokens.issue(uid, TokenType::Access, false)
    }

    /// Establishes the principal from a session cookie (checked first, as FAB does) or the
    /// `Authorization` header.
    pub async fn authenticate(
        &self,
        session: Option<&SessionData>,
        authorization: Option<&str>,
        guest_token: Option<&str>,
    ) -> Principal {
        if let Some(uid) = session.and_then(|s| s.uid)
            && let Ok(user) = self.load_user(uid).await
        {
            return Principal::User(user);
        }
        // Superset's request loader: a guest token stands for the caller when no session
        // does.
        if let Some(token) = guest_token {
            return match self.guest(token).await {
                Ok(user) => Principal::User(user),
                Err(e) => Principal::Rejected(Arc::new(e)),
            };
        }
        let result = async {
            let Some(token) = bearer_token(authorization)? else {
                return Ok(None);
            };
            let uid = self.tokens.verify(token, TokenType::Access)?;
            self.load_user(uid).await.map(Some)
        }
        .await;
        match result {
            Ok(Some(user)) => Principal::User(user),
            Ok(None) => Principal::Anonymous,
            Err(e) => Principal::Rejected(Arc::new(e)),
        }
    }

    /// The user with roles and permissions, from cache or store; inactive users fail.
    pub async fn load_user(&self, uid: i64) -> Result<Arc<CurrentUser>, Error> {
        let store = self.store.clone();
        let loaded = self
            .users
            .try_get_with(uid, async move {
                let Some(user) = store.user_by_id(uid).await? else {
                    return Err(Error::UserNotLoaded {
                        id: uid.to_string(),
                    });
                };
                let roles = store.user_roles(uid).await?;
                let permissions = store.user_permissions(uid).await?.into_iter().collect();
                Ok(Arc::new(CurrentUser {
                    user,
                    roles,
                    permissions,
                    grants: Default::default(),
                    guest: None,
                }))
            })
            .await
            .map_err(unshare)?;
        if !loaded.user.active {
            return Err(Error::UserNotLoaded {
                id: uid.to_string(),
            });
        }
        Ok(loaded)
    }

    /// Drops cached permissions of a user (after a role or activity change).
    pub async fn forget_user(&self, uid: i64) {
        self.users.invalidate(&uid).await;
    }

    async fn public_permissions(&self) -> Result<Arc<HashSet<(String, String)>>, Error> {
        let store = self.store.clone();
        self.public
            .try_get_with((), async move {
                let perms = store.role_permissions(catalog::PUBLIC).await?;
                Ok::<_, Error>(Arc::new(perms.into_iter().collect()))
            })
            .await
            .map_err(unshare)
    }

    /// The single authorization check (FAB's `@protect`): allowed when the Public role holds
    /// the permission, or when an authenticated user's roles do. Anonymous callers get
    /// flask-jwt's 401, users without the grant a 403.
    pub async fn authorize(
        &self,
        principal: &Principal,
        permission: &str,
        view_menu: &str,
    ) -> Result<(), Error> {
        if let Principal::User(u) = principal
            && u.guest.is_some()
        {
            // A guest's grants are exactly its own (see `catalog::guest_permissions`): what
            // Public may do does not widen them.
            return if u.has(permission, view_menu) {
                Ok(())
            } else {
                Err(Error::Forbidden)
            };
        }
        let public = self.public_permissions().await?;
        if public.contains(&(permission.to_owned(), view_menu.to_owned())) {
            return Ok(());
        }
        match principal {
            Principal::User(u) if u.has(permission, view_menu) => Ok(()),
            Principal::User(_) => Err(Error::Forbidden),
            Principal::Anonymous => Err(Error::MissingCredentials),
            Principal::Rejected(e) => Err(Error::clone_of(e)),
        }
    }
}

/// A hash with our own parameters of a random string, verified when the user does not exist
/// so that both paths cost the same.
static DUMMY_HASH: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    password::hash_password(&hex::encode(rand::random::<[u8; 16]>())).unwrap_or_default()
});

/// Parses `Authorization: Bearer <jwt>` with flask-jwt's errors.
fn bearer_token(header: Option<&str>) -> Result<Option<&str>, Error> {
    let Some(h) = header else { return Ok(None) };
    let mut parts = h.split_whitespace();
    match (parts.next(), parts.next(), parts.next()) {
        (Some(kind), Some(token), None) if kind.eq_ignore_ascii_case("bearer") => Ok(Some(token)),
        (Some(kind), None, None) if kind.eq_ignore_ascii_case("bearer") => {
            Err(Error::BadAuthorizationHeader {
                msg: "Bad Authorization header. Expected 'Authorization: Bearer <JWT>'",
            })
        }
        _ => Err(Error::BadAuthorizationHeader {
            msg: "Missing 'Bearer' type in 'Authorization' header. Expected 'Authorization: Bearer <JWT>'",
        }),
    }
}

/// moka shares one error among concurrent waiters; give each caller its own copy.
fn unshare(e: Arc<Error>) -> Error {
    Error::clone_of(&e)
}

impl Error {
    /// A copy for another caller; store causes (not `Clone`) become `Internal` with their text.
    pub fn clone_of(e: &Error) -> Error {
        match e {
            Error::MissingCredentials => Error::MissingCredentials,
            Error::BadAuthorizationHeader { msg } => Error::BadAuthorizationHeader { msg },
            Error::Token { expired, msg } => Error::Token {
                expired: *expired,
                msg: msg.clone(),
            },
            Error::UserNotLoaded { id } => Error::UserNotLoaded { id: id.clone() },
            Error::BadCredentials => Error::BadCredentials,
            Error::InvalidGuestToken => Error::InvalidGuestToken,
            Error::Forbidden => Error::Forbidden,
            Error::TooManyAttempts { retry_after_secs } => Error::TooManyAttempts {
                retry_after_secs: *retry_after_secs,
            },
            Error::Busy { retry_after_secs } => Error::Busy {
                retry_after_secs: *retry_after_secs,
            },
            Error::Csrf(c) => Error::Csrf(*c),
            Error::Store(s) => Error::Internal {
                message: s.to_string(),
            },
            Error::Internal { message } => Error::Internal {
                message: message.clone(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_header_forms() {
        assert_eq!(bearer_token(Some("Bearer abc")).unwrap(), Some("abc"));
        assert_eq!(bearer_token(None).unwrap(), None);
        assert!(matches!(
            bearer_token(Some("Bearer")),
            Err(Error::BadAuthorizationHeader { .. })
        ));
        assert!(matches!(
            bearer_token(Some("Basic x")),
            Err(Error::BadAuthorizationHeader { .. })
        ));
    }

    #[test]
    fn dummy_hash_is_a_real_hash_that_rejects_guesses() {
        assert!(DUMMY_HASH.starts_with("$argon2id$"));
        assert!(!password::verify_password("admin", &DUMMY_HASH));
    }
}
