//! Search cursors: self-contained, URL-safe tokens (base64 of a versioned JSON object) that
//! carry where the next page starts and everything needed to rank it as the first page was
//! ranked, so no server keeps state and a cursor outlives a restart.
//!
//! A cursor holds the lane, the anchor (the last hit's rank, score and key), a digest of the
//! request it belongs to (normalized text, filters, page size, scope, session, lane, ranking
//! policy version), the archive generation of its first page and the highest block row id then
//! (later pages rank only blocks that existed at that generation), and the statistics that
//! ranking used. Handing it to another request (other text, lane, scope, ...) is refused.

use serde::{Deserialize, Serialize};

use super::bm25::Stats;

/// The cursor format's version.
const VERSION: u32 = 1;

/// Where a walk of a ranking stands, and how it ranks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cursor {
    /// The format's version.
    pub v: u32,
    /// The lane it was minted in.
    pub lane: String,
    /// The digest of the request it belongs to ([`crate::token::digest`]).
    pub digest: String,
    /// The archive generation of the first page.
    pub generation: i64,
    /// The highest block row id at that generation.
    pub pin: i64,
    /// The statistics of the ranking.
    pub stats: Stats,
    /// The last hit's 1-based rank.
    pub rank: u64,
    /// The last hit's score, as its IEEE 754 bits (a JSON number would not read back exact).
    pub score_bits: u64,
    /// The last hit's key (a session id, or a message position within one session).
    pub key: String,
}

impl Cursor {
    /// A new cursor at `rank`, `score`, `key`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        lane: &str,
        digest: String,
        generation: i64,
        pin: i64,
        stats: Stats,
        rank: u64,
        score: f64,
        key: String,
    ) -> Cursor {
        Cursor {
            v: VERSION,
            lane: lane.to_string(),
            digest,
            generation,
            pin,
            stats,
            rank,
            score_bits: score.to_bits(),
            key,
        }
    }

    /// The last hit's score.
    pub fn score(&self) -> f64 {
        f64::from_bits(self.score_bits)
    }

    /// The token.
    pub fn encode(&self) -> String {
        crate::token::encode(self)
    }

    /// Reads a token; `None` when it is not one of ours.
    pub fn decode(token: &str) -> Option<Cursor> {
        let cursor: Cursor = crate::token::decode(token)?;
        (cursor.v == VERSION && cursor.score().is_finite()).then_some(cursor)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_cursor_reads_back_and_a_foreign_token_does_not() {
        let stats = Stats {
            rows: 9,
            tokens: 90,
            holding: vec![Some(2), None],
        };
        let c = Cursor::new(
            "dialogue",
            crate::token::digest(&["a", "b"]),
            4,
            77,
            stats,
            20,
            -1.25,
            "s".into(),
        );
        assert_eq!(Cursor::decode(&c.encode()), Some(c));
        assert_eq!(Cursor::decode("not a cursor"), None);
        assert_eq!(
            Cursor::decode(&crate::token::encode(&serde_json::json!({"v": 9}))),
            None
        );
    }
}
