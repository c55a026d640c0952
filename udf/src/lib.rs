//! Kernels of the functions quarry's query language needs, as plain Rust over slices and strings:
//! the exact nearest-rank percentile (`pNN`), the literal, case-insensitive,
//! whitespace-flexible text match of `spec/session-query.md`, and the credential masking of
//! [`mask`] (`mask_credentials`) and time buckets in a zone by integer arithmetic ([`buckets`],
//! behind `date_trunc`).
//!
//! The DataFusion wrappers (an `AggregateUDF` with a `GroupsAccumulator`, a `ScalarUDF`) call
//! these, so the semantics live in one place and are tested here against brute-force oracles.
//! They live in [`functions`].
//! This crate knows nothing about the language or the archive.

pub mod buckets;
pub mod functions;
pub mod mask;
pub mod percentile;
pub mod text_match;

pub use mask::mask_credentials;
pub use percentile::{nearest_rank, nearest_rank_by, nearest_rank_index};
pub use text_match::TextPattern;

/// A small deterministic generator for the unit tests (xorshift64), so each test's random
/// inputs are the same on every run.
#[cfg(test)]
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}
