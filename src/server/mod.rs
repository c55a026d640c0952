//! The servers: `quarry serve` ([`http`], an HTTP API on axum) and `quarry mcp` ([`mcp`], a
//! Model Context Protocol server over stdio on rmcp). Both call the library API through one
//! [`Backend`]: each request opens its own session under the caller's scope (so a reader
//! scope's sessions are as of that request), waits for one of a bounded number of query slots,
//! and runs within a time limit that cancels the query when it passes. Every query is audited
//! with the surface and the caller's name, as on the command line.

pub mod http;
pub mod mcp;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::api::{Caller, Error, Options, Quarry, Scope};

/// The bounds every request runs within.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The longest a query may run (a request may ask for less).
    pub timeout: Duration,
    /// The most rows a buffered (JSON) answer holds; beyond it the answer is `truncated`.
    pub max_rows: usize,
    /// The largest request body, in bytes.
    pub max_body: usize,
    /// How many queries run at once; more wait for a slot (within their time limit).
    pub max_concurrent: usize,
    /// Memory for all running queries together; each gets an equal share and spills beyond it.
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

/// What every request of a server shares: the archive's options, the scopes file and the
/// query slots.
pub struct Backend {
    base: Options,
    scopes_file: PathBuf,
    limits: Limits,
    slots: Arc<Semaphore>,
}

/// A query's time limit: when it ends, and how long it was.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    /// When the query must have ended.
    pub at: Instant,
    /// The limit it was given (what the timeout error says).
    pub limit: Duration,
}

impl Deadline {
    /// A deadline `limit` from now.
    pub fn after(limit: Duration) -> Deadline {
        Deadline {
            at: Instant::now() + limit,
            limit,
        }
    }
}

impl Backend {
    /// A backend over the archive of `base` (its scope and caller are set per request), with
    /// reader scopes from `scopes_file`.
    pub fn new(base: Options, scopes_file: PathBuf, limits: Limits) -> Backend {
        let slots = Arc::new(Semaphore::new(limits.max_concurrent.max(1)));
        Backend {
            base,
            scopes_file,
            limits,
            slots,
        }
    }

    /// The bounds requests run within.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The archive file.
    pub fn archive(&self) -> &std::path::Path {
        &self.base.archive
    }

    /// The scope called `name` as the scopes file defines it now.
    pub fn scope(&self, name: &str) -> Result<Scope, Error> {
        crate::scope::resolve(name, &self.scopes_file).map_err(|e| Error::Scope(e.to_string()))
    }

    /// The deadline of a request that asks for `requested` (never beyond the server's limit).
    pub fn deadline(&self, requested: Option<Duration>) -> Deadline {
        let limit = requested.map_or(self.limits.timeout, |r| r.min(self.limits.timeout));
        Deadline::after(limit)
    }

    /// A query slot, waited for until `deadline` (then [`Error::Timeout`]: the server was busy
    /// the whole time).
    pub async fn slot(&self, deadline: Deadline) -> Result<OwnedSemaphorePermit, Error> {
        tokio::time::timeout_at(deadline.at, self.slots.clone().acquire_owned())
            .await
            .map_err(|_| Error::Timeout(deadline.limit))?
            .map_err(|_| Error::Execution("the server is shutting down".into()))
    }

    /// A session under `scope` for one request by `caller`: the scope's sessions are read now,
    /// so a session ingested since the last request is seen.
    pub async fn open(&self, scope: Scope, caller: Caller) -> Result<Quarry, Error> {
        let mut options = self.base.clone();
        options.scope = scope;
        options.caller = caller;
        options.memory_limit = self
            .limits
            .memory_limit
            .map(|total| (total / self.limits.max_concurrent.max(1)).max(1 << 20));
        tokio::task::spawn_blocking(move || Quarry::open(&options))
            .await
            .map_err(|e| Error::Execution(format!("opening the archive failed: {e}")))?
    }
}

/// A row cap for a buffered answer: what the request asks, never beyond `max_rows`.
pub fn buffered_cap(requested: Option<usize>, max_rows: usize) -> usize {
    requested.map_or(max_rows, |r| r.min(max_rows))
}

/// A failure as the JSON both servers report: `{code, message, diagnostics}`, and for a query
/// error `rendered`, the query with the error drawn under it (`query` is the text it is about).
pub fn error_body(e: &Error, query: Option<&str>) -> serde_json::Value {
    let mut body = serde_json::json!({
        "code": e.code(),
        "message": e.to_string().trim_end(),
        "diagnostics": e.diagnostics_json(),
    });
    if let (Error::Query(diagnostics), Some(query)) = (e, query) {
        body["rendered"] = quarry_grammar::render(query, diagnostics, false).into();
    }
    body
}
