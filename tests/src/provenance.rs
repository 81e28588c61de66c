//! Where a benchmark's figures come from: the commit of the working directory, the time, the
//! machine's cores and the build, printed first by every bench, so that a table copied into
//! the docs names what produced it (issue 45: "the commit that produced it").

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// `git describe --always --dirty` of the working directory, or `unknown` outside a checkout.
pub fn commit() -> String {
    Command::new("git")
        .args(["describe", "--always", "--dirty"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| String::from("unknown"))
}

/// The current UTC time as `YYYY-MM-DD HH:MM:SSZ`.
pub fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// The proleptic Gregorian date of `days` since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// One line for the head of a bench's output: `bench` at the commit, when, on how many cores,
/// and whether the build is one to quote (release) or not.
pub fn line(bench: &str) -> String {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let build = if cfg!(debug_assertions) {
        "debug build: use --release for real numbers"
    } else {
        "release build"
    };
    format!(
        "{bench} at {} ({}), {} cores, {build}",
        commit(),
        utc_now(),
        cores
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_from_days() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(59), (1970, 3, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_789), (2026, 12, 2));
    }
}
