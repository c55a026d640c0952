//! quarry: exact analytical queries over archives of AI-agent sessions.
//!
//! The library is what every front end calls: open a [`Quarry`] over an archive with typed
//! [`Options`] once per process, open a [`Session`] per request, run a [`Request`] in either
//! language, and get a stream of Arrow record batches with typed metadata (see [`api`]);
//! [`output`] encodes an answer in any [`Format`]. The command line ([`cli`]) and the servers
//! (`server`: one service layer, HTTP and MCP as adapters over it, with the engine) only take
//! requests, call the library and encode; [`tokens`] keeps the HTTP server's bearer tokens.
//!
//! Data flows one way: source files → [`ingest`] → SQLite archive (`quarry_providers`) →
//! a query lowered to a DataFusion plan (`lower`) → executed (`engine`) → written ([`output`]).
//! [`synth`] writes synthetic transcripts in the real on-disk formats so demos and benchmarks go
//! through the same ingest path; [`assertions`] adds tags and notes.

pub mod api;
pub mod assertions;
pub mod audit;
pub mod cli;
#[cfg(feature = "engine")]
mod engine;
#[cfg(feature = "engine")]
pub mod export;
pub mod format;
pub mod ingest;
pub mod location;
#[cfg(feature = "engine")]
mod lower;
pub mod output;
pub mod prices;
pub mod report;
pub mod scope;
#[cfg(feature = "engine")]
pub mod server;
pub mod synth;
pub mod tokens;

#[cfg(feature = "engine")]
pub use api::Deadline;
#[cfg(feature = "engine")]
pub use api::{Attachment, QueryResult};
pub use api::{
    Caller, Caps, Completion, Error, ErrorBody, ErrorClass, Language, Options, Quarry, QueryStream,
    ReaderScope, Refusal, Request, ResultMeta, Scope, Semantics, Session, Source, SourceChoice,
    UnpricedModel, block_on,
};
/// Arrow, as the API's record batches and schemas use it.
#[cfg(feature = "engine")]
pub use datafusion::arrow;
pub use format::Format;
