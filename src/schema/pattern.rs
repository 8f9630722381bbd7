//! Strings that satisfy a regular-expression constraint: a JSON Schema
//! `pattern` (unanchored) or an HTML `pattern` attribute (the whole value
//! must match). Values are tried from a list of preferred candidates first
//! (so a marker or an id-like value survives where the pattern allows it),
//! then built from the pattern's syntax tree. Every value returned is checked
//! against the compiled pattern; a pattern that does not compile gives `None`.

use regex_syntax::hir::{Class, Hir, HirKind};

/// Length bounds a value must also meet (`minLength` / `maxLength`, or the
/// HTML `minlength` / `maxlength` attributes), in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lengths {
    /// Fewest characters.
    pub min: usize,
    /// Most characters.
    pub max: usize,
}

impl Default for Lengths {
    fn default() -> Self {
        Lengths {
            min: 0,
            max: usize::MAX,
        }
    }
}

impl Lengths {
    fn fits(self, s: &str) -> bool {
        let n = s.chars().count();
        n >= self.min && n <= self.max
    }
}

/// Longest value built from a pattern (a bound on unbounded repetitions).
const MAX_BUILT: usize = 256;

fn compile(pattern: &str, whole: bool) -> Option<regex::Regex> {
    let anchored = if whole {
        format!("^(?:{pattern})$")
    } else {
        pattern.to_owned()
    };
    regex::RegexBuilder::new(&anchored)
        .size_limit(1 << 20)
        .build()
        .ok()
}

/// Whether `value` satisfies `pattern` (`whole`: the entire value must
/// match, as HTML requires). `None` when the pattern does not compile.
pub fn matches(pattern: &str, value: &str, whole: bool) -> Option<bool> {
    compile(pattern, whole).map(|re| re.is_match(value))
}

/// A value that matches `pattern` and fits `lengths`: the first of
/// `preferred` that does, else one built from the pattern (varied by
/// `salt`). `None` when the pattern does not compile or nothing fits.
pub fn sample(
    pattern: &str,
    whole: bool,
    lengths: Lengths,
    preferred: &[String],
    salt: u64,
) -> Option<String> {
    let re = compile(pattern, whole)?;
    let ok = |s: &str| re.is_match(s) && lengths.fits(s);
    if let Some(p) = preferred.iter().find(|p| ok(p)) {
        return Some(p.clone());
    }
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(pattern)
        .ok()?;
    for extra in 0..48 {
        let mut out = String::new();
        build(&hir, extra, salt, &mut out);
        if out.len() > MAX_BUILT {
            break;
        }
        if ok(&out) {
            return Some(out);
        }
    }
    None
}

/// Appends a string matching `hir`; every repetition runs `min + extra`
/// times (within its bounds), classes pick characters varied by `salt`.
fn build(hir: &Hir, extra: u32, salt: u64, out: &mut String) {
    if out.len() > MAX_BUILT {
        return;
    }
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(lit) => out.push_str(&String::from_utf8_lossy(&lit.0)),
        HirKind::Class(class) => {
            if let Some(c) = pick(class, salt.wrapping_add(out.len() as u64)) {
                out.push(c);
            }
        }
        HirKind::Repetition(rep) => {
            let max = rep.max.unwrap_or(u32::MAX);
            let n = rep.min.saturating_add(extra).min(max);
            for _ in 0..n {
                build(&rep.sub, extra, salt, out);
                if out.len() > MAX_BUILT {
                    return;
                }
            }
        }
        HirKind::Capture(cap) => build(&cap.sub, extra, salt, out),
        HirKind::Concat(parts) => parts.iter().for_each(|p| build(p, extra, salt, out)),
        HirKind::Alternation(alts) => {
            if let Some(first) = alts.first() {
                build(first, extra, salt, out);
            }
        }
    }
}

/// A character of `class`: an ASCII letter or digit where the class has
/// some (chosen by `salt`), else its first character.
fn pick(class: &Class, salt: u64) -> Option<char> {
    let chars: Vec<char> = match class {
        Class::Unicode(u) => u
            .ranges()
            .iter()
            .flat_map(|r| {
                let (lo, hi) = (u32::from(r.start()), u32::from(r.end()));
                (lo..=hi.min(lo + 200)).filter_map(char::from_u32)
            })
            .collect(),
        Class::Bytes(b) => b
            .ranges()
            .iter()
            .flat_map(|r| (r.start()..=r.end()).filter(u8::is_ascii).map(char::from))
            .collect(),
    };
    let alnum: Vec<char> = chars
        .iter()
        .copied()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let pool = if alnum.is_empty() { &chars } else { &alnum };
    let n = pool.len() as u64;
    (n > 0).then(|| pool[(salt % n) as usize])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_match_their_pattern() {
        let cases = [
            ("[A-Za-z0-9]+", true, Lengths { min: 12, max: 64 }),
            ("^[a-z]{3}-\\d{4}$", false, Lengths::default()),
            ("(foo|bar)_[0-9]{2,}", true, Lengths::default()),
            ("\\w+@\\w+\\.com", true, Lengths { min: 8, max: 40 }),
            ("[A-Z]{2}\\d{6}", true, Lengths::default()),
            ("[^\\s]+", true, Lengths { min: 5, max: 5 }),
        ];
        for (p, whole, len) in cases {
            for salt in 0..5 {
                let v = sample(p, whole, len, &[], salt).unwrap_or_else(|| panic!("{p}"));
                assert_eq!(matches(p, &v, whole), Some(true), "{p} -> {v}");
                assert!(len.fits(&v), "{p} -> {v}");
            }
        }
    }

    #[test]
    fn preferred_values_win_when_they_fit() {
        let marker = "ekMARK0123456789".to_owned();
        let v = sample(
            "[A-Za-z0-9]+",
            true,
            Lengths::default(),
            std::slice::from_ref(&marker),
            1,
        );
        assert_eq!(v.as_deref(), Some(marker.as_str()));
        // A marker with a dash does not fit an alphanumeric pattern.
        let v = sample("[a-z0-9]+", true, Lengths::default(), &["ek-1".into()], 1).unwrap();
        assert!(v.bytes().all(|b| b.is_ascii_alphanumeric()), "{v}");
    }

    #[test]
    fn impossible_and_broken_patterns_are_none() {
        assert_eq!(sample("[", true, Lengths::default(), &[], 0), None);
        assert_eq!(matches("(", "x", true), None);
        assert_eq!(
            sample("[a-z]{2}", true, Lengths { min: 5, max: 9 }, &[], 0),
            None
        );
        assert_eq!(matches("abc", "xabcx", false), Some(true));
        assert_eq!(matches("abc", "xabcx", true), Some(false));
    }
}
