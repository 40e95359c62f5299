//! ISO 8601 timestamps as integer keys (`import --timestamps UNIT`, `export --timestamps UNIT`):
//! a key is the time since 1970-01-01T00:00:00Z in seconds, milliseconds, microseconds or
//! nanoseconds. Accepted on input: `2024-03-01T12:30:00Z`, with an offset (`+01:00`), with a
//! fraction (`.250`), with a space for the `T`, without a zone (taken as UTC), and a date alone
//! (midnight UTC); a plain integer is taken as the key itself. Written back as
//! `2024-03-01T12:30:00Z`, with as many fraction digits as the unit has (`.250` for ms).

use time::format_description::well_known::{Iso8601, Rfc3339};
use time::OffsetDateTime;

/// The unit of timestamp keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    S,
    Ms,
    Us,
    Ns,
}

impl Unit {
    pub fn parse(s: &str) -> Result<Unit, String> {
        Ok(match s {
            "s" => Unit::S,
            "ms" => Unit::Ms,
            "us" => Unit::Us,
            "ns" => Unit::Ns,
            _ => return Err(format!("unknown timestamp unit {s:?} (s, ms, us, ns)")),
        })
    }
    fn nanos(self) -> i128 {
        match self {
            Unit::S => 1_000_000_000,
            Unit::Ms => 1_000_000,
            Unit::Us => 1_000,
            Unit::Ns => 1,
        }
    }
    fn digits(self) -> usize {
        match self {
            Unit::S => 0,
            Unit::Ms => 3,
            Unit::Us => 6,
            Unit::Ns => 9,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Unit::S => "seconds",
            Unit::Ms => "milliseconds",
            Unit::Us => "microseconds",
            Unit::Ns => "nanoseconds",
        }
    }
}

/// A timestamp (or a plain integer) as a key in `unit`.
pub fn parse(text: &str, unit: Unit) -> Result<u64, String> {
    let t = text.trim();
    if let Ok(v) = t.parse::<u64>() {
        return Ok(v);
    }
    let mut s = t.to_string();
    if s.len() == 10 {
        s.push_str("T00:00:00");
    }
    if s.as_bytes().get(10) == Some(&b' ') {
        s.replace_range(10..11, "T");
    }
    let zoned = s.ends_with('Z')
        || s.ends_with('z')
        || s.get(11..).is_some_and(|rest| rest.contains(['+', '-']));
    if !zoned {
        s.push('Z');
    }
    let dt = OffsetDateTime::parse(&s, &Rfc3339)
        .or_else(|_| OffsetDateTime::parse(&s, &Iso8601::DEFAULT))
        .map_err(|_| format!("{t:?} is neither an integer nor an ISO 8601 timestamp"))?;
    let ns = dt.unix_timestamp_nanos();
    if ns % unit.nanos() != 0 {
        return Err(format!(
            "{t:?} has a finer fraction than the key unit ({})",
            unit.name()
        ));
    }
    u64::try_from(ns / unit.nanos()).map_err(|_| {
        format!(
            "{t:?} is before 1970 or beyond the u64 range in {}",
            unit.name()
        )
    })
}

/// A key in `unit` as an ISO 8601 timestamp in UTC.
pub fn format(key: u64, unit: Unit) -> Result<String, String> {
    let dt = OffsetDateTime::from_unix_timestamp_nanos(key as i128 * unit.nanos())
        .map_err(|_| format!("key {key} in {} is beyond the year 9999", unit.name()))?;
    let mut s = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        dt.year(),
        dt.month() as u8,
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    );
    if unit.digits() > 0 {
        let frac = format!("{:09}", dt.nanosecond());
        s.push('.');
        s.push_str(&frac[..unit.digits()]);
    }
    s.push('Z');
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_and_round_trips() {
        assert_eq!(parse("1970-01-01T00:00:00Z", Unit::S), Ok(0));
        assert_eq!(parse("2024-03-01T12:30:00Z", Unit::S), Ok(1709296200));
        assert_eq!(parse("2024-03-01 12:30:00", Unit::S), Ok(1709296200));
        assert_eq!(parse("2024-03-01T13:30:00+01:00", Unit::S), Ok(1709296200));
        assert_eq!(parse("2024-03-01", Unit::S), Ok(1709251200));
        assert_eq!(
            parse("2024-03-01T12:30:00.250Z", Unit::Ms),
            Ok(1709296200250)
        );
        assert_eq!(parse("12345", Unit::Ms), Ok(12345));
        assert!(parse("2024-03-01T12:30:00.250Z", Unit::S)
            .unwrap_err()
            .contains("finer"));
        assert!(parse("1969-12-31T23:59:59Z", Unit::S).is_err());
        assert!(parse("yesterday", Unit::S).is_err());
        assert_eq!(
            format(1709296200250, Unit::Ms).unwrap(),
            "2024-03-01T12:30:00.250Z"
        );
        assert_eq!(format(1709296200, Unit::S).unwrap(), "2024-03-01T12:30:00Z");
        for unit in [Unit::S, Unit::Ms, Unit::Us, Unit::Ns] {
            for k in [0u64, 1, 1_709_296_200, 4_102_444_800] {
                assert_eq!(
                    parse(&format(k, unit).unwrap(), unit),
                    Ok(k),
                    "{k} {unit:?}"
                );
            }
        }
        assert!(format(u64::MAX, Unit::S).is_err());
    }
}
