//! quarry's end-to-end tests: one binary, one module per topic.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod accounting;
mod bad_input;
mod catalog;
#[cfg(feature = "engine")]
mod cost;
#[cfg(feature = "engine")]
mod differential;
mod docs;
#[cfg(feature = "engine")]
mod engine;
mod formats;
mod grammar_cli;
mod ingest_corpus;
mod oracle;
#[cfg(feature = "engine")]
mod scale;
#[cfg(feature = "engine")]
mod server;
#[cfg(feature = "engine")]
mod service;
#[cfg(feature = "engine")]
mod snapshot;
#[cfg(feature = "engine")]
mod sql_scope;
mod support;
mod synth;
mod usage_cases;
