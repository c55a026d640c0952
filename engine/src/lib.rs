//! quarry: exact analytical queries over archives of AI-agent sessions — the engine library
//! every surface calls.
//!
//! Open a [`Quarry`] over an archive with typed [`Options`] once per process, open a [`Session`]
//! per request, run a [`Request`] in either language, and get a stream of Arrow record batches
//! with typed metadata ([`QueryStream`]); [`output`] encodes an answer in any [`Format`]. The
//! command line (crate `quarry-cli`) and the servers (`quarry-server`) only take requests, call
//! this library and encode; it knows no clap, axum or rmcp.
//!
//! Modules depend on each other one way (CI fails on a cycle). [`format`], [`audit`],
//! [`scope`], [`prices`] and `lower` (a resolved query → a DataFusion plan) import no other
//! module; [`error`] → [`request`] (which names `lower`'s zones and planted bugs) → [`answer`]
//! → [`output`]; `engine` (one long-lived engine, a session per request) → [`api`]
//! ([`Quarry`]) → [`report`], [`export`].
//!
//! Data flows one way: source files → ingest (`quarry_ingest`) → SQLite archive
//! (`quarry_archive`) → TableProviders (`quarry_providers`) → a query lowered to a DataFusion
//! plan (`lower`) → executed (`engine`) → written ([`output`]).

pub mod answer;
pub mod api;
pub mod audit;
pub mod dashboard;
mod engine;
pub mod error;
pub mod export;
pub mod facets;
pub mod format;
pub mod live;
mod lower;
pub mod output;
pub mod prices;
pub mod read;
pub mod report;
pub mod request;
pub mod scope;
pub mod search;
mod token;

pub use answer::{
    Attachment, CatalogColumn, CatalogTable, Completion, LogicalPlans, QueryResult, QueryStream,
    ResultMeta, Source, UnpricedModel,
};
pub use api::{Quarry, Session, block_on};
pub use audit::{Caller, Language};
pub use error::{Error, ErrorBody, ErrorClass, Refusal};
pub use format::Format;
#[doc(hidden)]
pub use lower::PlantedBug;
pub use quarry_grammar::resolve::Semantics;
pub use request::{Caps, Deadline, Options, Request, SourceChoice};
pub use scope::{ReaderScope, Scope};

/// Arrow, as the API's record batches and schemas use it.
pub use datafusion::arrow;
