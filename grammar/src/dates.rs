//! Date and duration parsing: `7d`, `12h`, `today`, `2026-06-30`, `2026-06-30T10:00:00Z` →
//! [`DateLit`], every part a number. This module owns no resolution and no clock: "now" and the
//! zone are the lowering's.

use crate::ir::{DateLit, DurationUnit, TimeOfDay};

/// Parses a date value: `7d`, `12h`, `today`, `2026-06-30`, `2026-06-30T10:00:00Z`.
pub fn parse_date(s: &str) -> Option<DateLit> {
    match s {
        "today" => return Some(DateLit::Today),
        "yesterday" => return Some(DateLit::Yesterday),
        "now" => {
            return Some(DateLit::Relative {
                amount: 0,
                unit: DurationUnit::Seconds,
            });
        }
        _ => {}
    }
    let digits = s.chars().take_while(|c| c.is_ascii_digit()).count();
    if digits > 0 && digits < s.len() && !s.contains('-') {
        let (num, unit) = s.split_at(digits);
        let unit = parse_duration_unit(unit)?;
        let amount = num.parse::<u32>().ok()?;
        return Some(DateLit::Relative { amount, unit });
    }
    let (date, time) = match s.split_once(['T', ' ']) {
        Some((d, t)) => (d, Some(t)),
        None => (s, None),
    };
    let (year, month, day) = parse_ymd(date)?;
    let time = match time {
        Some(t) => Some(parse_time_of_day(t)?),
        None => None,
    };
    Some(DateLit::Absolute {
        text: s.to_string(),
        year,
        month,
        day,
        time,
    })
}

/// The unit of a relative time: `s`, `m`/`min`, `h`, `d`, `w`, `mo`, `y`.
pub fn parse_duration_unit(unit: &str) -> Option<DurationUnit> {
    Some(match unit {
        "s" => DurationUnit::Seconds,
        "m" | "min" => DurationUnit::Minutes,
        "h" => DurationUnit::Hours,
        "d" => DurationUnit::Days,
        "w" => DurationUnit::Weeks,
        "mo" => DurationUnit::Months,
        "y" => DurationUnit::Years,
        _ => return None,
    })
}

/// `YYYY-MM-DD`, a real calendar day.
fn parse_ymd(date: &str) -> Option<(u16, u8, u8)> {
    let mut parts = date.split('-');
    let y = parts.next()?;
    let m = parts.next()?;
    let d = parts.next()?;
    if parts.next().is_some() || y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let year = y.parse::<u16>().ok()?;
    let month = m.parse::<u8>().ok()?;
    let day = d.parse::<u8>().ok()?;
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let max_day = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    (day != 0 && day <= max_day).then_some((year, month, day))
}

/// `hh:mm[:ss[.fff]][Z|±hh:mm]`.
fn parse_time_of_day(t: &str) -> Option<TimeOfDay> {
    let (clock, zone) = match t.find(['Z', '+', '-']) {
        Some(i) => (t.get(..i)?, t.get(i..)?),
        None => (t, ""),
    };
    let mut parts = clock.split(':');
    let hour = two_digits(parts.next()?, 23)?;
    let minute = two_digits(parts.next()?, 59)?;
    let (second, millis) = match parts.next() {
        Some(p) => {
            let (whole, fraction) = match p.split_once('.') {
                Some((w, f)) => (w, Some(f)),
                None => (p, None),
            };
            (
                two_digits(whole, 60)?,
                fraction.map_or(Some(0), parse_millis)?,
            )
        }
        None => (0, 0),
    };
    if parts.next().is_some() {
        return None;
    }
    Some(TimeOfDay {
        hour,
        minute,
        second,
        millis,
        offset_minutes: parse_offset(zone)?,
    })
}

/// Two ASCII digits, at most `max`.
fn two_digits(p: &str, max: u8) -> Option<u8> {
    if p.len() != 2 || !p.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    p.parse::<u8>().ok().filter(|n| *n <= max)
}

/// A decimal fraction of a second → milliseconds (truncated).
fn parse_millis(fraction: &str) -> Option<u16> {
    if fraction.is_empty() || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let first3: String = fraction.chars().chain("00".chars()).take(3).collect();
    first3.parse::<u16>().ok()
}

/// `` (none), `Z`, or `±hh:mm` → minutes east of UTC.
fn parse_offset(zone: &str) -> Option<Option<i16>> {
    match zone {
        "" => return Some(None),
        "Z" => return Some(Some(0)),
        _ => {}
    }
    let sign: i16 = match zone.get(..1)? {
        "+" => 1,
        "-" => -1,
        _ => return None,
    };
    let (hh, mm) = zone.get(1..)?.split_once(':')?;
    let hours = i16::from(two_digits(hh, 23)?);
    let minutes = i16::from(two_digits(mm, 59)?);
    Some(Some(sign * (hours * 60 + minutes)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn time(s: &str) -> Option<TimeOfDay> {
        match parse_date(s)? {
            DateLit::Absolute { time, .. } => time,
            _ => None,
        }
    }

    #[test]
    fn relative_times_are_typed() {
        assert_eq!(
            parse_date("7d"),
            Some(DateLit::Relative {
                amount: 7,
                unit: DurationUnit::Days
            })
        );
        assert_eq!(
            parse_date("15min"),
            Some(DateLit::Relative {
                amount: 15,
                unit: DurationUnit::Minutes
            })
        );
        assert_eq!(parse_date("3mo").map(|d| d.is_whole_day()), Some(false));
        assert_eq!(parse_date("7x"), None);
    }

    #[test]
    fn absolute_dates_carry_their_parts() {
        assert_eq!(
            parse_date("2026-01-02"),
            Some(DateLit::Absolute {
                text: "2026-01-02".into(),
                year: 2026,
                month: 1,
                day: 2,
                time: None
            })
        );
        assert_eq!(parse_date("2026-02-29"), None);
        assert_eq!(
            parse_date("2024-02-29").map(|d| d.is_whole_day()),
            Some(true)
        );
    }

    #[test]
    fn times_of_day_carry_fraction_and_offset() {
        let t = time("2026-01-02T10:20:30.1234+05:30").unwrap();
        assert_eq!((t.hour, t.minute, t.second, t.millis), (10, 20, 30, 123));
        assert_eq!(t.offset_minutes, Some(330));
        assert_eq!(time("2026-01-02T10:20Z").unwrap().offset_minutes, Some(0));
        assert_eq!(
            time("2026-01-02T10:20-01:00").unwrap().offset_minutes,
            Some(-60)
        );
        assert_eq!(time("2026-01-02T10:20:05").unwrap().offset_minutes, None);
        assert_eq!(time("2026-01-02T10:20:05.5").unwrap().millis, 500);
        for bad in [
            "2026-01-02T24:00",
            "2026-01-02T10:60",
            "2026-01-02T10:00:00.",
            "2026-01-02T10:00:00.x",
            "2026-01-02T10:00+2:00",
            "2026-01-02T10:00+ab:cd",
            "2026-01-02T10",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
    }
}
