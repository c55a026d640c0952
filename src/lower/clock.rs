//! The clock relative dates are read against: `QUARRY_NOW` (RFC 3339) when set, else the system
//! time; day boundaries (`today`, absolute dates) and time buckets in a zone (`--tz`: `UTC`,
//! `local`, an offset like `+02:00`, or an IANA name like `Europe/Warsaw` whose daylight-saving
//! changes are followed).

use std::str::FromStr;

use chrono::{DateTime, Duration, NaiveDate, TimeZone, Utc};
use datafusion::arrow::array::timezone::Tz;
use quarry_grammar::resolve::DateLit;

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
        let local_midnight = |d: NaiveDate| -> Result<i64, ClockError> {
            let naive = d
                .and_hms_opt(0, 0, 0)
                .ok_or_else(|| ClockError("invalid date".into()))?;
            self.zone
                .from_local_datetime(&naive)
                .single()
                .map(|t| t.timestamp_millis())
                .ok_or_else(|| ClockError("invalid local date".into()))
        };
        let today = self.now.with_timezone(&self.zone).date_naive();
        match date {
            DateLit::Relative { amount, unit } => {
                let n = i64::from(*amount);
                let delta = match *unit {
                    "s" => Duration::seconds(n),
                    "m" => Duration::minutes(n),
                    "h" => Duration::hours(n),
                    "d" => Duration::days(n),
                    "w" => Duration::weeks(n),
                    "mo" => Duration::days(30 * n),
                    "y" => Duration::days(365 * n),
                    other => return Err(ClockError(format!("unknown time unit {other}"))),
                };
                Ok((self.now - delta).timestamp_millis())
            }
            DateLit::Today => local_midnight(today),
            DateLit::Yesterday => local_midnight(today - Duration::days(1)),
            DateLit::Absolute {
                text,
                year,
                month,
                day,
                has_time,
            } => {
                if *has_time {
                    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
                        return Ok(t.timestamp_millis());
                    }
                    let naive = chrono::NaiveDateTime::parse_from_str(
                        &text.replace(' ', "T"),
                        "%Y-%m-%dT%H:%M:%S%.f",
                    )
                    .or_else(|_| {
                        chrono::NaiveDateTime::parse_from_str(
                            &text.replace(' ', "T"),
                            "%Y-%m-%dT%H:%M",
                        )
                    })
                    .map_err(|e| ClockError(format!("invalid time {text}: {e}")))?;
                    return self
                        .zone
                        .from_local_datetime(&naive)
                        .single()
                        .map(|t| t.timestamp_millis())
                        .ok_or_else(|| ClockError(format!("invalid time {text}")));
                }
                let d =
                    NaiveDate::from_ymd_opt(i32::from(*year), u32::from(*month), u32::from(*day))
                        .ok_or_else(|| ClockError(format!("invalid date {text}")))?;
                local_midnight(d)
            }
        }
    }

    /// Epoch milliseconds of the end of the day named by an absolute date (for inclusive
    /// `until:` / `between` upper bounds on whole days).
    pub fn end_of_day_millis(&self, date: &DateLit) -> Result<i64, ClockError> {
        let start = self.millis(date)?;
        Ok(match date {
            DateLit::Absolute {
                has_time: false, ..
            }
            | DateLit::Today
            | DateLit::Yesterday => start + 86_400_000 - 1,
            _ => start,
        })
    }

    /// The zone as DataFusion's time zone casts accept it: an IANA name or `+HH:MM`.
    pub fn zone_name(&self) -> String {
        self.zone.to_string()
    }
}

const ZONE_HELP: &str =
    "--tz takes UTC, local, an offset like +02:00 or a zone name like Europe/Warsaw";

fn parse_zone(tz: Option<&str>, now: DateTime<Utc>) -> Result<Tz, ClockError> {
    let tz = tz
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .unwrap_or("local");
    let zone =
        |name: &str| Tz::from_str(name).map_err(|_| ClockError(format!("{ZONE_HELP}, not {tz}")));
    match tz {
        "local" => {
            // The TZ variable when it names a zone, else the system's current offset.
            if let Some(named) = std::env::var("TZ")
                .ok()
                .and_then(|t| Tz::from_str(t.trim_start_matches(':')).ok())
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
