//! FTS5's BM25, over statistics that need not be the whole table's.
//!
//! `bm25()` of SQLite's FTS5 (fts5_aux.c) scores a row as
//! `-Σᵢ idfᵢ · fᵢ·(k1+1) / (fᵢ + k1·(1 − b + b·D/avgdl))` with k1 = 1.2, b = 0.75, where `fᵢ` is
//! the row's instances of phrase i, `D` the row's tokens, `avgdl` the table's tokens over its
//! rows, and `idfᵢ = ln((N − nᵢ + 0.5) / (nᵢ + 0.5))` (at least 1e-6) with `N` the table's rows
//! and `nᵢ` the rows holding phrase i. Those statistics are the whole table's, so they would
//! tell a reader how often a term occurs in sessions it cannot see; [`Stats`] carries the
//! caller's own, and [`score`] repeats FTS5's arithmetic step for step, so with the whole
//! table's statistics it returns `bm25()`'s value exactly.

use serde::{Deserialize, Serialize};

/// FTS5's k1.
const K1: f64 = 1.2;
/// FTS5's b.
const B: f64 = 0.75;
/// The least IDF FTS5 gives a phrase.
const MIN_IDF: f64 = 1e-6;

/// The statistics one ranking uses (a cursor carries them, so every page ranks alike).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Documents (indexed blocks) of the caller's universe.
    pub rows: i64,
    /// Their tokens.
    pub tokens: i64,
    /// Per phrase, the documents holding it (`None` for a phrase under `NOT`, which never
    /// counts in a matching row).
    pub holding: Vec<Option<i64>>,
}

impl Stats {
    /// The IDF of each phrase (0 for one under `NOT`, whose frequency is always 0).
    pub fn idf(&self) -> Vec<f64> {
        self.holding
            .iter()
            .map(|n| match n {
                Some(n) => {
                    let idf = ((self.rows - n) as f64 + 0.5) / (*n as f64 + 0.5);
                    let idf = idf.ln();
                    if idf <= 0.0 { MIN_IDF } else { idf }
                }
                None => 0.0,
            })
            .collect()
    }

    /// The average document length.
    pub fn avgdl(&self) -> f64 {
        self.tokens as f64 / self.rows as f64
    }
}

/// The BM25 of a row of `row_tokens` tokens and `frequencies` per phrase, with `idf` and
/// `avgdl` from [`Stats`] (lower is better, as FTS5's).
pub fn score(idf: &[f64], avgdl: f64, row_tokens: i64, frequencies: &[f64]) -> f64 {
    let d = row_tokens as f64;
    let mut score = 0.0;
    for (idf, f) in idf.iter().zip(frequencies) {
        score += idf * ((f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * d / avgdl)));
    }
    -score
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_hand_computed_score() {
        // 10 documents of 50 tokens on average; the phrase in 2 of them; a row of 40 tokens
        // holding it 3 times: idf = ln(8.5 / 2.5), score = -idf·3·2.2 / (3 + 1.2·(0.25 + 0.6)).
        let stats = Stats {
            rows: 10,
            tokens: 500,
            holding: vec![Some(2), None],
        };
        let idf = stats.idf();
        assert_eq!(idf[1], 0.0);
        let expected = -((8.5f64 / 2.5).ln() * 6.6 / (3.0 + 1.2 * 0.85));
        let got = score(&idf, stats.avgdl(), 40, &[3.0, 0.0]);
        assert!((got - expected).abs() < 1e-12, "{got} vs {expected}");
    }

    #[test]
    fn a_phrase_in_most_documents_keeps_the_least_idf() {
        let stats = Stats {
            rows: 4,
            tokens: 4,
            holding: vec![Some(3)],
        };
        assert_eq!(stats.idf(), [MIN_IDF]);
    }
}
