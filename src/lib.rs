//! quarry: exact analytical queries over archives of AI-agent sessions.
//!
//! Data flows one way: source files → [`ingest`] → SQLite archive (`quarry_providers`) →
//! a query lowered to a DataFusion plan (`lower`) → executed (`engine`) → written (`output`, in
//! a [`format::Format`]). [`synth`] writes synthetic transcripts in the real
//! on-disk formats so demos and benchmarks go through the same ingest path; [`assertions`] adds
//! tags and notes; [`cli`] is the command line.

pub mod assertions;
pub mod cli;
#[cfg(feature = "engine")]
pub mod engine;
pub mod format;
pub mod ingest;
pub mod location;
#[cfg(feature = "engine")]
pub mod lower;
#[cfg(feature = "engine")]
pub mod output;
pub mod synth;
