//! Bugs that can be planted in the lowering at run time, each of a different family, so the
//! differential fuzzer (`tests/fuzz/`) can show that it finds them: a flipped comparison, NULLs
//! mishandled under `NOT`, and a day bucket an hour off across a daylight-saving change.
//!
//! They exist only for that test. No flag, setting or environment variable of any front end
//! sets one; a caller of the library has to name one in [`Options`](crate::Options) on purpose.

/// One planted bug.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlantedBug {
    /// `f >= N` lowered as `f > N` (a comparison flipped at its boundary).
    GreaterEqualAsGreater,
    /// `NOT p` lowered as `p IS NOT TRUE`: rows whose column is NULL pass the negation.
    NotKeepsNulls,
    /// Day buckets in a zone with daylight saving computed at the zone's standard offset, so a
    /// day in summer time starts an hour off.
    DayAtStandardOffset,
}

impl PlantedBug {
    /// Every planted bug.
    pub const ALL: [PlantedBug; 3] = [
        PlantedBug::GreaterEqualAsGreater,
        PlantedBug::NotKeepsNulls,
        PlantedBug::DayAtStandardOffset,
    ];
}
