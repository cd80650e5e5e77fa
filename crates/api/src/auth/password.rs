//! Passwords, hashed with Argon2id (RFC 9106) in PHC strings: memory
//! 19 MiB, 2 passes, 1 lane (OWASP's first recommended set). Hashing runs
//! on the blocking pool, at most [`AT_ONCE`] at a time, so sign-ins
//! cannot take every core; an unknown name is checked against a hash of
//! its own, so it takes the time a wrong password does.

use std::sync::{Arc, LazyLock};

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use tokio::sync::Semaphore;

/// Argon2id's memory cost in KiB, passes and lanes.
pub const MEMORY_KIB: u32 = 19 * 1024;
pub const PASSES: u32 = 2;
pub const LANES: u32 = 1;
/// Hashes computed at once; more sign-ins wait their turn.
const AT_ONCE: usize = 2;

fn argon2() -> Argon2<'static> {
    let params = Params::new(MEMORY_KIB, PASSES, LANES, None)
        .expect("the fixed Argon2 parameters are within its bounds");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// What hashing needs: its share of the cores.
#[derive(Debug, Clone)]
pub(crate) struct Passwords {
    turns: Arc<Semaphore>,
}

impl Default for Passwords {
    fn default() -> Self {
        Passwords {
            turns: Arc::new(Semaphore::new(AT_ONCE)),
        }
    }
}

/// A hash of a password nobody has, for names that have none: checking
/// against it costs what checking a real one does.
static NOBODY: LazyLock<String> =
    LazyLock::new(|| hash_now("not a password anyone has").unwrap_or_default());

fn hash_now(password: &str) -> Result<String, String> {
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| format!("reading the system's randomness: {e}"))?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| format!("encoding a salt: {e}"))?;
    argon2()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| format!("hashing a password: {e}"))
}

/// Whether `password` is the one `phc` was made from; a damaged hash is
/// a mismatch (and logged).
fn verify_now(phc: &str, password: &str) -> bool {
    match PasswordHash::new(phc) {
        Ok(parsed) => argon2()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
        Err(e) => {
            tracing::error!(error = %e, "a stored password hash cannot be read");
            false
        }
    }
}

impl Passwords {
    /// The PHC string of `password`'s hash, with a fresh salt.
    pub async fn hash(&self, password: String) -> Result<String, String> {
        let _turn = self.turns.acquire().await.map_err(|e| e.to_string())?;
        tokio::task::spawn_blocking(move || hash_now(&password))
            .await
            .map_err(|e| format!("hashing a password: {e}"))?
    }

    /// Whether `password` matches `phc`; with no hash (no such user, or
    /// one who signs in only through single sign-on), checks a hash of
    /// nobody's so that the answer takes as long, and is `false`.
    pub async fn verify(&self, phc: Option<String>, password: String) -> bool {
        let Ok(_turn) = self.turns.acquire().await else {
            return false;
        };
        let checked = tokio::task::spawn_blocking(move || match phc {
            Some(phc) => verify_now(&phc, &password),
            None => {
                verify_now(&NOBODY, &password);
                false
            }
        })
        .await;
        checked.unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_password_matches_its_own_hash_only() {
        let p = Passwords::default();
        let h = p.hash("correct horse battery".into()).await.unwrap();
        assert!(h.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{h}");
        assert!(!h.contains("correct horse"), "{h}");
        assert!(
            p.verify(Some(h.clone()), "correct horse battery".into())
                .await
        );
        assert!(
            !p.verify(Some(h.clone()), "correct horse battery ".into())
                .await
        );
        let again = p.hash("correct horse battery".into()).await.unwrap();
        assert_ne!(h, again, "each hash has its own salt");
        assert!(!p.verify(None, "not a password anyone has".into()).await);
        assert!(!p.verify(Some("$argon2id$garbage".into()), "x".into()).await);
    }
}
