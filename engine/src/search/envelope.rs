//! The SearchEnvelope: one ranked page as every surface returns it (CLI `--format json`, HTTP,
//! MCP), and its plain-text rendering for a terminal.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::rank::SessionSummary;

/// The ranking policy every envelope declares.
pub const RANKING_POLICY: &str = "bm25-scoped";
/// Its version: a change of ordering semantics changes it (and invalidates cursors).
pub const RANKING_POLICY_VERSION: u32 = 1;

/// One ranked page.
#[derive(Debug, Clone, Serialize)]
pub struct SearchEnvelope {
    /// The hits of the page, best first.
    pub hits: Vec<SearchHit>,
    /// Every matching session (or message, within one session), counted exactly.
    pub total: Option<u64>,
    /// The page size applied.
    pub limit: usize,
    /// How many hits come before this page.
    pub offset: u64,
    /// The offset of the next page, when there is one.
    pub next_offset: Option<u64>,
    /// The cursor of the next page, when there is one (absent on the last page).
    pub next_cursor: Option<String>,
    /// The search text as applied (normalized).
    pub query: String,
    /// Always null: ranked search never falls back to another order.
    pub sort: Option<String>,
    /// The lane that ran.
    pub retrieval_lane: &'static str,
    /// The declared ordering ([`RANKING_POLICY`]).
    pub ranking_policy: &'static str,
    /// Its version.
    pub ranking_policy_version: u32,
    /// The archive generation the ranking is as of (the first page's, when walking a cursor).
    pub generation: i64,
    /// Why a filtered search found nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<MissDiagnostics>,
    /// Within one session: that session's header, as of the same generation, also when the
    /// page holds no hit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionSummary>,
}

/// One hit: the session, and the evidence of its best match.
#[derive(Debug, Clone, Serialize)]
pub struct SearchHit {
    /// The session the hit belongs to.
    pub session: SessionSummary,
    /// Why it matched.
    #[serde(rename = "match")]
    pub matched: Match,
}

/// The evidence of one hit.
#[derive(Debug, Clone, Serialize)]
pub struct Match {
    /// 1-based position in the whole ranking.
    pub rank: u64,
    /// The lane that produced it.
    pub retrieval_lane: &'static str,
    /// What matched: `message` (dialogue) or `action`.
    pub match_surface: &'static str,
    /// Its BM25 over the caller's rows (lower is better, as FTS5's).
    pub score: f64,
    /// `bm25`.
    pub score_kind: &'static str,
    /// `{"bm25_raw": score}`.
    pub score_components: BTreeMap<&'static str, f64>,
    /// Its rank in its lane (the only lane, so `rank`).
    pub lane_rank: u64,
    /// Its lane's contribution (null: no fusion ran).
    pub lane_contribution: Option<f64>,
    /// The backend's score before interpretation (the BM25).
    pub raw_score: f64,
    /// The query's tokens (lower-cased, operators and `*` stripped).
    pub matched_terms: Vec<String>,
    /// The best block's excerpt, matched terms between `«` and `»` (masked for readers).
    pub snippet: String,
    /// The message holding the best block.
    pub message_id: String,
    /// Its role.
    pub role: Option<String>,
    /// When it was written (epoch milliseconds).
    pub occurred_at: Option<i64>,
    /// The message to open (its id).
    pub target_ref: String,
    /// The block within it.
    pub anchor: String,
    /// What a reader can do with the hit.
    pub actions: Vec<&'static str>,
    /// Blocks of the session (or message) that matched.
    pub matching_blocks: u64,
}

/// Why a filtered search found nothing.
#[derive(Debug, Clone, Serialize)]
pub struct MissDiagnostics {
    /// What happened, and what to try.
    pub message: String,
    /// Sessions the filter admitted.
    pub filtered_sessions: u64,
    /// Sessions the text matched before the filter narrowed them.
    pub matching_sessions_unfiltered: u64,
}

/// The page as lines for a terminal: rank, score, the session, the excerpt.
pub fn render_text(envelope: &SearchEnvelope) -> String {
    let mut out = String::new();
    if envelope.hits.is_empty() {
        let _ = writeln!(out, "no hits for {}", envelope.query);
        if let Some(d) = &envelope.diagnostics {
            let _ = writeln!(out, "{}", d.message);
        }
        return out;
    }
    for hit in &envelope.hits {
        let s = &hit.session;
        let m = &hit.matched;
        let title = s.title.as_deref().unwrap_or(&s.session_id);
        let _ = writeln!(
            out,
            "{:>4}  {:>9.4}  {}  [{}{}]",
            m.rank,
            m.score,
            title,
            s.origin,
            s.repo
                .as_deref()
                .map(|r| format!(" {r}"))
                .unwrap_or_default()
        );
        let _ = writeln!(
            out,
            "      {}  {}",
            m.message_id,
            m.snippet.replace('\n', " ")
        );
    }
    let shown = envelope.offset + envelope.hits.len() as u64;
    let total = envelope
        .total
        .map(|t| t.to_string())
        .unwrap_or_else(|| "?".into());
    let _ = write!(out, "{shown} of {total} ({} lane)", envelope.retrieval_lane);
    if let Some(cursor) = &envelope.next_cursor {
        let _ = write!(out, "; next page: --cursor {cursor}");
    }
    out.push('\n');
    out
}
