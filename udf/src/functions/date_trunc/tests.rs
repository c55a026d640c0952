//! `date_trunc` against DataFusion's built-in and against an independent oracle: the local time
//! truncated field by field with chrono-tz, mapped back by DataFusion's documented rule, over
//! random instants between 1900 and 2100 and the hours around every offset change of the zone
//! database, read by a separate path (the system's TZif files and their POSIX rule for the years
//! after the last listed change).

#![allow(clippy::unwrap_used)]

use std::str::FromStr;
use std::sync::Arc;

use chrono::{
    DateTime, Datelike, FixedOffset, LocalResult, NaiveDate, NaiveDateTime, Offset, TimeDelta,
    TimeZone, Timelike,
};
use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::array::{Array, ArrayRef, TimestampMillisecondArray};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::{DataType, Field, TimeUnit};
use datafusion::common::config::ConfigOptions;
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF};

use super::date_trunc_udf;

use crate::buckets::{Bucket, OffsetCache, truncate};

const BUCKETS: [&str; 6] = ["hour", "day", "week", "month", "quarter", "year"];
/// 1900-01-01 and 2100-01-01 in milliseconds.
const FROM_MS: i64 = -2_208_988_800_000;
const TO_MS: i64 = 4_102_444_800_000;

fn invoke(f: &ScalarUDF, granularity: &str, array: ArrayRef) -> Result<ArrayRef> {
    let field = Arc::new(Field::new("t", array.data_type().clone(), true));
    let rows = array.len();
    let out = f.invoke_with_args(ScalarFunctionArgs {
        args: vec![
            ColumnarValue::Scalar(ScalarValue::Utf8(Some(granularity.into()))),
            ColumnarValue::Array(array),
        ],
        arg_fields: vec![
            Arc::new(Field::new("g", DataType::Utf8, false)),
            field.clone(),
        ],
        number_rows: rows,
        return_field: field,
        config_options: Arc::new(ConfigOptions::default()),
    })?;
    out.into_array(rows)
}

/// A zone as the oracle reads it: a fixed offset or a chrono-tz zone.
enum OracleZone {
    Fixed(FixedOffset),
    Named(chrono_tz::Tz),
}

impl OracleZone {
    fn parse(name: &str) -> OracleZone {
        match name.strip_prefix(['+', '-']) {
            Some(rest) => {
                let (h, m) = rest.split_once(':').unwrap();
                let seconds = (h.parse::<i32>().unwrap() * 60 + m.parse::<i32>().unwrap()) * 60;
                let sign = if name.starts_with('-') { -1 } else { 1 };
                OracleZone::Fixed(FixedOffset::east_opt(sign * seconds).unwrap())
            }
            None => OracleZone::Named(chrono_tz::Tz::from_str(name).unwrap()),
        }
    }

    fn bucket(&self, ms: i64, bucket: &str) -> Option<i64> {
        match self {
            OracleZone::Fixed(tz) => oracle(tz, ms, bucket),
            OracleZone::Named(tz) => oracle(tz, ms, bucket),
        }
    }
}

/// The bucket start of `ms` in `tz`, field by field: the local time truncated with chrono's
/// calendar, then DataFusion's rule back to an instant (an ambiguous start takes the instant
/// with the row's offset, else the later; a start in a gap is found three hours earlier and
/// moved back by three hours).
fn oracle<Z: TimeZone>(tz: &Z, ms: i64, bucket: &str) -> Option<i64> {
    let zoned = DateTime::from_timestamp_millis(ms)?.with_timezone(tz);
    let local = zoned.naive_local();
    let date = local.date();
    let start_date = match bucket {
        "hour" | "day" => date,
        "week" => date - TimeDelta::days(i64::from(date.weekday().num_days_from_monday())),
        "month" => date.with_day(1)?,
        "quarter" => NaiveDate::from_ymd_opt(date.year(), (date.month() - 1) / 3 * 3 + 1, 1)?,
        "year" => NaiveDate::from_ymd_opt(date.year(), 1, 1)?,
        _ => unreachable!(),
    };
    let hour = if bucket == "hour" { local.hour() } else { 0 };
    let start: NaiveDateTime = start_date.and_hms_opt(hour, 0, 0)?;
    let row_offset = zoned.offset().fix();
    let instant = match tz.from_local_datetime(&start) {
        LocalResult::Single(d) => d,
        LocalResult::Ambiguous(a, b) => {
            if a.offset().fix() == row_offset {
                a
            } else {
                b
            }
        }
        LocalResult::None => {
            tz.from_local_datetime(&(start - TimeDelta::hours(3)))
                .single()?
                + TimeDelta::hours(3)
        }
    };
    Some(instant.timestamp_millis())
}

/// The offset changes of `zone` between 1900 and 2100 in seconds, from the system's TZif file
/// (version 2+: the 64-bit listing, then the footer's POSIX rule for later years). `None` when
/// the file is missing.
fn zoneinfo_changes(zone: &str) -> Option<Vec<i64>> {
    let data = std::fs::read(format!("/usr/share/zoneinfo/{zone}")).ok()?;
    let count = |at: usize, i: usize| -> usize {
        u32::from_be_bytes(data[at + 20 + 4 * i..at + 24 + 4 * i].try_into().unwrap()) as usize
    };
    let skip_v1 = {
        let (isut, isstd, leap, time, types, chars) = (
            count(0, 0),
            count(0, 1),
            count(0, 2),
            count(0, 3),
            count(0, 4),
            count(0, 5),
        );
        44 + time * 5 + types * 6 + chars + leap * 8 + isstd + isut
    };
    let v2 = skip_v1;
    let (isut, isstd, leap, time, types, chars) = (
        count(v2, 0),
        count(v2, 1),
        count(v2, 2),
        count(v2, 3),
        count(v2, 4),
        count(v2, 5),
    );
    let mut changes: Vec<i64> = (0..time)
        .map(|i| {
            let at = v2 + 44 + 8 * i;
            i64::from_be_bytes(data[at..at + 8].try_into().unwrap())
        })
        .collect();
    let footer_at = v2 + 44 + time * 9 + types * 6 + chars + leap * 12 + isstd + isut;
    let footer = std::str::from_utf8(&data[footer_at..]).unwrap().trim();
    let last_year = changes
        .last()
        .and_then(|&t| DateTime::from_timestamp(t, 0))
        .map_or(1900, |d| d.year());
    changes.extend(posix_rule_changes(footer, last_year + 1, 2100));
    Some(changes)
}

/// The changes a POSIX TZ rule such as `CET-1CEST,M3.5.0,M10.5.0/3` makes in the years
/// `from..=to` (only the `M` month.week.day form, which every tested zone uses).
fn posix_rule_changes(rule: &str, from: i32, to: i32) -> Vec<i64> {
    let parts: Vec<&str> = rule.split(',').collect();
    if parts.len() != 3 {
        return Vec::new();
    }
    let (std_offset, dst_offset) = posix_offsets(parts[0]);
    let mut out = Vec::new();
    for year in from..=to {
        for (part, offset_before) in [(parts[1], std_offset), (parts[2], dst_offset)] {
            let (date, time) = part.split_once('/').unwrap_or((part, "2"));
            let fields: Vec<u32> = date[1..].split('.').map(|f| f.parse().unwrap()).collect();
            let (month, week, weekday) = (fields[0], fields[1], fields[2]);
            let first = NaiveDate::from_ymd_opt(year, month, 1).unwrap();
            let shift = (weekday + 7 - first.weekday().num_days_from_sunday()) % 7;
            let mut day = first + TimeDelta::days(i64::from(shift + 7 * (week - 1)));
            while day.month() != month {
                day -= TimeDelta::days(7);
            }
            let local = day.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp() + hms(time);
            out.push(local - offset_before);
        }
    }
    out
}

/// The standard and daylight offsets (seconds east of UTC) of a POSIX rule's first part.
fn posix_offsets(spec: &str) -> (i64, i64) {
    let mut numbers = Vec::new();
    let mut chars = spec.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '<' => {
                for c in chars.by_ref() {
                    if c == '>' {
                        break;
                    }
                }
            }
            '+' | '-' | '0'..='9' => {
                let mut number = c.to_string();
                while let Some(&d) = chars.peek() {
                    if d.is_ascii_digit() || d == ':' {
                        number.push(d);
                        chars.next();
                    } else {
                        break;
                    }
                }
                numbers.push(-hms(&number));
            }
            _ => {}
        }
    }
    let std = numbers[0];
    (std, numbers.get(1).copied().unwrap_or(std + 3_600))
}

fn hms(text: &str) -> i64 {
    let (sign, text) = match text.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, text.trim_start_matches('+')),
    };
    let mut seconds = 0;
    for (i, part) in text.split(':').enumerate() {
        seconds += part.parse::<i64>().unwrap() * [3_600, 60, 1][i];
    }
    sign * seconds
}

/// The crate's deterministic test generator, with a draw from a range.
struct Rng<F: FnMut() -> u64>(F);

impl<F: FnMut() -> u64> Rng<F> {
    fn next(&mut self) -> u64 {
        (self.0)()
    }

    fn between(&mut self, from: i64, to: i64) -> i64 {
        from + (self.next() % (to - from) as u64) as i64
    }
}

/// The instants tested in `zone`: the hours around every change (every quarter hour from three
/// hours before to three after, and a millisecond either side), random instants of 1900..2100
/// (so negative epochs), and a few near the epoch.
fn instants(zone: &str, rng: &mut Rng<impl FnMut() -> u64>) -> Vec<i64> {
    let mut out = Vec::new();
    let changes = zoneinfo_changes(zone).unwrap_or_default();
    for &change in &changes {
        let ms = change * 1_000;
        if !(FROM_MS..TO_MS).contains(&ms) {
            continue;
        }
        for quarter in -12..=12 {
            out.push(ms + quarter * 900_000);
        }
        out.extend([ms - 1, ms + 1, ms + rng.between(-86_400_000, 86_400_000)]);
    }
    out.extend((0..4_000).map(|_| rng.between(FROM_MS, TO_MS)));
    out.extend([-1, 0, 1, -86_400_000, 86_399_999]);
    out
}

/// Zones with a name in the zone database whose TZif file must be read for the test.
const NAMED: [&str; 5] = [
    "Europe/Warsaw",
    "America/Los_Angeles",
    "Australia/Lord_Howe",
    "Asia/Kathmandu",
    "UTC",
];
const FIXED: [&str; 3] = ["+00:00", "+05:45", "-03:30"];

#[test]
fn every_bucket_in_every_zone_equals_the_oracle_and_the_builtin() {
    let ours = date_trunc_udf();
    let builtin = datafusion::functions::datetime::date_trunc();
    let mut rng = Rng(crate::xorshift(0x5eed_2026));
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    for zone in NAMED.iter().chain(FIXED.iter()) {
        if NAMED.contains(zone) && zone != &"UTC" {
            let Some(changes) = zoneinfo_changes(zone) else {
                assert!(
                    !ci,
                    "/usr/share/zoneinfo/{zone} is missing (install tzdata)"
                );
                eprintln!("skipping {zone}: /usr/share/zoneinfo/{zone} is missing");
                continue;
            };
            assert!(changes.len() >= 2, "{zone}: {changes:?}");
        }
        let oracle_zone = OracleZone::parse(zone);
        let name: Arc<str> = Arc::from(*zone);
        let tz = Tz::from_str(zone).unwrap();
        let cache = OffsetCache::default();
        let mut values = instants(zone, &mut rng);
        // Batches both sorted and shuffled, of uneven sizes, with NULLs holding any value.
        let mut sorted = values.clone();
        sorted.sort_unstable();
        for i in (1..values.len()).rev() {
            values.swap(i, rng.next() as usize % (i + 1));
        }
        for all in [sorted, values] {
            let mut at = 0;
            while at < all.len() {
                let size = (rng.next() % 3_000 + 1) as usize;
                let chunk = &all[at..(at + size).min(all.len())];
                at += size;
                let valid: Vec<bool> = chunk
                    .iter()
                    .map(|_| !rng.next().is_multiple_of(11))
                    .collect();
                let values: Vec<i64> = chunk
                    .iter()
                    .zip(&valid)
                    .map(|(&v, &ok)| if ok { v } else { rng.next() as i64 })
                    .collect();
                let array: ArrayRef = Arc::new(
                    TimestampMillisecondArray::new(
                        values.clone().into(),
                        Some(NullBuffer::from(valid.clone())),
                    )
                    .with_timezone(*zone),
                );
                for bucket in BUCKETS {
                    // The kernel itself answers (no batch of these years is left to the
                    // built-in), and the function answers what the kernel does.
                    let kernel = truncate(
                        &values,
                        Some(&NullBuffer::from(valid.clone())),
                        1_000,
                        Bucket::parse(bucket).unwrap(),
                        Some((&name, &tz)),
                        &cache,
                    )
                    .unwrap();
                    let got = invoke(&ours, bucket, Arc::clone(&array)).unwrap();
                    let want = invoke(&builtin, bucket, Arc::clone(&array)).unwrap();
                    assert_eq!(got.data_type(), want.data_type());
                    assert_eq!(&got, &want, "{zone} {bucket} (the built-in)");
                    let got = got
                        .as_any()
                        .downcast_ref::<TimestampMillisecondArray>()
                        .unwrap();
                    for (i, &v) in values.iter().enumerate() {
                        assert_eq!(got.is_valid(i), valid[i], "{zone} {bucket} row {i}");
                        if !valid[i] {
                            continue;
                        }
                        assert_eq!(got.value(i), kernel[i], "{zone} {bucket} row {i}");
                        let expected = oracle_zone.bucket(v, bucket);
                        assert_eq!(
                            Some(got.value(i)),
                            expected,
                            "{zone} {bucket} {} (oracle)",
                            DateTime::from_timestamp_millis(v).unwrap()
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn every_unit_and_no_zone_equal_the_builtin() {
    let ours = date_trunc_udf();
    let builtin = datafusion::functions::datetime::date_trunc();
    let mut rng = Rng(crate::xorshift(7));
    let seconds: Vec<i64> = (0..2_000)
        .map(|_| rng.between(FROM_MS / 1_000, TO_MS / 1_000))
        .collect();
    for zone in [None, Some("Europe/Warsaw"), Some("Australia/Lord_Howe")] {
        for (unit, per_second) in [
            (TimeUnit::Second, 1),
            (TimeUnit::Millisecond, 1_000),
            (TimeUnit::Microsecond, 1_000_000),
            (TimeUnit::Nanosecond, 1_000_000_000),
        ] {
            let values: Vec<ScalarValue> = seconds
                .iter()
                .map(|&s| {
                    let v = Some(s * per_second + rng.between(0, per_second));
                    let tz = zone.map(Arc::from);
                    match unit {
                        TimeUnit::Second => ScalarValue::TimestampSecond(v, tz),
                        TimeUnit::Millisecond => ScalarValue::TimestampMillisecond(v, tz),
                        TimeUnit::Microsecond => ScalarValue::TimestampMicrosecond(v, tz),
                        TimeUnit::Nanosecond => ScalarValue::TimestampNanosecond(v, tz),
                    }
                })
                .collect();
            let array = ScalarValue::iter_to_array(values).unwrap();
            let raw: Vec<i64> = seconds.iter().map(|&s| s * per_second).collect();
            for bucket in BUCKETS {
                let name = zone.map(Arc::<str>::from);
                let tz = zone.map(|z| Tz::from_str(z).unwrap());
                let kernel = truncate(
                    &raw,
                    None,
                    per_second,
                    Bucket::parse(bucket).unwrap(),
                    name.as_ref().zip(tz.as_ref()),
                    &OffsetCache::default(),
                );
                assert!(
                    kernel.is_ok(),
                    "{zone:?} {unit:?} {bucket}: left to the built-in"
                );
                let got = invoke(&ours, bucket, Arc::clone(&array)).unwrap();
                let want = invoke(&builtin, bucket, Arc::clone(&array)).unwrap();
                assert_eq!(&got, &want, "{zone:?} {unit:?} {bucket}");
            }
        }
    }
}

#[test]
fn outside_the_safe_range_the_builtin_answers_and_errs_alike() {
    let ours = date_trunc_udf();
    let builtin = datafusion::functions::datetime::date_trunc();
    // 1600, 2300, and the far ends of i64 seconds: the built-in's nanoseconds overflow.
    for seconds in [
        -11_676_096_000_i64,
        10_413_792_000,
        i64::MAX / 2,
        i64::MIN / 2,
    ] {
        let array: ArrayRef = Arc::new(
            datafusion::arrow::array::TimestampSecondArray::from(vec![seconds, 0])
                .with_timezone("Europe/Warsaw"),
        );
        for bucket in BUCKETS {
            let got = invoke(&ours, bucket, Arc::clone(&array)).map_err(|e| e.to_string());
            let want = invoke(&builtin, bucket, Arc::clone(&array)).map_err(|e| e.to_string());
            assert_eq!(got.is_err(), want.is_err(), "{seconds} {bucket}");
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(&got, &want),
                (Err(got), Err(want)) => assert_eq!(got, want),
                _ => unreachable!(),
            }
        }
    }
}

#[test]
fn scalars_and_finer_sizes_are_the_builtin() {
    let ours = date_trunc_udf();
    let builtin = datafusion::functions::datetime::date_trunc();
    let array: ArrayRef = Arc::new(
        TimestampMillisecondArray::from(vec![Some(1_711_846_799_999), None])
            .with_timezone("America/Los_Angeles"),
    );
    for granularity in ["second", "minute", "millisecond", "DAY", "Week"] {
        let got = invoke(&ours, granularity, Arc::clone(&array)).unwrap();
        let want = invoke(&builtin, granularity, Arc::clone(&array)).unwrap();
        assert_eq!(&got, &want, "{granularity}");
    }
    let unknown = invoke(&ours, "fortnight", Arc::clone(&array)).unwrap_err();
    assert!(
        unknown
            .to_string()
            .contains("Unsupported date_trunc granularity")
    );
    assert!(Bucket::parse("second").is_none());
}
