//! The clock relative dates are read against: `QUARRY_NOW` (RFC 3339) when set, else the system
//! time; day boundaries (`today`, absolute dates) and time buckets in a zone (`--tz`: `UTC`,
//! `local`, an offset like `+02:00`, or an IANA name like `Europe/Warsaw` whose daylight-saving
//! changes are followed).

use std::str::FromStr;

use chrono::{DateTime, Duration, NaiveDate, TimeZone, Utc};
use datafusion::arrow::array::timezone::Tz;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{Expr, lit};
use quarry_grammar::ir::DateLit;
use quarry_providers::sqlite::TIME_ZONE;

/// Now and the zone day boundaries are read in.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// The current instant.
    pub now: DateTime<Utc>,
    /// The zone of day boundaries and time buckets.
    pub zone: Tz,
}

/// A clock setting that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ClockError(pub String);

impl Clock {
    /// From the environment: `QUARRY_NOW` and `tz` (`UTC`, `local`, `+02:00`, `-0530`).
    pub fn from_env(tz: Option<&str>) -> Result<Self, ClockError> {
        let now = match std::env::var("QUARRY_NOW") {
            Ok(text) if !text.is_empty() => DateTime::parse_from_rfc3339(&text)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|e| ClockError(format!("QUARRY_NOW must be RFC 3339 ({e}): {text}")))?,
            _ => Utc::now(),
        };
        let zone = parse_zone(tz, now)?;
        Ok(Clock { now, zone })
    }

    /// Epoch milliseconds of a date literal.
    pub fn millis(&self, date: &DateLit) -> Result<i64, ClockError> {
        let today = self.now.with_timezone(&self.zone).date_naive();
        match date {
            DateLit::Relative { amount, unit } => {
                let delta = Duration::seconds(i64::from(*amount) * unit.seconds());
                Ok((self.now - delta).timestamp_millis())
            }
            DateLit::Today => self.local_midnight(today),
            DateLit::Yesterday => self.local_midnight(today - Duration::days(1)),
            DateLit::Absolute {
                text,
                year,
                month,
                day,
                time,
            } => {
                let d =
                    NaiveDate::from_ymd_opt(i32::from(*year), u32::from(*month), u32::from(*day))
                        .ok_or_else(|| ClockError(format!("invalid date {text}")))?;
                let Some(t) = time else {
                    return self.local_midnight(d);
                };
                // A leap second (:60) is the last second's 1000th millisecond onwards.
                let (second, millis) = match t.second {
                    60 => (59, 1000 + u32::from(t.millis)),
                    s => (u32::from(s), u32::from(t.millis)),
                };
                let naive = d
                    .and_hms_milli_opt(u32::from(t.hour), u32::from(t.minute), second, millis)
                    .ok_or_else(|| ClockError(format!("invalid time {text}")))?;
                match t.offset_minutes {
                    Some(offset) => {
                        Ok(naive.and_utc().timestamp_millis() - i64::from(offset) * 60_000)
                    }
                    None => self
                        .local_millis(naive)
                        .ok_or_else(|| ClockError(format!("invalid time {text}"))),
                }
            }
        }
    }

    /// Epoch milliseconds of the end of the day named by a whole-day literal (for inclusive
    /// `until:` / `between` upper bounds on whole days): the next local midnight less one
    /// millisecond, so days of 23 or 25 hours end where they do. Other literals end where they
    /// start.
    pub fn end_of_day_millis(&self, date: &DateLit) -> Result<i64, ClockError> {
        let start = self.millis(date)?;
        if !date.is_whole_day() {
            return Ok(start);
        }
        let day = chrono::DateTime::from_timestamp_millis(start)
            .ok_or_else(|| ClockError("invalid date".into()))?
            .with_timezone(&self.zone)
            .date_naive();
        Ok(self.local_midnight(day + Duration::days(1))? - 1)
    }

    /// The local date (`YYYY-MM-DD`) of an instant in epoch milliseconds, in the clock's zone.
    pub fn local_date(&self, ms: i64) -> Option<String> {
        let instant = Utc.timestamp_millis_opt(ms).single()?;
        Some(instant.with_timezone(&self.zone).date_naive().to_string())
    }

    /// Epoch milliseconds of the local midnight starting `day`.
    fn local_midnight(&self, day: NaiveDate) -> Result<i64, ClockError> {
        day.and_hms_opt(0, 0, 0)
            .and_then(|midnight| self.local_millis(midnight))
            .ok_or_else(|| ClockError(format!("invalid local date {day}")))
    }

    /// Epoch milliseconds of a local wall-clock time: the earlier instant when the time occurs
    /// twice (clocks turned back), the first instant after the gap when it does not occur
    /// (clocks turned forward).
    fn local_millis(&self, naive: chrono::NaiveDateTime) -> Option<i64> {
        (0..=180).find_map(|minutes| {
            self.zone
                .from_local_datetime(&(naive + Duration::minutes(minutes)))
                .earliest()
                .map(|t| t.timestamp_millis())
        })
    }

    /// The zone as DataFusion's time zone casts accept it: an IANA name or `+HH:MM`.
    pub fn zone_name(&self) -> String {
        self.zone.to_string()
    }

    /// The zone's standard offset as `+HH:MM` (the smaller of its offsets on 1 January and
    /// 1 July of this year): what a lowering that ignores daylight saving would use. Only the
    /// planted bug [`PlantedBug::DayAtStandardOffset`](super::planted::PlantedBug) reads it.
    pub fn standard_offset_name(&self) -> String {
        use chrono::{Datelike, Offset};
        let seconds = [1, 7]
            .into_iter()
            .filter_map(|month| NaiveDate::from_ymd_opt(self.now.year(), month, 1))
            .filter_map(|day| day.and_hms_opt(0, 0, 0))
            .map(|t| {
                self.zone
                    .offset_from_utc_datetime(&t)
                    .fix()
                    .local_minus_utc()
            })
            .min()
            .unwrap_or(0);
        let sign = if seconds < 0 { '-' } else { '+' };
        let seconds = seconds.abs();
        format!("{sign}{:02}:{:02}", seconds / 3600, (seconds % 3600) / 60)
    }
}

/// A literal comparable with a time column (every time column of the archive is an Arrow
/// timestamp in milliseconds, UTC): epoch milliseconds as such a timestamp.
pub fn time_lit(ms: i64) -> Expr {
    lit(ScalarValue::TimestampMillisecond(
        Some(ms),
        Some(TIME_ZONE.into()),
    ))
}

const ZONE_HELP: &str =
    "--tz takes UTC, local, an offset like +02:00 or a zone name like Europe/Warsaw";

/// Checks that `tz` names a zone (`UTC`, `local`, an offset, an IANA name).
pub fn check_zone(tz: &str) -> Result<(), ClockError> {
    parse_zone(Some(tz), Utc::now()).map(|_| ())
}

fn parse_zone(tz: Option<&str>, now: DateTime<Utc>) -> Result<Tz, ClockError> {
    let tz = tz
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .unwrap_or("local");
    let zone =
        |name: &str| Tz::from_str(name).map_err(|_| ClockError(format!("{ZONE_HELP}, not {tz}")));
    match tz {
        "local" => {
            // The TZ variable or /etc/localtime when they name a zone (so daylight saving is
            // followed), else the system's current offset.
            let from_link = std::fs::read_link("/etc/localtime").ok().and_then(|p| {
                let p = p.to_string_lossy().into_owned();
                p.split_once("zoneinfo/").map(|(_, name)| name.to_string())
            });
            if let Some(named) = std::env::var("TZ")
                .ok()
                .into_iter()
                .chain(from_link)
                .find_map(|t| Tz::from_str(t.trim_start_matches(':')).ok())
            {
                return Ok(named);
            }
            let secs = now.with_timezone(&chrono::Local).offset().local_minus_utc();
            let sign = if secs < 0 { '-' } else { '+' };
            let secs = secs.abs();
            zone(&format!(
                "{sign}{:02}:{:02}",
                secs / 3600,
                (secs % 3600) / 60
            ))
        }
        "UTC" | "utc" | "Z" => zone("+00:00"),
        other => zone(other),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use quarry_grammar::dates::parse_date;

    fn warsaw() -> Clock {
        Clock {
            now: Utc::now(),
            zone: Tz::from_str("Europe/Warsaw").unwrap(),
        }
    }

    fn ms(rfc3339: &str) -> i64 {
        DateTime::parse_from_rfc3339(rfc3339)
            .unwrap()
            .timestamp_millis()
    }

    #[test]
    fn whole_days_follow_daylight_saving() {
        let clock = warsaw();
        let hour = 3_600_000;
        // Clocks go forward on 2025-03-30 (23 hours) and back on 2025-10-26 (25 hours).
        for (day, hours, midnight) in [
            ("2025-03-30", 23, "2025-03-29T23:00:00Z"),
            ("2025-10-26", 25, "2025-10-25T22:00:00Z"),
            ("2025-06-01", 24, "2025-05-31T22:00:00Z"),
        ] {
            let date = parse_date(day).unwrap();
            let start = clock.millis(&date).unwrap();
            assert_eq!(start, ms(midnight), "{day}");
            assert_eq!(
                clock.end_of_day_millis(&date).unwrap() - start,
                hours * hour - 1,
                "{day}"
            );
        }
    }

    #[test]
    fn repeated_and_skipped_local_times_resolve() {
        let clock = warsaw();
        // 02:30 happens twice on 2025-10-26: the earlier one (summer time, +02:00).
        let twice = parse_date("2025-10-26T02:30:00").unwrap();
        assert_eq!(clock.millis(&twice).unwrap(), ms("2025-10-26T00:30:00Z"));
        // 02:30 does not happen on 2025-03-30: the first instant after the gap, 03:00 (+02:00).
        let skipped = parse_date("2025-03-30T02:30:00").unwrap();
        assert_eq!(clock.millis(&skipped).unwrap(), ms("2025-03-30T01:00:00Z"));
    }

    #[test]
    fn zones_parse_or_explain_themselves() {
        let now = Utc::now();
        assert_eq!(parse_zone(Some("UTC"), now).unwrap().to_string(), "+00:00");
        assert_eq!(
            parse_zone(Some("+05:30"), now).unwrap().to_string(),
            "+05:30"
        );
        assert_eq!(
            parse_zone(Some("America/New_York"), now)
                .unwrap()
                .to_string(),
            "America/New_York"
        );
        let err = parse_zone(Some("Mars/Olympus"), now).unwrap_err();
        assert!(err.0.contains("Europe/Warsaw"), "{}", err.0);
    }
}
