//! Time buckets in a zone (`date_trunc` to an hour, day, week, month, quarter or year) with
//! integer arithmetic per row, giving exactly the answers of DataFusion's `date_trunc`.
//!
//! DataFusion truncates a zoned timestamp row by row through chrono: the zone's offset is
//! looked up, the local time truncated field by field, and the local bucket start mapped back to
//! an instant (a gap moves it by three hours and back; of two instants of an ambiguous local time
//! it takes the one with the row's offset, else the later). A zone's offset changes only a few
//! times over an archive's span, so here the changes near a batch's time range are found once
//! (and kept per zone, in chunks of about seven weeks), and each row is placed by comparison:
//!
//! 1. the row's offset: the segment of constant offset it falls in (the previous row's segment
//!    is checked first, so sorted data costs two comparisons);
//! 2. the local bucket start: the row plus its offset, truncated by division (Howard Hinnant's
//!    civil-date arithmetic for months, quarters and years);
//! 3. back to an instant: the local start minus the offset, when the local start lies outside
//!    every gap and overlap of the zone and the instant has that offset; otherwise (a bucket that
//!    starts in a gap or an overlap) DataFusion's rule, through chrono. The previous row's answer
//!    is reused while the local start and offset repeat.
//!
//! A zone without changes in the range (UTC, a fixed offset, a zone without daylight saving)
//! takes one loop of `(t + offset) - (t + offset) mod size - offset`.
//!
//! Offset changes are found by looking the offset up every hour and bisecting to the second
//! where two lookups differ. An hour is far below the closest two offset changes of the zone
//! database between 1900 and 2100 (about four days, Africa/Freetown in 1939); a change and its
//! reversal within one hour would be missed. Batches whose times lie outside about 1685..2255
//! (where DataFusion's nanosecond arithmetic overflows or nears overflowing) are left to
//! DataFusion, so its errors stay its own.
//!
//! This module must not know the language or the archive.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, LocalResult, NaiveDateTime, Offset, TimeDelta, TimeZone};
use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::buffer::NullBuffer;

/// A bucket size of `date_trunc` that depends on the zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bucket {
    /// The hour (in a zone with a fractional offset, such as Asia/Kathmandu, the local hour).
    Hour,
    /// The local day.
    Day,
    /// The week from Monday.
    Week,
    /// The calendar month.
    Month,
    /// The calendar quarter.
    Quarter,
    /// The calendar year.
    Year,
}

impl Bucket {
    /// The bucket `date_trunc` names so (case-insensitive, as DataFusion reads it); `None` for
    /// the sizes that do not depend on the zone (second and finer) and for unknown names.
    pub fn parse(name: &str) -> Option<Bucket> {
        Some(match name.to_lowercase().as_str() {
            "hour" => Bucket::Hour,
            "day" => Bucket::Day,
            "week" => Bucket::Week,
            "month" => Bucket::Month,
            "quarter" => Bucket::Quarter,
            "year" => Bucket::Year,
            _ => return None,
        })
    }

    /// The start of the bucket of the local time `local`, both counted in units of which a
    /// second has `per_second` since 1970-01-01T00:00 local.
    pub fn truncate_local(self, local: i64, per_second: i64) -> i64 {
        let day = SECONDS_PER_DAY * per_second;
        if self == Bucket::Hour {
            let hour = 3_600 * per_second;
            return local.wrapping_sub(local.rem_euclid(hour));
        }
        let days = local.div_euclid(day);
        let start = match self {
            Bucket::Hour | Bucket::Day => days,
            // 1970-01-01 was a Thursday: three days after a Monday.
            Bucket::Week => days - (days + 3).rem_euclid(7),
            Bucket::Month => {
                let (_, _, day_of_month) = civil_from_days(days);
                days - (day_of_month - 1)
            }
            Bucket::Quarter => {
                let (year, month, _) = civil_from_days(days);
                days_from_civil(year, 1 + 3 * ((month - 1) / 3), 1)
            }
            Bucket::Year => {
                let (year, _, _) = civil_from_days(days);
                days_from_civil(year, 1, 1)
            }
        };
        start.wrapping_mul(day)
    }
}

const SECONDS_PER_DAY: i64 = 86_400;

/// The longest a bucket reaches back before its row (a leap year and the largest offset change),
/// so the offsets known around a batch cover every bucket start's instant.
const REACH_BACK: i64 = 368 * SECONDS_PER_DAY;
/// The longest a local time lies ahead of its instant (offsets stay within a day).
const REACH_AHEAD: i64 = 2 * SECONDS_PER_DAY;

/// The nanoseconds within which DataFusion's `date_trunc` arithmetic stays far from overflow
/// (about 1684-10 to 2255-03); batches with a time outside are left to DataFusion.
const SAFE_NANOS: i64 = 9_000_000_000_000_000_000;

/// Seconds per chunk of the offset cache (2^22 s, about 48.5 days).
const CHUNK_SECONDS: i64 = 1 << 22;
/// How far apart the offset is looked up within a chunk.
const PROBE_SECONDS: i64 = 3_600;

/// Why a batch is left to DataFusion.
#[derive(Debug, PartialEq, Eq)]
pub enum Unhandled {
    /// A time lies outside the safe range (see the module docs).
    OutOfRange,
    /// A bucket start that DataFusion's rule cannot place (a gap within a gap): DataFusion
    /// reports it.
    Unplaceable,
}

/// The offset changes of zones, found once and kept (see the module docs). One cache serves
/// every query of a process; it grows by one small vector per zone and seven weeks touched.
#[derive(Debug, Default)]
pub struct OffsetCache {
    chunks: Mutex<Chunks>,
}

/// Per zone name and chunk number: the offset at the chunk's start and every change within it,
/// as (second, new offset).
type Chunks = HashMap<(Arc<str>, i64), Arc<[(i64, i32)]>>;

impl OffsetCache {
    /// Segments of constant offset covering the seconds `from..=to` in zone `tz` (named `name`).
    fn segments(&self, name: &Arc<str>, tz: &Tz, from: i64, to: i64) -> Segments {
        let mut starts = Vec::new();
        let mut offsets: Vec<i32> = Vec::new();
        for chunk in from.div_euclid(CHUNK_SECONDS)..=to.div_euclid(CHUNK_SECONDS) {
            for &(start, offset) in self.chunk(name, tz, chunk).iter() {
                if offsets.last() != Some(&offset) {
                    starts.push(start);
                    offsets.push(offset);
                }
            }
        }
        starts[0] = i64::MIN;
        Segments { starts, offsets }
    }

    /// The offset at the start of `chunk` and every change within it, as (second, new offset).
    fn chunk(&self, name: &Arc<str>, tz: &Tz, chunk: i64) -> Arc<[(i64, i32)]> {
        let key = (Arc::clone(name), chunk);
        if let Some(found) = self.lock().get(&key) {
            return Arc::clone(found);
        }
        let found: Arc<[(i64, i32)]> = chunk_changes(tz, chunk).into();
        self.lock().insert(key, Arc::clone(&found));
        found
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Chunks> {
        // A panic elsewhere while holding the lock leaves a map that is still consistent.
        self.chunks.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The offset of `tz` at second `second` since the epoch.
fn offset_at(tz: &Tz, second: i64) -> i32 {
    let instant = DateTime::from_timestamp(second, 0).unwrap_or_default();
    tz.offset_from_utc_datetime(&instant.naive_utc())
        .fix()
        .local_minus_utc()
}

fn chunk_changes(tz: &Tz, chunk: i64) -> Vec<(i64, i32)> {
    let start = chunk * CHUNK_SECONDS;
    let end = start + CHUNK_SECONDS;
    let mut offset = offset_at(tz, start);
    let mut changes = vec![(start, offset)];
    let mut at = start;
    while at < end {
        let next = (at + PROBE_SECONDS).min(end - 1);
        let next_offset = offset_at(tz, next);
        // Every change between `at` and `next`: bisect to the first second whose offset
        // differs, then go on from there.
        while next_offset != offset {
            let (mut same, mut differs) = (at, next);
            while differs - same > 1 {
                let mid = same + (differs - same) / 2;
                if offset_at(tz, mid) == offset {
                    same = mid;
                } else {
                    differs = mid;
                }
            }
            offset = offset_at(tz, differs);
            changes.push((differs, offset));
            at = differs;
        }
        if next == end - 1 {
            break;
        }
        at = next;
    }
    changes
}

/// Constant-offset segments: segment `i` holds the seconds from `starts[i]` up to the next start.
struct Segments {
    starts: Vec<i64>,
    offsets: Vec<i32>,
}

impl Segments {
    fn locate(&self, second: i64) -> usize {
        self.starts.partition_point(|&s| s <= second) - 1
    }

    /// Whether the local second `local` lies in a gap or an overlap of the zone.
    fn near_change(&self, local: i64) -> bool {
        (1..self.starts.len()).any(|i| {
            let (before, after) = (i64::from(self.offsets[i - 1]), i64::from(self.offsets[i]));
            let at = self.starts[i];
            (at + before.min(after)..at + before.max(after)).contains(&local)
        })
    }
}

/// Truncates every valid time of `values` (units of which a second has `per_second`, since the
/// epoch) to its `bucket` in zone `tz` (named `name`; `None` is UTC), as DataFusion's
/// `date_trunc` would. Slots that `nulls` marks invalid get an unspecified value.
pub fn truncate(
    values: &[i64],
    nulls: Option<&NullBuffer>,
    per_second: i64,
    bucket: Bucket,
    zone: Option<(&Arc<str>, &Tz)>,
    cache: &OffsetCache,
) -> Result<Vec<i64>, Unhandled> {
    let valid = |i: usize| nulls.is_none_or(|n| n.is_valid(i));
    let (mut min, mut max) = (i64::MAX, i64::MIN);
    for (i, &v) in values.iter().enumerate() {
        if valid(i) {
            min = min.min(v);
            max = max.max(v);
        }
    }
    if min > max {
        return Ok(vec![0; values.len()]);
    }
    let nanos_per_unit = 1_000_000_000 / per_second;
    let safe = |v: i64| {
        v.checked_mul(nanos_per_unit)
            .is_some_and(|n| (-SAFE_NANOS..=SAFE_NANOS).contains(&n))
    };
    if !safe(min) || !safe(max) {
        return Err(Unhandled::OutOfRange);
    }
    let Some((name, tz)) = zone else {
        return Ok(fixed(values, per_second, bucket, 0));
    };
    let (from, to) = (min.div_euclid(per_second), max.div_euclid(per_second));
    let segments = cache.segments(name, tz, from - REACH_BACK, to + REACH_AHEAD);
    if segments.offsets.len() == 1 {
        let offset = i64::from(segments.offsets[0]) * per_second;
        return Ok(fixed(values, per_second, bucket, offset));
    }

    let mut out = Vec::with_capacity(values.len());
    let mut segment = segments.locate(from);
    // The last local bucket start with its offset, and its instant.
    let mut last: Option<(i64, i32, i64)> = None;
    for (i, &v) in values.iter().enumerate() {
        if !valid(i) {
            out.push(0);
            continue;
        }
        let second = v.div_euclid(per_second);
        let in_segment = segments.starts[segment] <= second
            && segments.starts.get(segment + 1).is_none_or(|&s| second < s);
        if !in_segment {
            segment = segments.locate(second);
        }
        let offset = segments.offsets[segment];
        let local = bucket.truncate_local(v + i64::from(offset) * per_second, per_second);
        let instant = match last {
            Some((l, o, instant)) if l == local && o == offset => instant,
            _ => {
                let instant = back_to_instant(&segments, tz, local, offset, per_second)?;
                last = Some((local, offset, instant));
                instant
            }
        };
        out.push(instant);
    }
    Ok(out)
}

/// Every row in a zone of one offset (`offset` in the values' units).
fn fixed(values: &[i64], per_second: i64, bucket: Bucket, offset: i64) -> Vec<i64> {
    // Wrapping: invalid slots may hold anything, and must not overflow.
    values
        .iter()
        .map(|&v| {
            bucket
                .truncate_local(v.wrapping_add(offset), per_second)
                .wrapping_sub(offset)
        })
        .collect()
}

/// The instant of the local bucket start `local` of a row whose offset was `offset`.
fn back_to_instant(
    segments: &Segments,
    tz: &Tz,
    local: i64,
    offset: i32,
    per_second: i64,
) -> Result<i64, Unhandled> {
    let local_second = local.div_euclid(per_second);
    let guess = local_second - i64::from(offset);
    if !segments.near_change(local_second) && segments.offsets[segments.locate(guess)] == offset {
        return Ok(local - i64::from(offset) * per_second);
    }
    datafusion_rule(tz, local_second, offset)
        .map(|second| second * per_second)
        .ok_or(Unhandled::Unplaceable)
}

/// DataFusion's mapping of a truncated local time (whole seconds) back to an instant.
fn datafusion_rule(tz: &Tz, local_second: i64, offset: i32) -> Option<i64> {
    let local: NaiveDateTime = DateTime::from_timestamp(local_second, 0)?.naive_utc();
    let instant = match local.and_local_timezone(*tz) {
        LocalResult::Single(instant) => instant,
        LocalResult::Ambiguous(earlier, later) => {
            if earlier.offset().fix().local_minus_utc() == offset {
                earlier
            } else {
                later
            }
        }
        LocalResult::None => {
            let three_hours = TimeDelta::try_hours(3)?;
            (local - three_hours).and_local_timezone(*tz).single()? + three_hours
        }
    };
    Some(instant.timestamp())
}

/// Days since 1970-01-01 as a proleptic Gregorian (year, month 1-12, day 1-31), by Howard
/// Hinnant's `civil_from_days` (<https://howardhinnant.github.io/date_algorithms.html>).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

/// The inverse of [`civil_from_days`].
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = year - i64::from(month <= 2);
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month_index = if month > 2 { month - 3 } else { month + 9 };
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    era * 146_097 + year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year - 719_468
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::str::FromStr;

    use chrono::{Datelike, NaiveDate};

    use super::*;

    #[test]
    fn civil_dates_round_trip_against_chrono() {
        let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap();
        for days in (-200_000..200_000).step_by(7) {
            let date = epoch + TimeDelta::try_days(days).unwrap();
            let (y, m, d) = civil_from_days(days);
            assert_eq!(
                (y, m, d),
                (
                    i64::from(date.year()),
                    i64::from(date.month()),
                    i64::from(date.day())
                )
            );
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    #[test]
    fn changes_are_found_to_the_second() {
        let name: Arc<str> = "Europe/Warsaw".into();
        let tz = Tz::from_str(&name).unwrap();
        // 2024-03-31 01:00:00 UTC: +01:00 becomes +02:00; 2024-10-27 01:00:00 UTC: back.
        let segments = OffsetCache::default().segments(&name, &tz, 1_704_067_200, 1_735_689_599);
        assert_eq!(segments.offsets, vec![3_600, 7_200, 3_600]);
        assert_eq!(&segments.starts[1..], &[1_711_846_800, 1_729_990_800]);
    }

    #[test]
    fn a_zone_without_changes_is_one_segment() {
        for name in ["+05:45", "UTC", "Asia/Tokyo"] {
            let name: Arc<str> = name.into();
            let tz = Tz::from_str(&name).unwrap();
            let segments = OffsetCache::default().segments(&name, &tz, 0, 100_000_000);
            assert_eq!(segments.offsets.len(), 1, "{name}");
        }
    }
}
