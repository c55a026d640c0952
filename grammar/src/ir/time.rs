//! Time literals: relative (`7d`), `today`/`yesterday`, absolute dates and times, each parsed
//! once into numbers. The lowering applies "now" and the zone (`QUARRY_NOW`, `--tz`).

use serde::{Serialize, Serializer};

/// A time literal; the lowering turns it into an instant with `QUARRY_NOW` and `--tz`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "date")]
pub enum DateLit {
    /// Now minus an amount.
    Relative {
        /// How many units.
        amount: u32,
        /// s, m (minutes), h, d, w, mo, y.
        unit: DurationUnit,
    },
    /// Start of today (local zone).
    Today,
    /// Start of yesterday.
    Yesterday,
    /// An ISO date (`2026-06-30`) or RFC 3339 timestamp.
    Absolute {
        /// The text as written.
        text: String,
        /// Year.
        year: u16,
        /// Month 1-12.
        month: u8,
        /// Day 1-31.
        day: u8,
        /// The time of day, when one was given (shown as `has_time`).
        #[serde(rename = "has_time", serialize_with = "is_some")]
        time: Option<TimeOfDay>,
    },
}

impl DateLit {
    /// Whether the literal names a whole day (`2026-06-30`, `today`, `yesterday`): an inclusive
    /// upper bound on it runs through the day's end.
    pub fn is_whole_day(&self) -> bool {
        matches!(
            self,
            DateLit::Absolute { time: None, .. } | DateLit::Today | DateLit::Yesterday
        )
    }
}

/// The unit of a relative time (`7d`, `12h`, `3mo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum DurationUnit {
    /// Seconds (`s`).
    #[serde(rename = "s")]
    Seconds,
    /// Minutes (`m`, `min`).
    #[serde(rename = "m")]
    Minutes,
    /// Hours (`h`).
    #[serde(rename = "h")]
    Hours,
    /// Days (`d`).
    #[serde(rename = "d")]
    Days,
    /// Weeks (`w`).
    #[serde(rename = "w")]
    Weeks,
    /// Months of 30 days (`mo`).
    #[serde(rename = "mo")]
    Months,
    /// Years of 365 days (`y`).
    #[serde(rename = "y")]
    Years,
}

impl DurationUnit {
    /// The unit as written in its canonical form (`d`, `mo`).
    pub fn as_str(self) -> &'static str {
        match self {
            DurationUnit::Seconds => "s",
            DurationUnit::Minutes => "m",
            DurationUnit::Hours => "h",
            DurationUnit::Days => "d",
            DurationUnit::Weeks => "w",
            DurationUnit::Months => "mo",
            DurationUnit::Years => "y",
        }
    }

    /// Seconds in one unit (a month is 30 days, a year 365).
    pub fn seconds(self) -> i64 {
        match self {
            DurationUnit::Seconds => 1,
            DurationUnit::Minutes => 60,
            DurationUnit::Hours => 3_600,
            DurationUnit::Days => 86_400,
            DurationUnit::Weeks => 7 * 86_400,
            DurationUnit::Months => 30 * 86_400,
            DurationUnit::Years => 365 * 86_400,
        }
    }
}

impl std::fmt::Display for DurationUnit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A time of day, with the zone offset when one was written (`Z`, `+02:00`); without one it is a
/// wall-clock time in the query's zone (`--tz`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TimeOfDay {
    /// Hour 0-23.
    pub hour: u8,
    /// Minute 0-59.
    pub minute: u8,
    /// Second 0-60 (60: a leap second).
    pub second: u8,
    /// Milliseconds 0-999 (a longer fraction is truncated).
    pub millis: u16,
    /// Minutes east of UTC, when the text gives an offset.
    pub offset_minutes: Option<i16>,
}

fn is_some<S: Serializer>(time: &Option<TimeOfDay>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bool(time.is_some())
}
