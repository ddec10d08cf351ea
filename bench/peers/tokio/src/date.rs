//! The Date header's value: the IMF-fixdate of the current second, formatted at most once per
//! second per thread.
use std::cell::RefCell;
use std::fmt::Write as _;
use std::time::SystemTime;

/// Calls `f` with the IMF-fixdate of the current second ("Sun, 06 Nov 1994 08:49:37 GMT").
pub fn with_http_date<R>(f: impl FnOnce(&str) -> R) -> R {
    thread_local!(static CACHE: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) });
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.0 != now {
            cache.0 = now;
            cache.1 = format_imf_fixdate(now);
        }
        f(&cache.1)
    })
}

fn format_imf_fixdate(unix_seconds: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = unix_seconds / 86_400;
    let seconds_of_day = unix_seconds % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + if month <= 2 { 1 } else { 0 };
    let mut out = String::with_capacity(29);
    let _ = write!(
        out,
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        day,
        MONTHS[(month - 1) as usize],
        year,
        seconds_of_day / 3600,
        seconds_of_day / 60 % 60,
        seconds_of_day % 60
    );
    out
}

#[cfg(test)]
mod tests {
    use super::format_imf_fixdate;

    #[test]
    fn formats_imf_fixdate() {
        assert_eq!(format_imf_fixdate(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        // RFC 9110's example.
        assert_eq!(
            format_imf_fixdate(784_111_777),
            "Sun, 06 Nov 1994 08:49:37 GMT"
        );
        // A leap day.
        assert_eq!(
            format_imf_fixdate(1_709_210_096),
            "Thu, 29 Feb 2024 12:34:56 GMT"
        );
    }
}
