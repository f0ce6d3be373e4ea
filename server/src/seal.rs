//! Sealing of secrets at rest: database connection passwords and encrypted extras are stored
//! only as AEAD ciphertexts (XChaCha20-Poly1305) under a key derived from SECRET_KEY.
//!
//! Owns the key derivation and the byte format; must not log or return plaintext. A sealed
//! value is `version (1 byte) || nonce (24 bytes) || ciphertext+tag`, so the format can change
//! later without ambiguity. Rotating SECRET_KEY makes existing ciphertexts unreadable, which
//! surfaces as [`SealError::Open`], never as garbage.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hmac::{Hmac, Mac};
use sha2::Sha256;

const VERSION: u8 = 1;
const NONCE_LEN: usize = 24;

/// Sealing failures. Neither variant carries plaintext.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    /// The ciphertext was not produced under this key, or was altered, or is malformed.
    #[error("cannot open sealed value: wrong SECRET_KEY or corrupted data")]
    Open,
    /// Encryption itself failed (the library refused the input).
    #[error("cannot seal value")]
    Seal,
}

/// Seals and opens secrets with a key derived from the server's secret.
#[derive(Clone)]
pub struct Sealer {
    cipher: XChaCha20Poly1305,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(***)")
    }
}

impl Sealer {
    /// Derives the sealing key from SECRET_KEY (HMAC-SHA256 with a purpose label, so this key
    /// is unrelated to the token and cookie keys derived from the same secret).
    pub fn new(secret: &[u8]) -> Sealer {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC accepts any key length");
        mac.update(b"liteset.credentials.v1");
        let key = mac.finalize().into_bytes();
        Sealer {
            cipher: XChaCha20Poly1305::new(&key),
        }
    }

    /// Encrypts `plaintext`; `context` (e.g. the database uuid) is bound as associated data so
    /// a ciphertext copied onto another record does not open there.
    pub fn seal(&self, plaintext: &[u8], context: &[u8]) -> Result<Vec<u8>, SealError> {
        let nonce_bytes: [u8; NONCE_LEN] = rand::random();
        let nonce = XNonce::from_slice(&nonce_bytes);
        let ct = self
            .cipher
            .encrypt(
                nonce,
                Payload {
                    msg: plaintext,
                    aad: context,
                },
            )
            .map_err(|_| SealError::Seal)?;
        let mut out = Vec::with_capacity(1 + NONCE_LEN + ct.len());
        out.push(VERSION);
        out.extend_from_slice(&nonce_bytes);
        out.extend_from_slice(&ct);
        Ok(out)
    }

    /// Decrypts a value produced by [`Sealer::seal`] with the same `context`.
    pub fn open(&self, sealed: &[u8], context: &[u8]) -> Result<Vec<u8>, SealError> {
        if sealed.len() < 1 + NONCE_LEN || sealed[0] != VERSION {
            return Err(SealError::Open);
        }
        let nonce = XNonce::from_slice(&sealed[1..=NONCE_LEN]);
        self.cipher
            .decrypt(
                nonce,
                Payload {
                    msg: &sealed[1 + NONCE_LEN..],
                    aad: context,
                },
            )
            .map_err(|_| SealError::Open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_value_opens_with_the_same_key_and_context_only() {
        let s = Sealer::new(b"secret-key-secret-key-secret-key");
        let sealed = s.seal(b"hunter2", b"db-uuid-1").unwrap();
        assert!(
            !sealed.windows(7).any(|w| w == b"hunter2"),
            "plaintext not visible"
        );
        assert_eq!(s.open(&sealed, b"db-uuid-1").unwrap(), b"hunter2");
        assert_eq!(s.open(&sealed, b"db-uuid-2"), Err(SealError::Open));
        let other = Sealer::new(b"another-key-another-key-another-k");
        assert_eq!(other.open(&sealed, b"db-uuid-1"), Err(SealError::Open));
    }

    #[test]
    fn each_seal_uses_a_fresh_nonce() {
        let s = Sealer::new(b"k");
        assert_ne!(s.seal(b"x", b"").unwrap(), s.seal(b"x", b"").unwrap());
    }

    #[test]
    fn tampered_or_truncated_values_are_refused() {
        let s = Sealer::new(b"k");
        let mut sealed = s.seal(b"password", b"c").unwrap();
        let last = sealed.len() - 1;
        sealed[last] ^= 1;
        assert_eq!(s.open(&sealed, b"c"), Err(SealError::Open));
        assert_eq!(s.open(&[], b"c"), Err(SealError::Open));
        assert_eq!(s.open(&[1, 2, 3], b"c"), Err(SealError::Open));
        assert!(!format!("{s:?}").contains('k'));
    }
}
