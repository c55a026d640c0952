//! quarry's end-to-end tests: one binary, one module per topic.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod accounting;
mod agents;
mod bad_input;
mod catalog;
mod cost;
mod dashboard;
mod differential;
mod docs;
mod engine;
mod facets;
mod formats;
mod fuzz;
mod grammar_cli;
mod ingest_corpus;
mod judge;
mod live;
mod oracle;
mod pages;
mod plans;
mod read;
mod scale;
mod search;
mod server;
mod service;
mod snapshot;
mod sql_scope;
mod support;
mod synth;
mod tail;
mod trace;
mod usage_cases;
mod web;
