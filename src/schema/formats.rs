//! Checks for the four string `format`s, written by hand (no regex).
//!
//! - `email`: `local@domain`, one `@`, a non-empty local part without
//!   whitespace or control characters, a domain of two or more non-empty
//!   labels of ASCII letters, digits and `-` (no leading/trailing `-`).
//! - `uri`: an absolute URI with a scheme, as the `url` crate parses it,
//!   with no whitespace or control characters anywhere (the `url` crate would
//!   otherwise trim or encode them silently).
//! - `date`: RFC 3339 `full-date` `YYYY-MM-DD`, a real calendar date.
//! - `date-time`: RFC 3339 `date-time`: `full-date "T" HH:MM:SS[.frac]`
//!   then `Z` or `±HH:MM`; `t`/`z` are accepted as RFC 3339 allows;
//!   second 60 is accepted (leap second).

use super::model::StringFormat;

/// True when `s` satisfies `format`.
pub fn matches_format(format: StringFormat, s: &str) -> bool {
    match format {
        StringFormat::Email => is_email(s),
        StringFormat::Uri => is_absolute_uri(s),
        StringFormat::Date => is_date(s),
        StringFormat::DateTime => is_date_time(s),
    }
}

/// Simple `local@domain.tld` check (see module docs).
pub fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    if local.is_empty()
        || local
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '@')
    {
        return false;
    }
    is_domain(domain)
}

/// Dotted host name with at least two labels (`example.com`).
pub(crate) fn is_domain(domain: &str) -> bool {
    let mut labels = 0usize;
    for label in domain.split('.') {
        if label.is_empty()
            || label.starts_with('-')
            || label.ends_with('-')
            || !label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return false;
        }
        labels += 1;
    }
    labels >= 2
}

/// Absolute URI with a scheme and no whitespace/control characters.
pub fn is_absolute_uri(s: &str) -> bool {
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    url::Url::parse(s).is_ok()
}

/// `YYYY-MM-DD`, real calendar date (Gregorian, leap years honoured).
pub fn is_date(s: &str) -> bool {
    parse_date(s.as_bytes()).is_some()
}

fn digits(b: &[u8]) -> Option<u32> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0u32, |acc, d| acc * 10 + u32::from(d - b'0')))
}

/// Days in `month` of `year` (month 1..=12).
pub(crate) fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ => {
            let leap =
                (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400);
            if leap { 29 } else { 28 }
        }
    }
}

fn parse_date(b: &[u8]) -> Option<()> {
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let year = digits(&b[0..4])?;
    let month = digits(&b[5..7])?;
    let day = digits(&b[8..10])?;
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    Some(())
}

/// RFC 3339 `date-time` (see module docs).
pub fn is_date_time(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 20 || !matches!(b[10], b'T' | b't') {
        return false;
    }
    if parse_date(&b[..10]).is_none() {
        return false;
    }
    let t = &b[11..];
    if t.len() < 9 || t[2] != b':' || t[5] != b':' {
        return false;
    }
    let (Some(h), Some(m), Some(sec)) = (digits(&t[0..2]), digits(&t[3..5]), digits(&t[6..8]))
    else {
        return false;
    };
    if h > 23 || m > 59 || sec > 60 {
        return false;
    }
    let mut rest = &t[8..];
    if let Some(frac) = rest.strip_prefix(b".") {
        let n = frac.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return false;
        }
        rest = &frac[n..];
    }
    match rest {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', oh1, oh2, b':', om1, om2] => {
            matches!((digits(&[*oh1, *oh2]), digits(&[*om1, *om2])),
                (Some(oh), Some(om)) if oh <= 23 && om <= 59)
        }
        _ => false,
    }
}

/// Shortest value of each format that elicitkit can produce (and accepts).
fn min_format_len(format: StringFormat) -> usize {
    match format {
        StringFormat::Email => 5,
        StringFormat::Uri => 3,
        StringFormat::Date => 10,
        StringFormat::DateTime => 20,
    }
}

/// True when some valid value of `format` has exactly `len` characters.
///
/// Dates have exactly 10; date-times 20 (`...:SSZ`) or 22 and more (with a
/// fraction); e-mails 5 and more (`a@b.c`); URIs 3 and more (`x:a`).
pub fn format_admits_len(format: StringFormat, len: u64) -> bool {
    match format {
        StringFormat::Date => len == 10,
        StringFormat::DateTime => len == 20 || len >= 22,
        _ => len >= min_format_len(format) as u64,
    }
}

/// True when some valid value of `format` has a length in `[min, max]`.
pub fn format_admits_range(format: StringFormat, min: u64, max: Option<u64>) -> bool {
    let hi = max.unwrap_or(u64::MAX);
    if min > hi {
        return false;
    }
    match format {
        StringFormat::Date => min <= 10 && hi >= 10,
        StringFormat::DateTime => (min <= 20 && hi >= 20) || hi >= min.max(22),
        _ => hi >= min.max(min_format_len(format) as u64),
    }
}

/// The length of the value [`sample_format`] builds when the schema leaves
/// it free: `user0001@example.com`, `https://example.com/x`, `2026-01-02`,
/// `2026-01-02T03:04:05Z` (no fraction: some validators take at most
/// microseconds).
pub fn natural_len(format: StringFormat) -> usize {
    match format {
        StringFormat::Email => 20,
        StringFormat::Uri => 21,
        StringFormat::Date => 10,
        StringFormat::DateTime => 20,
    }
}

/// Most characters of an e-mail local part (RFC 5321), and of a domain.
const MAX_LOCAL: usize = 64;
const MAX_DOMAIN: usize = 253;
/// Most characters of one domain label.
const MAX_LABEL: usize = 63;

/// Builds a valid value of `format` with exactly `len` characters (ASCII),
/// varied by `r`; `None` when no such value exists.
///
/// Values are ones the strict validators servers use accept too (zod,
/// pydantic's email-validator, JSON Schema format checkers): e-mails have
/// a local part of letters and digits (at most 64) and a domain under a
/// TLD of two letters or more (`example.com`, `x.io` when short); URIs are
/// `https://` with a host under such a TLD. Only lengths the schema forces
/// below that (under 6 for an e-mail, 12 for a URI) get the shortest values
/// elicitkit's own check accepts (`a@x.c`, `x:a`): the schema comes first.
pub fn sample_format(format: StringFormat, len: usize, r: u64) -> Option<String> {
    if !format_admits_len(format, len as u64) {
        return None;
    }
    let letter = |i: u64| char::from(b'a' + ((r >> (i % 48)) % 26) as u8);
    // `user0001`-like: letters, then four digits when there is room.
    let local = |n: usize| -> String {
        let digits = format!("{:04}", 1 + r % 9999);
        let mut l = String::with_capacity(n);
        if n >= 8 {
            l.push_str("user");
            l.push_str(&digits);
        }
        let mut i = 0u64;
        while l.len() < n {
            l.push(letter(i));
            i += 1;
        }
        l
    };
    let mut s = String::with_capacity(len);
    match format {
        StringFormat::Email => {
            if len < 6 {
                // `a@x.c`: only a schema's maxLength asks for this.
                s.push_str(&local(len - 4));
                s.push_str("@x.c");
            } else if len < 13 {
                s.push_str(&local(len - 5));
                s.push_str("@x.io");
            } else if len - 12 <= MAX_LOCAL {
                s.push_str(&local(len - 12));
                s.push_str("@example.com");
            } else if len <= 1 + MAX_LOCAL + MAX_DOMAIN {
                // The local part is full: the domain grows by labels (a
                // label needs two characters with its dot: one more goes
                // to the domain when a single one is left).
                let mut extra = len - 1 - MAX_LOCAL - "example.com".len();
                let l = if extra == 1 { MAX_LOCAL - 1 } else { MAX_LOCAL };
                extra += MAX_LOCAL - l;
                s.push_str(&local(l));
                s.push('@');
                let mut i = 0u64;
                while extra > 0 {
                    // A label and its dot; never a lone dot.
                    let label = if extra == MAX_LABEL + 2 {
                        MAX_LABEL - 1
                    } else {
                        (extra - 1).min(MAX_LABEL)
                    };
                    for _ in 0..label {
                        s.push(letter(i));
                        i += 1;
                    }
                    s.push('.');
                    extra -= label + 1;
                }
                s.push_str("example.com");
            } else {
                // Longer than any real address: only the schema wants it.
                s.push_str(&local(len - 12));
                s.push_str("@example.com");
            }
        }
        StringFormat::Uri => {
            if len >= 20 {
                s.push_str("https://example.com/");
            } else if len >= 13 {
                s.push_str("https://x.io/");
            } else if len == 12 {
                s.push_str("https://x.io");
            } else {
                s.push_str("x:");
            }
            let mut i = 0u64;
            while s.len() < len {
                s.push(letter(i));
                i += 1;
            }
        }
        StringFormat::Date | StringFormat::DateTime => {
            let year = 1970 + (r % 130) as u32;
            let month = 1 + ((r >> 8) % 12) as u32;
            let day = 1 + ((r >> 16) % u64::from(days_in_month(year, month))) as u32;
            s.push_str(&format!("{year:04}-{month:02}-{day:02}"));
            if format == StringFormat::DateTime {
                let (h, m, sec) = ((r >> 24) % 24, (r >> 32) % 60, (r >> 40) % 60);
                s.push_str(&format!("T{h:02}:{m:02}:{sec:02}"));
                if len > 20 {
                    s.push('.');
                    let mut i = 0u64;
                    while s.len() < len - 1 {
                        s.push(char::from(b'0' + ((r >> (i % 60)) % 10) as u8));
                        i += 1;
                    }
                }
                s.push('Z');
            }
        }
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_match_their_format_and_length() {
        for f in StringFormat::ALL {
            for len in 0..40usize {
                for r in [0u64, 7, u64::MAX, 0x1234_5678_9abc_def0] {
                    match sample_format(f, len, r) {
                        Some(s) => {
                            assert_eq!(s.chars().count(), len, "{f:?} {s}");
                            assert!(matches_format(f, &s), "{f:?} {s}");
                        }
                        None => assert!(!format_admits_len(f, len as u64)),
                    }
                }
            }
            assert_eq!(
                format_admits_range(f, 0, Some(9)),
                (0..=9).any(|l| format_admits_len(f, l))
            );
            assert_eq!(
                format_admits_range(f, 21, Some(21)),
                format_admits_len(f, 21)
            );
        }
    }

    #[test]
    fn emails() {
        for good in [
            "a@b.co",
            "first.last+tag@example.org",
            "x@sub-1.example.com",
        ] {
            assert!(is_email(good), "{good}");
        }
        for bad in [
            "", "a", "@b.co", "a@", "a@b", "a@@b.co", "a b@c.de", "a@b..co", "a@-b.co", "a@b.co ",
        ] {
            assert!(!is_email(bad), "{bad}");
        }
    }

    #[test]
    fn uris() {
        for good in [
            "https://example.com/x?y=1",
            "urn:isbn:0451450523",
            "x:a",
            "mailto:a@b.co",
        ] {
            assert!(is_absolute_uri(good), "{good}");
        }
        for bad in [
            "",
            "example.com",
            "/relative/path",
            "http://a b",
            " https://x.org",
            "https://x.org\n",
        ] {
            assert!(!is_absolute_uri(bad), "{bad}");
        }
    }

    #[test]
    fn dates() {
        for good in ["2024-02-29", "2000-02-29", "1999-12-31", "0001-01-01"] {
            assert!(is_date(good), "{good}");
        }
        for bad in [
            "2023-02-29",
            "1900-02-29",
            "2024-13-01",
            "2024-00-10",
            "2024-04-31",
            "2024-1-01",
            "2024/01/01",
            "२०२४-01-01",
        ] {
            assert!(!is_date(bad), "{bad}");
        }
    }

    #[test]
    fn date_times() {
        for good in [
            "2024-01-01T00:00:00Z",
            "2024-01-01t23:59:60z",
            "2024-01-01T12:30:00.123+05:30",
            "2024-01-01T12:30:00-00:00",
        ] {
            assert!(is_date_time(good), "{good}");
        }
        for bad in [
            "2024-01-01",
            "2024-01-01 00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T00:00:00",
            "2024-01-01T00:00:00.Z",
            "2024-01-01T00:00:00+5:30",
            "2024-01-01T00:00:00+05:60",
            "2024-02-30T00:00:00Z",
        ] {
            assert!(!is_date_time(bad), "{bad}");
        }
    }

    /// A host name as strict validators want it: labels of letters, digits
    /// and inner `-` (at most 63), at most 253 in all, under a TLD of two
    /// letters or more (zod's `[A-Za-z]{2,}`).
    fn strict_domain(d: &str) -> bool {
        let labels: Vec<&str> = d.split('.').collect();
        let tld = labels.last().copied().unwrap_or("");
        d.len() <= 253
            && labels.len() >= 2
            && tld.len() >= 2
            && tld.bytes().all(|b| b.is_ascii_alphabetic())
            && labels.iter().all(|l| {
                (1..=63).contains(&l.len())
                    && !l.starts_with('-')
                    && !l.ends_with('-')
                    && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            })
    }

    /// An address zod, pydantic (email-validator) and RFC 5321 all take.
    fn strict_email(s: &str) -> bool {
        let Some((local, domain)) = s.split_once('@') else {
            return false;
        };
        (1..=64).contains(&local.len())
            && local.bytes().all(|b| b.is_ascii_alphanumeric())
            && strict_domain(domain)
    }

    /// `https://host/path` with a strict host.
    fn strict_uri(s: &str) -> bool {
        let Some(rest) = s.strip_prefix("https://") else {
            return false;
        };
        let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
        strict_domain(host) && path.bytes().all(|b| b.is_ascii_alphanumeric())
    }

    /// zod's default `datetime()`: `Z` only, optional fraction.
    fn strict_date_time(s: &str) -> bool {
        let b = s.as_bytes();
        is_date_time(s)
            && b[10] == b'T'
            && s.ends_with('Z')
            && b[19..b.len() - 1].iter().enumerate().all(|(i, c)| {
                if i == 0 {
                    *c == b'.'
                } else {
                    c.is_ascii_digit()
                }
            })
    }

    #[test]
    fn samples_pass_strict_validators_whenever_the_length_allows() {
        for r in [0u64, 7, 9998, u64::MAX, 0x1234_5678_9abc_def0] {
            for len in 6..=(1 + 64 + 253) {
                let e = sample_format(StringFormat::Email, len, r).unwrap();
                assert_eq!(e.len(), len);
                assert!(strict_email(&e), "len {len}: {e}");
            }
            for len in 12..=300 {
                let u = sample_format(StringFormat::Uri, len, r).unwrap();
                assert_eq!(u.len(), len);
                assert!(strict_uri(&u), "len {len}: {u}");
            }
            for len in [20, 22, 27, 40] {
                let d = sample_format(StringFormat::DateTime, len, r).unwrap();
                assert!(strict_date_time(&d), "{d}");
            }
            // The natural values: user0001@example.com and its kind.
            let e = sample_format(StringFormat::Email, natural_len(StringFormat::Email), r);
            let e = e.unwrap();
            assert!(e.starts_with("user") && e.ends_with("@example.com"), "{e}");
            assert!(e[4..8].bytes().all(|b| b.is_ascii_digit()), "{e}");
            let u = sample_format(StringFormat::Uri, natural_len(StringFormat::Uri), r);
            assert!(u.unwrap().starts_with("https://example.com/"));
            let d = sample_format(StringFormat::DateTime, 20, r).unwrap();
            assert!(!d.contains('.'), "no fraction at the natural length: {d}");
        }
        // Shorter than any strict value: the schema's length wins, and the
        // value is still one elicitkit's own check accepts.
        let e = sample_format(StringFormat::Email, 5, 3).unwrap();
        assert!(is_email(&e) && !strict_email(&e), "{e}");
        let u = sample_format(StringFormat::Uri, 5, 3).unwrap();
        assert!(is_absolute_uri(&u) && !strict_uri(&u), "{u}");
    }
}
