//! Integration tests of quarry-grammar: conformance corpus, diagnostics snapshots, registry,
//! corrections, docs drift and a bounded robustness check.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod conformance;
mod corrections;
mod docs;
mod ir;
mod registry;
mod robustness;
mod snapshots;
mod tokens;
