//! Deterministic generation of schemas and of valid or deliberately invalid
//! content, from a `u64` seed.
//!
//! The generator is elicitkit's own SplitMix64, not `rand`'s `StdRng`, so a
//! seed printed by a failing run reproduces the same value on any version.
//!
//! Guarantees (property-tested in `tests/it/schema/generate.rs`):
//! - [`random_schema`] yields a schema on which
//!   `validate_schema(&schema.to_value())` reports nothing above INFO (the
//!   legacy `enumNames` shape is generated too, and noted as INFO);
//! - for a schema with no MUST findings, [`generate_valid`] yields content
//!   with no findings;
//! - when [`generate_invalid`] returns `Some`, the content has at least one
//!   finding and every finding has exactly the requested [`InvalidKind`].
//!
//! On a model built by hand with inconsistent bounds the output is best
//! effort; nothing panics.

use serde_json::{Map, Number, Value};

use super::content::InvalidKind;
use super::formats::{format_admits_len, natural_len, sample_format};
use super::limits::MAX_BOUND;
use super::model::{
    BooleanField, EnumOption, FieldSchema, MultiSelectField, MultiSelectStyle, NumberField,
    RequestedSchema, SingleSelectField, SingleSelectStyle, StringField, StringFormat,
};

/// SplitMix64: tiny, fast, stable across versions.
#[derive(Debug, Clone)]
pub struct SeedRng(u64);

impl SeedRng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        SeedRng(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// Uniform in `lo..=hi` (`lo` when `hi < lo`).
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            lo
        } else {
            lo + self.below((hi - lo).saturating_add(1))
        }
    }

    /// True with probability `1/n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Characters plain strings are drawn from (ASCII plus multi-byte ones, so
/// length checks are exercised in characters, not bytes).
const ALPHABET: &[char] = &[
    'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'k', 'm', 'n', 'p', 'r', 's', 't', 'w', 'x', 'z', 'A',
    'K', 'Q', '0', '1', '7', '9', ' ', '-', '_', '.', 'é', 'ß', '漢', '🙂',
];

fn plain_string(len: usize, rng: &mut SeedRng) -> String {
    let mut s = String::with_capacity(len);
    for _ in 0..len {
        s.push(ALPHABET[rng.below(ALPHABET.len() as u64) as usize]);
    }
    s
}

/// Letters only: never a valid email, uri, date or date-time.
fn unformatted_string(len: usize, rng: &mut SeedRng) -> String {
    (0..len)
        .map(|_| char::from(b'a' + rng.below(26) as u8))
        .collect()
}

/// A length in `[lo, hi]` admitted by `format`: its natural one
/// ([`natural_len`], what servers' validators take most surely) when the
/// bounds allow, else the admitted length nearest to it.
fn pick_format_len(format: StringFormat, lo: u64, hi: u64) -> Option<usize> {
    let want = natural_len(format) as u64;
    let near = want.clamp(lo, hi);
    // Date-times have no 21-character form: the nearest admitted one.
    [near, near + 1, near.saturating_sub(1)]
        .into_iter()
        .filter(|l| (lo..=hi).contains(l))
        .find(|l| format_admits_len(format, *l))
        .or_else(|| (lo..=hi.min(lo.saturating_add(64))).find(|l| format_admits_len(format, *l)))
        .map(|l| l as usize)
}

fn string_value(f: &StringField, rng: &mut SeedRng) -> String {
    let lo = f.min_length.unwrap_or(0).min(MAX_BOUND);
    let hi = f.max_length.unwrap_or(u64::MAX).max(lo);
    if let Some(fmt) = f.format
        && let Some(len) = pick_format_len(fmt, lo, hi)
        && let Some(s) = sample_format(fmt, len, rng.next_u64())
    {
        return s;
    }
    let len = rng.between(lo, hi.min(lo + 16)) as usize;
    plain_string(len, rng)
}

fn bounds_f64(f: &NumberField) -> (f64, f64) {
    let lo = f.minimum.as_ref().and_then(Number::as_f64);
    let hi = f.maximum.as_ref().and_then(Number::as_f64);
    let (a, b) = match (lo, hi) {
        (Some(l), Some(h)) => (l, h),
        (Some(l), None) => (l, l + 1000.0),
        (None, Some(h)) => (h - 1000.0, h),
        (None, None) => (-1000.0, 1000.0),
    };
    (a, b.max(a))
}

/// JSON for an integral f64: an i64 when it fits, else the float.
fn integral_value(x: f64) -> Value {
    if x.abs() < 9.0e18 {
        Value::from(x as i64)
    } else {
        Number::from_f64(x).map_or(Value::from(0), Value::Number)
    }
}

fn float_value(x: f64) -> Value {
    Number::from_f64(x).map_or(Value::from(0), Value::Number)
}

fn number_value(f: &NumberField, rng: &mut SeedRng) -> Value {
    let (a, b) = bounds_f64(f);
    let (a, b) = if f.integer {
        (a.ceil(), b.floor().max(a.ceil()))
    } else {
        (a, b)
    };
    let x = match rng.below(8) {
        0 => a,
        1 => b,
        _ => {
            let u = rng.unit();
            (a * (1.0 - u) + b * u).clamp(a, b)
        }
    };
    if f.integer {
        integral_value(x.floor().clamp(a, b))
    } else {
        let rounded = (x * 100.0).round() / 100.0;
        float_value(if rounded >= a && rounded <= b {
            rounded
        } else {
            x
        })
    }
}

/// Picks `n` option values, distinct while the options last.
fn pick_items(options: &[EnumOption], n: usize, rng: &mut SeedRng) -> Vec<Value> {
    let mut idx: Vec<usize> = (0..options.len()).collect();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        if options.is_empty() {
            break;
        }
        let pick = if i < idx.len() {
            let j = i + rng.below((idx.len() - i) as u64) as usize;
            idx.swap(i, j);
            idx[i]
        } else {
            rng.below(options.len() as u64) as usize
        };
        out.push(Value::String(options[pick].value.clone()));
    }
    out
}

fn multi_value(f: &MultiSelectField, rng: &mut SeedRng) -> Value {
    let lo = f.min_items.unwrap_or(0).min(MAX_BOUND);
    let cap = lo.max(f.options.len() as u64);
    let hi = f.max_items.unwrap_or(cap).min(cap).max(lo);
    let n = rng.between(lo, hi) as usize;
    Value::Array(pick_items(&f.options, n, rng))
}

/// A valid value for one field.
pub fn valid_value(field: &FieldSchema, rng: &mut SeedRng) -> Value {
    if rng.one_in(4)
        && let Some(d) = field.default_value()
    {
        return d;
    }
    match field {
        FieldSchema::String(f) => Value::String(string_value(f, rng)),
        FieldSchema::Number(f) => number_value(f, rng),
        FieldSchema::Boolean(_) => Value::Bool(rng.one_in(2)),
        FieldSchema::SingleSelect(f) => match f.options.len() {
            0 => Value::String(String::new()),
            n => Value::String(f.options[rng.below(n as u64) as usize].value.clone()),
        },
        FieldSchema::MultiSelect(f) => multi_value(f, rng),
    }
}

/// Content that satisfies `schema`: every required field and about half of
/// the optional ones, sometimes using their defaults.
pub fn generate_valid(schema: &RequestedSchema, seed: u64) -> Map<String, Value> {
    let mut rng = SeedRng::new(seed);
    let mut map = Map::new();
    for (name, field) in &schema.properties {
        if !schema.is_required(name) && rng.one_in(2) {
            continue;
        }
        map.insert(name.clone(), valid_value(field, &mut rng));
    }
    map
}

fn string_of_len(f: &StringField, len: u64, rng: &mut SeedRng) -> Option<Value> {
    if len > MAX_BOUND + 1 {
        return None;
    }
    let s = match f.format {
        Some(fmt) => sample_format(fmt, len as usize, rng.next_u64())?,
        None => plain_string(len as usize, rng),
    };
    Some(Value::String(s))
}

fn outside(f: &NumberField, rng: &mut SeedRng) -> Option<Value> {
    let lo = f.minimum.as_ref().and_then(Number::as_f64);
    let hi = f.maximum.as_ref().and_then(Number::as_f64);
    let below = lo.and_then(|m| {
        [1.0, m.abs(), m.abs() * 0.25].into_iter().find_map(|d| {
            let c = if f.integer { (m - d).floor() } else { m - d };
            (c.is_finite() && c < m).then_some(c)
        })
    });
    let above = hi.and_then(|m| {
        [1.0, m.abs(), m.abs() * 0.25].into_iter().find_map(|d| {
            let c = if f.integer { (m + d).ceil() } else { m + d };
            (c.is_finite() && c > m).then_some(c)
        })
    });
    let x = match (below, above) {
        (Some(b), Some(a)) => {
            if rng.one_in(2) {
                b
            } else {
                a
            }
        }
        (Some(b), None) => b,
        (None, Some(a)) => a,
        (None, None) => return None,
    };
    Some(if f.integer {
        integral_value(x)
    } else {
        float_value(x)
    })
}

fn option_items_with(
    options: &[EnumOption],
    n: u64,
    bad: Option<String>,
    rng: &mut SeedRng,
) -> Option<Value> {
    if n > MAX_BOUND + 1 || options.is_empty() {
        return None;
    }
    let mut items = pick_items(options, n as usize, rng);
    if let Some(bad) = bad {
        if items.is_empty() {
            return None;
        }
        let at = rng.below(items.len() as u64) as usize;
        items[at] = Value::String(bad);
    }
    Some(Value::Array(items))
}

fn not_an_option(options: &[EnumOption]) -> String {
    let mut s = String::from("not-an-option");
    while options.iter().any(|o| o.value == s) {
        s.push('!');
    }
    s
}

/// A value for `field` that breaks it in exactly the way `kind` names, or
/// `None` when the field cannot express that kind.
pub fn invalid_value(field: &FieldSchema, kind: InvalidKind, rng: &mut SeedRng) -> Option<Value> {
    use InvalidKind as K;
    match (kind, field) {
        (K::WrongType, FieldSchema::String(_) | FieldSchema::SingleSelect(_)) => {
            Some(match rng.below(3) {
                0 => Value::from(rng.below(100)),
                1 => Value::Bool(true),
                _ => Value::Null,
            })
        }
        (K::WrongType, FieldSchema::Number(f)) => Some(if f.integer && rng.one_in(2) {
            float_value(rng.below(100) as f64 + 0.5)
        } else {
            Value::String("42".into())
        }),
        (K::WrongType, FieldSchema::Boolean(_)) => Some(Value::String("true".into())),
        (K::WrongType, FieldSchema::MultiSelect(f)) => Some(match f.options.first() {
            Some(o) if rng.one_in(2) => Value::String(o.value.clone()),
            _ => Value::Null,
        }),
        (K::OutOfRange, FieldSchema::Number(f)) => outside(f, rng),
        (K::TooShort, FieldSchema::String(f)) => {
            let m = f.min_length.filter(|m| *m > 0)?;
            string_of_len(f, m - 1, rng)
        }
        (K::TooLong, FieldSchema::String(f)) => {
            let m = f.max_length?;
            string_of_len(f, m.checked_add(1)?, rng)
        }
        (K::BadFormat, FieldSchema::String(f)) => {
            f.format?;
            let lo = f.min_length.unwrap_or(0).min(MAX_BOUND);
            let hi = f.max_length.unwrap_or(lo + 8);
            let len = lo.max(1).min(hi) as usize;
            Some(Value::String(unformatted_string(len, rng)))
        }
        (K::NotInEnum, FieldSchema::SingleSelect(f)) => {
            Some(Value::String(not_an_option(&f.options)))
        }
        (K::NotInEnum, FieldSchema::MultiSelect(f)) => {
            let n = f.min_items.unwrap_or(0).max(1);
            if f.max_items.is_some_and(|m| m < n) {
                return None;
            }
            option_items_with(&f.options, n, Some(not_an_option(&f.options)), rng)
        }
        (K::TooFewItems, FieldSchema::MultiSelect(f)) => {
            let m = f.min_items.filter(|m| *m > 0)?;
            option_items_with(&f.options, m - 1, None, rng)
        }
        (K::TooManyItems, FieldSchema::MultiSelect(f)) => {
            let m = f.max_items?;
            option_items_with(&f.options, m.checked_add(1)?, None, rng)
        }
        _ => None,
    }
}

/// Content that breaks `schema` in exactly the way `kind` names, and in no
/// other way; `None` when the schema cannot express `kind` (e.g.
/// `OutOfRange` without numeric bounds, `MissingRequired` without `required`).
pub fn generate_invalid(
    schema: &RequestedSchema,
    kind: InvalidKind,
    seed: u64,
) -> Option<Map<String, Value>> {
    let mut map = generate_valid(schema, seed);
    let mut rng = SeedRng::new(seed ^ 0xA5A5_5A5A_0F0F_F0F0);
    match kind {
        InvalidKind::MissingRequired => {
            let present: Vec<&String> = schema
                .required
                .iter()
                .filter(|r| schema.field(r).is_some())
                .collect();
            if present.is_empty() {
                return None;
            }
            let name = present[rng.below(present.len() as u64) as usize];
            map.remove(name.as_str());
        }
        InvalidKind::UnknownProperty => {
            let mut key = String::from("unexpected");
            let mut i = 0u32;
            while schema.field(&key).is_some() {
                i += 1;
                key = format!("unexpected{i}");
            }
            map.insert(key, Value::from(rng.below(1000)));
        }
        _ => {
            let mut candidates: Vec<(usize, Value)> = Vec::new();
            for (i, (_, field)) in schema.properties.iter().enumerate() {
                if let Some(v) = invalid_value(field, kind, &mut rng) {
                    candidates.push((i, v));
                }
            }
            if candidates.is_empty() {
                return None;
            }
            let pick = rng.below(candidates.len() as u64) as usize;
            let (i, v) = candidates.swap_remove(pick);
            map.insert(schema.properties[i].0.clone(), v);
        }
    }
    Some(map)
}

const NAMES: &[&str] = &[
    "name", "age", "email", "colour", "tags", "start", "agree", "count", "city", "rating",
    "website", "notes", "level", "size", "birthday", "meeting", "a/b~c", "größe",
];
const WORDS: &[&str] = &[
    "Your name",
    "Pick one",
    "How many?",
    "Optional notes",
    "Choose colours",
    "Start date",
    "Preferred city",
    "Rating from 1 to 5",
    "Ünïcödé label",
];

fn maybe_text(rng: &mut SeedRng) -> Option<String> {
    rng.one_in(2)
        .then(|| WORDS[rng.below(WORDS.len() as u64) as usize].to_string())
}

fn random_options(rng: &mut SeedRng, titled: bool) -> Vec<EnumOption> {
    let n = rng.between(1, 6);
    (0..n)
        .map(|i| EnumOption {
            value: match rng.below(4) {
                0 => format!("#{i:03X}"),
                1 => format!("opt {i} é"),
                _ => format!("v{i}"),
            },
            title: titled.then(|| format!("Option {i}")),
        })
        .collect()
}

fn maybe<T>(v: T, rng: &mut SeedRng) -> Option<T> {
    if rng.one_in(2) { Some(v) } else { None }
}

fn random_number_field(rng: &mut SeedRng, integer: bool) -> NumberField {
    let mut f = NumberField {
        integer,
        ..Default::default()
    };
    if rng.one_in(16) {
        f.minimum = Number::from_f64(-1e300);
        f.maximum = Number::from_f64(1e300);
        return f;
    }
    let base = rng.between(0, 2000) as i64 - 1000;
    if integer {
        let lo = if rng.one_in(4) {
            Number::from_f64(base as f64 + 0.5)
        } else {
            Some(Number::from(base))
        };
        let hi = base + 1 + rng.between(0, 500) as i64;
        f.minimum = if rng.one_in(3) { None } else { lo };
        f.maximum = maybe(Number::from(hi), rng);
    } else {
        // Whole cents, so bounds survive a trip through JSON text exactly
        // (serde_json's default float parser may move long mantissas by an ULP).
        let lo_cents = base * 100 + rng.below(100) as i64;
        let hi_cents = lo_cents + rng.below(50_000) as i64;
        f.minimum = if rng.one_in(3) {
            None
        } else {
            Number::from_f64(lo_cents as f64 / 100.0)
        };
        f.maximum = maybe((), rng).and_then(|_| Number::from_f64(hi_cents as f64 / 100.0));
    }
    f
}

fn random_field(rng: &mut SeedRng) -> FieldSchema {
    let mut field = match rng.below(10) {
        0 => {
            let min = maybe(rng.below(5), rng);
            let max = maybe(min.unwrap_or(0) + rng.below(20), rng);
            FieldSchema::String(StringField {
                min_length: min,
                max_length: max,
                ..Default::default()
            })
        }
        1 => {
            let fmt = StringFormat::ALL[rng.below(4) as usize];
            let len = match fmt {
                StringFormat::Email => rng.between(5, 30),
                StringFormat::Uri => rng.between(3, 40),
                StringFormat::Date => 10,
                StringFormat::DateTime if rng.one_in(2) => 20,
                StringFormat::DateTime => rng.between(22, 35),
            };
            let min = maybe(rng.between(0, len), rng);
            let max = maybe(len + rng.below(10), rng);
            FieldSchema::String(StringField {
                min_length: min,
                max_length: max,
                format: Some(fmt),
                ..Default::default()
            })
        }
        2 => FieldSchema::Number(random_number_field(rng, false)),
        3 => FieldSchema::Number(random_number_field(rng, true)),
        4 => FieldSchema::Boolean(BooleanField::default()),
        k @ 5..=7 => {
            let style = [
                SingleSelectStyle::Untitled,
                SingleSelectStyle::Titled,
                SingleSelectStyle::LegacyEnumNames,
            ][(k - 5) as usize];
            FieldSchema::SingleSelect(SingleSelectField {
                title: None,
                description: None,
                style,
                options: random_options(rng, style != SingleSelectStyle::Untitled),
                default: None,
            })
        }
        k => {
            let style = if k == 8 {
                MultiSelectStyle::Untitled
            } else {
                MultiSelectStyle::Titled
            };
            let options = random_options(rng, style == MultiSelectStyle::Titled);
            let len = options.len() as u64;
            let min = maybe(rng.between(0, len), rng);
            let max = maybe(min.unwrap_or(0) + rng.below(3), rng);
            FieldSchema::MultiSelect(MultiSelectField {
                title: None,
                description: None,
                style,
                options,
                min_items: min,
                max_items: max,
                default: None,
            })
        }
    };
    let (title, description) = (maybe_text(rng), maybe_text(rng));
    let default = rng.one_in(3).then(|| valid_value(&field, rng));
    match &mut field {
        FieldSchema::String(f) => {
            (f.title, f.description) = (title, description);
            f.default = default.and_then(|d| d.as_str().map(str::to_string));
        }
        FieldSchema::Number(f) => {
            (f.title, f.description) = (title, description);
            f.default = default.and_then(|d| d.as_number().cloned());
        }
        FieldSchema::Boolean(f) => {
            (f.title, f.description) = (title, description);
            f.default = default.and_then(|d| d.as_bool());
        }
        FieldSchema::SingleSelect(f) => {
            (f.title, f.description) = (title, description);
            f.default = default.and_then(|d| d.as_str().map(str::to_string));
        }
        FieldSchema::MultiSelect(f) => {
            (f.title, f.description) = (title, description);
            f.default = default.and_then(|d| {
                d.as_array().map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
            });
        }
    }
    field
}

/// A random schema covering all eight field shapes with random bounds,
/// formats, defaults, titles and `required`; `validate_schema` reports
/// nothing above INFO for it (0 to 8 fields).
pub fn random_schema(seed: u64) -> RequestedSchema {
    let mut rng = SeedRng::new(seed);
    let n = rng.below(9) as usize;
    let mut schema = RequestedSchema {
        dollar_schema: rng
            .one_in(4)
            .then(|| "https://json-schema.org/draft/2020-12/schema".to_string()),
        ..Default::default()
    };
    for i in 0..n {
        let base = NAMES[rng.below(NAMES.len() as u64) as usize];
        let name = format!("{base}{i}");
        if rng.one_in(2) {
            schema.required.push(name.clone());
        }
        schema.properties.push((name, random_field(&mut rng)));
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::content::validate_content_map;
    use crate::schema::parse::validate_schema;

    #[test]
    fn seeds_are_deterministic() {
        assert_eq!(random_schema(42), random_schema(42));
        let s = random_schema(7);
        assert_eq!(generate_valid(&s, 3), generate_valid(&s, 3));
        let mut r = SeedRng::new(0);
        // SplitMix64 reference output for seed 0.
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn a_few_seeds_hold_the_guarantees() {
        for seed in 0..300u64 {
            let s = random_schema(seed);
            let mut f = validate_schema(&s.to_value());
            f.retain(|f| f.severity != crate::findings::Severity::Info);
            assert!(f.is_empty(), "seed {seed}: {f:?}\n{}", s.to_value());
            let c = generate_valid(&s, seed);
            let f = validate_content_map(&s, &c);
            assert!(f.is_empty(), "seed {seed}: {f:?}\n{c:?}");
            for kind in InvalidKind::ALL {
                if let Some(c) = generate_invalid(&s, kind, seed) {
                    let f = validate_content_map(&s, &c);
                    assert!(!f.is_empty(), "seed {seed} {kind:?}");
                    assert!(
                        f.iter().all(|f| f.rule == kind.rule()),
                        "seed {seed} {kind:?} {f:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn out_of_range_needs_bounds() {
        let s = RequestedSchema {
            properties: vec![("n".into(), FieldSchema::Number(NumberField::default()))],
            ..Default::default()
        };
        assert!(generate_invalid(&s, InvalidKind::OutOfRange, 1).is_none());
        assert!(generate_invalid(&s, InvalidKind::MissingRequired, 1).is_none());
        assert!(generate_invalid(&s, InvalidKind::WrongType, 1).is_some());
    }

    #[test]
    fn extreme_bounds_do_not_panic() {
        let f = NumberField {
            minimum: Number::from_f64(-f64::MAX),
            maximum: Number::from_f64(f64::MAX),
            integer: true,
            ..Default::default()
        };
        let s = RequestedSchema {
            properties: vec![("n".into(), FieldSchema::Number(f))],
            required: vec!["n".into()],
            ..Default::default()
        };
        for seed in 0..50 {
            let c = generate_valid(&s, seed);
            assert!(validate_content_map(&s, &c).is_empty());
            // No finite value lies outside [-MAX, MAX].
            assert!(generate_invalid(&s, InvalidKind::OutOfRange, seed).is_none());
        }
    }

    #[test]
    fn formatted_answers_are_the_natural_values_within_the_schemas_lengths() {
        use crate::schema::formats::matches_format;
        let field = |format, min_length, max_length| {
            FieldSchema::String(StringField {
                format: Some(format),
                min_length,
                max_length,
                ..Default::default()
            })
        };
        let cases = [
            (StringFormat::Email, None, None, 20),
            (StringFormat::Uri, None, None, 21),
            (StringFormat::Date, None, None, 10),
            (StringFormat::DateTime, None, None, 20),
            (StringFormat::Email, Some(30), None, 30),
            (StringFormat::Email, None, Some(9), 9),
            (StringFormat::Email, None, Some(5), 5),
            (StringFormat::DateTime, Some(21), None, 22),
        ];
        for (format, lo, hi, len) in cases {
            let s = RequestedSchema {
                properties: vec![("v".into(), field(format, lo, hi))],
                required: vec!["v".into()],
                ..Default::default()
            };
            for seed in 0..20 {
                let c = generate_valid(&s, seed);
                let v = c["v"].as_str().unwrap();
                assert_eq!(v.len(), len, "{format:?} {lo:?}..{hi:?}: {v}");
                assert!(matches_format(format, v), "{v}");
                assert!(validate_content_map(&s, &c).is_empty(), "{v}");
                if format == StringFormat::Email && len >= 6 {
                    let tld = v.rsplit('.').next().unwrap();
                    assert!(tld.len() >= 2, "a TLD of two letters or more: {v}");
                }
            }
        }
    }
}
