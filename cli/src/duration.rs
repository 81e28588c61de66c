//! Durations on the command line (`500ms`, `30s`, `5m`, `2h`, `1h30m`) and for people (`12s`,
//! `3m20s`).
//!
//! A bare number is refused rather than guessed at: `--ttl 5` could mean seconds or minutes, and
//! a lock held 60 times too long is a bad way to find out.

use std::time::Duration;

/// The units a duration may use, longest suffix first so `ms` is not read as `m` + `s`.
const UNITS: [(&str, u64); 5] = [
    ("ms", 1),
    ("s", 1_000),
    ("m", 60_000),
    ("h", 3_600_000),
    ("d", 86_400_000),
];

/// What a valid duration looks like, for error messages.
const EXAMPLES: &str = "such as 500ms, 30s, 5m, 2h or 1h30m";

/// Parses a duration: one or more `<number><unit>` parts (`1h30m`, `1.5s`), units `ms`, `s`,
/// `m`, `h`, `d`. Zero is accepted here; [`parse_positive`] refuses it.
pub fn parse(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err(format!("a duration is needed, {EXAMPLES}"));
    }
    if s.starts_with('-') {
        return Err(format!("{s:?} is negative; durations are {EXAMPLES}"));
    }
    let mut total_ms: f64 = 0.0;
    let mut rest = s;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_len);
        if number.is_empty() {
            return Err(format!("{s:?} is not a duration: expected a number where {rest:?} starts; use one {EXAMPLES}"));
        }
        let value: f64 = number.parse().map_err(|_| {
            format!("{number:?} in {s:?} is not a number; use a duration {EXAMPLES}")
        })?;
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_len);
        if unit.is_empty() {
            return Err(format!(
                "{s:?} has no unit; write {number}s for seconds (durations are {EXAMPLES})"
            ));
        }
        let Some((_, unit_ms)) = UNITS.iter().find(|(name, _)| *name == unit) else {
            return Err(format!(
                "{s:?} has an unknown unit {unit:?}; use ms, s, m, h or d ({EXAMPLES})"
            ));
        };
        total_ms += value * *unit_ms as f64;
        rest = next;
    }
    // Thirty years is far past any lock's TTL or wait; larger values are typos.
    const LIMIT_MS: f64 = 30.0 * 365.0 * 86_400_000.0;
    if !total_ms.is_finite() || total_ms > LIMIT_MS {
        return Err(format!("{s:?} is too long; durations are at most 30 years"));
    }
    Ok(Duration::from_secs_f64(total_ms / 1000.0))
}

/// [`parse`], refusing zero (for a TTL, a hold time: a duration that must pass).
pub fn parse_positive(text: &str) -> Result<Duration, String> {
    let d = parse(text)?;
    if d.is_zero() {
        return Err(format!(
            "{:?} is zero; this needs a duration longer than that, {EXAMPLES}",
            text.trim()
        ));
    }
    Ok(d)
}

/// A duration for people: `0.4ms`, `850ms`, `1.5s`, `12s`, `3m20s`, `2h5m`, `3d4h` (two units at most,
/// rounded down).
pub fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 10 && !d.subsec_nanos().is_multiple_of(1_000_000) {
        return format!("{:.1}ms", d.as_secs_f64() * 1000.0);
    }
    if ms < 1_000 {
        return format!("{ms}ms");
    }
    if ms < 10_000 && !ms.is_multiple_of(1_000) {
        return format!("{:.1}s", d.as_secs_f64());
    }
    let secs = d.as_secs();
    let pair = |big: u64, big_unit: &str, small: u64, small_unit: &str| {
        if small == 0 {
            format!("{big}{big_unit}")
        } else {
            format!("{big}{big_unit}{small}{small_unit}")
        }
    };
    match secs {
        0..60 => format!("{secs}s"),
        60..3_600 => pair(secs / 60, "m", secs % 60, "s"),
        3_600..86_400 => pair(secs / 3_600, "h", secs % 3_600 / 60, "m"),
        _ => pair(secs / 86_400, "d", secs % 86_400 / 3_600, "h"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_documented_forms() {
        let cases = [
            ("500ms", 500),
            ("30s", 30_000),
            ("5m", 300_000),
            ("2h", 7_200_000),
            ("1d", 86_400_000),
            ("1h30m", 5_400_000),
            ("1.5s", 1_500),
            (" 10s ", 10_000),
            ("0s", 0),
        ];
        for (text, ms) in cases {
            assert_eq!(parse(text), Ok(Duration::from_millis(ms)), "{text}");
        }
    }

    #[test]
    fn refuses_with_a_reason() {
        for (text, needle) in [
            ("5x", "unknown unit \"x\""),
            ("5", "no unit"),
            ("-5s", "negative"),
            ("", "needed"),
            ("s", "expected a number"),
            ("1.2.3s", "not a number"),
            ("99999999d", "too long"),
        ] {
            let e = parse(text).expect_err(text);
            assert!(e.contains(needle), "{text}: {e}");
        }
        let e = parse_positive("0s").expect_err("zero");
        assert!(e.contains("zero"), "{e}");
        assert_eq!(parse_positive("1ms"), Ok(Duration::from_millis(1)));
    }

    #[test]
    fn formats_for_people() {
        let cases = [
            (0, "0ms"),
            (850, "850ms"),
            (4, "4ms"),
            (1_500, "1.5s"),
            (2_000, "2s"),
            (12_400, "12s"),
            (180_000, "3m"),
            (200_000, "3m20s"),
            (7_500_000, "2h5m"),
            (7_200_000, "2h"),
            (273_600_000, "3d4h"),
        ];
        for (ms, text) in cases {
            assert_eq!(human(Duration::from_millis(ms)), text, "{ms}");
        }
        assert_eq!(human(Duration::from_micros(420)), "0.4ms");
        assert_eq!(human(Duration::from_micros(2_560)), "2.6ms");
    }
}
