//! The servers: `quarry serve` ([`http`], an HTTP API on axum) and `quarry mcp` ([`mcp`], a
//! Model Context Protocol server over stdio on rmcp). Both are thin adapters over one
//! [`service::Service`]: they take a request apart, call the service, and hand its answer to
//! the output module's encoder of the format asked for; errors go out as the one error body
//! with their class's status. The service runs every request within the server's bounds (a
//! bounded number of query slots sharing one memory pool, a time limit that cancels the query)
//! over one long-lived engine, under the caller's scope, and audits every request: queries as
//! intents and outcomes, everything else (explain, tables, refusals) as requests. [`tokens`]
//! keeps the HTTP server's bearer tokens.
//!
//! This crate holds the network front ends and nothing else: no lowering, no execution, no
//! encoding of its own (those are the `quarry` library's).

pub mod http;
pub mod mcp;
pub mod service;
pub mod tokens;

use std::time::Duration;

pub use self::service::{Answer, Asker, ScopeRef, Service};

/// The bounds every request runs within.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The longest a request may take, waiting for a query slot included (a request may ask
    /// for less).
    pub timeout: Duration,
    /// The most rows a buffered (JSON) answer holds; beyond it the answer is `truncated`.
    pub max_rows: usize,
    /// The largest request body, in bytes.
    pub max_body: usize,
    /// How many queries run at once; more wait for a slot (within their time limit).
    pub max_concurrent: usize,
    /// Memory for all running queries together, in one fair pool: they spill beyond it.
    pub memory_limit: Option<usize>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(30),
            max_rows: 10_000,
            max_body: 1 << 20,
            max_concurrent: 8,
            memory_limit: Some(4 << 30),
        }
    }
}
