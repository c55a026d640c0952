//! Self-contained tokens: a versioned value as URL-safe base64 of its JSON, so no server keeps
//! state and a token outlives a restart (search cursors, unit-query page cursors), and the
//! digest that binds a token to the request it belongs to.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

/// The token of `value`.
pub fn encode<T: Serialize>(value: &T) -> String {
    let json = serde_json::to_vec(value).unwrap_or_default();
    URL_SAFE_NO_PAD.encode(json)
}

/// The value of `token`; `None` when it is not a token of a `T`.
pub fn decode<T: DeserializeOwned>(token: &str) -> Option<T> {
    let bytes = URL_SAFE_NO_PAD.decode(token.trim()).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The digest of a request: every part that changes what its pages hold.
pub fn digest(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.len().to_le_bytes());
        hasher.update(part.as_bytes());
    }
    let hash = hasher.finalize();
    hash[..16].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_token_reads_back_and_a_foreign_one_does_not() {
        let token = encode(&(1u32, "x".to_string()));
        assert_eq!(decode::<(u32, String)>(&token), Some((1, "x".into())));
        assert_eq!(decode::<(u32, String)>("not a token"), None);
    }

    #[test]
    fn digests_separate_their_parts() {
        assert_ne!(digest(&["ab", "c"]), digest(&["a", "bc"]));
        assert_eq!(digest(&["x"]), digest(&["x"]));
    }
}
