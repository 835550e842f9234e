//! The app's secret that makes what tooljig stores tamper-evident: HMAC-SHA256.
//!
//! An unkeyed hash chain proves order only: whoever can write the database can also
//! recompute every hash. With a [`SealKey`] the app keeps outside the database (an
//! environment variable, a secrets manager), the audit chain's hashes and the stored
//! approval decisions are MACs that nobody without the key can forge or recompute.

use crate::digest::hex;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::sync::Arc;

/// Fewest bytes a key may have: 256 bits, as HMAC-SHA256 wants.
pub const MIN_KEY_BYTES: usize = 32;

/// A secret key for HMAC-SHA256. Cheap to clone; never printed.
#[derive(Clone)]
pub struct SealKey(Arc<[u8]>);

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealKey(<secret>)")
    }
}

impl PartialEq for SealKey {
    fn eq(&self, other: &Self) -> bool {
        // Compared only to tell settings apart, never to authenticate anything.
        self.0 == other.0
    }
}

impl Eq for SealKey {}

impl SealKey {
    /// A key from its bytes; refused when shorter than [`MIN_KEY_BYTES`].
    pub fn new(bytes: impl AsRef<[u8]>) -> Result<Self, String> {
        let bytes = bytes.as_ref();
        if bytes.len() < MIN_KEY_BYTES {
            return Err(format!(
                "a seal key needs at least {MIN_KEY_BYTES} bytes (got {}); generate one with \
                 `openssl rand -hex 32`",
                bytes.len()
            ));
        }
        Ok(SealKey(Arc::from(bytes)))
    }

    /// A key as options spell it: `env:NAME` (the variable's value), `file:PATH` (the file's
    /// contents, a trailing newline dropped), `hex:HEX` (the bytes the hex digits spell), or
    /// the key itself.
    pub fn parse(spec: &str) -> Result<Self, String> {
        if let Some(digits) = spec.strip_prefix("hex:") {
            return SealKey::new(from_hex(digits)?);
        }
        if let Some(name) = spec.strip_prefix("env:") {
            let value = std::env::var(name)
                .map_err(|_| format!("the environment variable {name} is not set"))?;
            return SealKey::new(value);
        }
        if let Some(path) = spec.strip_prefix("file:") {
            let mut bytes =
                std::fs::read(path).map_err(|e| format!("cannot read the key file {path}: {e}"))?;
            while bytes.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                bytes.pop();
            }
            return SealKey::new(bytes);
        }
        SealKey::new(spec)
    }

    /// The MAC of `parts`, each length-prefixed so that no two different lists of parts
    /// give the same input, as lowercase hex.
    pub fn mac(&self, parts: &[&[u8]]) -> String {
        let mut mac = self.hmac();
        for part in parts {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        hex(&mac.finalize().into_bytes())
    }

    /// The MAC of one text, as lowercase hex: what a keyed audit chain stores as a record's
    /// hash.
    pub fn mac_text(&self, text: &str) -> String {
        let mut mac = self.hmac();
        mac.update(text.as_bytes());
        hex(&mac.finalize().into_bytes())
    }

    /// Whether `tag` is the MAC of `parts`, compared in constant time.
    pub fn verify(&self, parts: &[&[u8]], tag: &str) -> bool {
        constant_time_eq(self.mac(parts).as_bytes(), tag.as_bytes())
    }

    /// Whether `tag` is the MAC of `text`, compared in constant time.
    pub fn verify_text(&self, text: &str, tag: &str) -> bool {
        constant_time_eq(self.mac_text(text).as_bytes(), tag.as_bytes())
    }

    fn hmac(&self) -> Hmac<Sha256> {
        // HMAC takes a key of any length; `new` only fails for fixed-size MACs.
        <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC accepts any key length")
    }
}

fn from_hex(digits: &str) -> Result<Vec<u8>, String> {
    const_hex::decode(digits.trim()).map_err(|e| format!("a hex key: {e}"))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_keys_are_refused_and_keys_never_print() {
        assert!(SealKey::new("short").is_err());
        let key = SealKey::new([7u8; 32]).unwrap();
        assert_eq!(format!("{key:?}"), "SealKey(<secret>)");
    }

    #[test]
    fn parts_are_length_prefixed() {
        let key = SealKey::new([7u8; 32]).unwrap();
        assert_ne!(key.mac(&[b"ab", b"c"]), key.mac(&[b"a", b"bc"]));
        let tag = key.mac(&[b"ab", b"c"]);
        assert!(key.verify(&[b"ab", b"c"], &tag));
        let other = SealKey::new([8u8; 32]).unwrap();
        assert!(!other.verify(&[b"ab", b"c"], &tag));
    }

    #[test]
    fn a_key_comes_from_the_environment_or_a_file() {
        let dir = std::env::temp_dir().join(format!("tooljig-seal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("key");
        std::fs::write(&file, format!("{}\n", "k".repeat(40))).unwrap();
        let from_file = SealKey::parse(&format!("file:{}", file.display())).unwrap();
        assert_eq!(from_file, SealKey::new("k".repeat(40)).unwrap());
        assert!(SealKey::parse("env:TOOLJIG_SURELY_UNSET_VARIABLE").is_err());
        assert_eq!(
            SealKey::parse(&format!("hex:{}", "6b".repeat(40))).unwrap(),
            from_file
        );
        assert!(SealKey::parse("hex:zz").is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn hex_that_is_not_hex_is_refused_not_a_panic() {
        // Even in bytes, but two-byte characters put a pair's end inside one.
        for digits in ["a\u{e9}b", "\u{e9}\u{e9}", "6b6b\u{1f600}", "abc", " "] {
            let refused = SealKey::parse(&format!("hex:{digits}"));
            assert!(refused.is_err(), "{digits:?} was taken as a key");
        }
        let upper = SealKey::parse(&format!("hex:{}", "6B".repeat(40))).unwrap();
        assert_eq!(upper, SealKey::new("k".repeat(40)).unwrap());
        let prefixed = SealKey::parse(&format!("hex:0x{}", "6b".repeat(40))).unwrap();
        assert_eq!(prefixed, upper);
    }
}
