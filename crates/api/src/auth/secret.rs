//! The text of API tokens and session secrets: made from the operating system's randomness,
//! kept only as a SHA-256 hash, compared in constant time.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Every token joblog makes starts with this, so that secret scanners can
/// recognise a leaked one.
pub const TOKEN_PREFIX: &str = "jl_";

/// Characters after the prefix: 43 of 62 symbols carry 256.03 bits.
const TOKEN_CHARS: usize = 43;
const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The SHA-256 of a token's text: what the store keeps and looks up. A
/// token carries 256 random bits, so a fast hash is enough; nothing can be
/// guessed faster than the token itself.
pub fn hash(token: &str) -> [u8; 32] {
    hash_bytes(token.as_bytes())
}

/// The SHA-256 of `bytes`.
pub fn hash_bytes(bytes: &[u8]) -> [u8; 32] {
    let digest = Sha256::digest(bytes);
    let mut out = [0u8; 32];
    out.copy_from_slice(&digest);
    out
}

/// Whether two hashes are equal, taking the same time whatever they hold.
pub fn same_hash(a: &[u8; 32], b: &[u8; 32]) -> bool {
    bool::from(a.ct_eq(b))
}

/// A new token: `jl_` and 43 characters of `[0-9A-Za-z]`, drawn uniformly
/// (bytes past the largest multiple of 62 are rejected, not folded, so no
/// character is likelier than another).
pub fn generate() -> Result<String, getrandom::Error> {
    generate_with(TOKEN_PREFIX)
}

/// A new secret as [`generate`] makes, after `prefix` (a session's `js_`).
pub fn generate_with(prefix: &str) -> Result<String, getrandom::Error> {
    let mut token = String::with_capacity(prefix.len() + TOKEN_CHARS);
    token.push_str(prefix);
    let mut chars = 0;
    let mut buf = [0u8; 64];
    while chars < TOKEN_CHARS {
        getrandom::fill(&mut buf)?;
        for &b in &buf {
            if b < 248 && chars < TOKEN_CHARS {
                token.push(ALPHABET[usize::from(b % 62)] as char);
                chars += 1;
            }
        }
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_prefixed_long_and_different() {
        let a = generate().unwrap();
        let b = generate().unwrap();
        assert!(a.starts_with("jl_") && a.len() == 46, "{a}");
        assert!(a[3..].bytes().all(|c| c.is_ascii_alphanumeric()), "{a}");
        assert_ne!(a, b);
        assert!((TOKEN_CHARS as f64) * 62f64.log2() >= 256.0);
    }

    #[test]
    fn hashes_are_sha256_and_compare_equal_only_when_equal() {
        // SHA-256("abc"), FIPS 180-2 test vector.
        assert_eq!(
            hash("abc")[..4],
            [0xba, 0x78, 0x16, 0xbf],
            "{:02x?}",
            hash("abc")
        );
        assert!(same_hash(&hash("x"), &hash("x")));
        assert!(!same_hash(&hash("x"), &hash("y")));
    }
}
