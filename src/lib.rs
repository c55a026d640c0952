//! quarry: exact analytical queries over archives of AI-agent sessions.
//!
//! Data flows one way: source files → [`ingest`] → SQLite archive (`quarry_providers`) →
//! (the engine, in its own issue) → output. [`synth`] writes synthetic transcripts in the real
//! on-disk formats so demos and benchmarks go through the same ingest path; [`assertions`] adds
//! tags and notes; [`cli`] is the command line.

pub mod assertions;
pub mod cli;
#[cfg(feature = "engine")]
pub mod engine;
pub mod ingest;
pub mod location;
#[cfg(feature = "engine")]
pub mod lower;
#[cfg(feature = "engine")]
pub mod output;
pub mod synth;
