//! Property tests for the schema engine's generators and its robustness.
//!
//! - `random_schema` is clean, round-trips through JSON and the parser;
//! - `generate_valid` content has no findings;
//! - `generate_invalid(kind)` content has findings of exactly that kind;
//! - nothing panics on arbitrary JSON, schemas or URLs.

use elicitkit::findings::Severity;
use elicitkit::schema::{
    InvalidKind, RequestedSchema, asks_for_secret, form_secret_findings, generate_invalid,
    generate_valid, parse_schema, random_schema, url_findings, validate_content,
    validate_content_map, validate_schema,
};
use proptest::prelude::*;
use serde_json::{Map, Value};

/// Seeds as a proptest strategy over schemas (shrinks toward seed 0).
fn arb_schema() -> impl Strategy<Value = (u64, RequestedSchema)> {
    any::<u64>().prop_map(|seed| (seed, random_schema(seed)))
}

fn sorted(mut s: RequestedSchema) -> RequestedSchema {
    s.properties.sort_by(|a, b| a.0.cmp(&b.0));
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn random_schemas_are_clean_and_round_trip((seed, schema) in arb_schema()) {
        let v = schema.to_value();
        let above_info: Vec<_> = validate_schema(&v)
            .into_iter()
            .filter(|f| f.severity != Severity::Info)
            .collect();
        prop_assert!(above_info.is_empty(), "seed {}: {:?}", seed, above_info);
        // Parsed back: the same model (the parser yields sorted keys).
        let (model, _) = parse_schema(&v);
        prop_assert_eq!(model.map(sorted), Some(sorted(schema.clone())));
        // Through JSON text: still clean. (Not bit-identical: serde_json
        // without `float_roundtrip` may move a 17-digit float by one ULP.)
        let text = serde_json::to_string(&v).expect("serialise");
        let back: Value = serde_json::from_str(&text).expect("reparse");
        prop_assert!(validate_schema(&back).iter().all(|f| f.severity == Severity::Info));
        prop_assert!(form_secret_findings(&schema).is_empty());
    }

    #[test]
    fn valid_content_validates((seed, schema) in arb_schema(), content_seed in any::<u64>()) {
        let c = generate_valid(&schema, content_seed);
        let f = validate_content_map(&schema, &c);
        prop_assert!(f.is_empty(), "seed {} / {}: {:?} for {:?}", seed, content_seed, f, c);
        for name in &schema.required {
            prop_assert!(c.contains_key(name));
        }
    }

    #[test]
    fn invalid_content_fails_in_exactly_one_way(
        (seed, schema) in arb_schema(),
        content_seed in any::<u64>(),
        k in 0..InvalidKind::ALL.len(),
    ) {
        let kind = InvalidKind::ALL[k];
        if let Some(c) = generate_invalid(&schema, kind, content_seed) {
            let f = validate_content_map(&schema, &c);
            prop_assert!(!f.is_empty(), "seed {} / {} {:?}: no finding for {:?}", seed, content_seed, kind, c);
            for x in &f {
                prop_assert_eq!(x.rule.as_str(), kind.rule(), "seed {} / {}: {:?}", seed, content_seed, f);
                prop_assert_eq!(x.severity, kind.severity());
            }
        }
    }
}

#[test]
fn generation_is_deterministic() {
    for seed in [0u64, 1, 42, u64::MAX] {
        let s = random_schema(seed);
        assert_eq!(s, random_schema(seed));
        assert_eq!(generate_valid(&s, seed), generate_valid(&s, seed));
        for kind in InvalidKind::ALL {
            assert_eq!(
                generate_invalid(&s, kind, seed),
                generate_invalid(&s, kind, seed)
            );
        }
    }
}

#[test]
fn every_kind_and_shape_is_reached() {
    let mut kinds = std::collections::BTreeSet::new();
    let mut shapes = std::collections::BTreeSet::new();
    for seed in 0..2000u64 {
        let s = random_schema(seed);
        for (_, f) in &s.properties {
            let v = f.to_value();
            let shape = match (
                v["type"].as_str(),
                v.get("oneOf"),
                v.get("enumNames"),
                v.get("enum"),
            ) {
                (Some("string"), Some(_), _, _) => "titled-single",
                (Some("string"), None, Some(_), _) => "legacy",
                (Some("string"), None, None, Some(_)) => "untitled-single",
                (Some("array"), ..) if v["items"].get("anyOf").is_some() => "titled-multi",
                (Some("array"), ..) => "untitled-multi",
                (Some("integer" | "number"), ..) => "number",
                (Some(t), ..) => {
                    if t == "string" {
                        "string"
                    } else {
                        "boolean"
                    }
                }
                (None, ..) => "none",
            };
            shapes.insert(shape);
        }
        for kind in InvalidKind::ALL {
            if generate_invalid(&s, kind, seed).is_some() {
                kinds.insert(kind);
            }
        }
    }
    assert_eq!(shapes.len(), 8, "{shapes:?}");
    assert_eq!(kinds.len(), InvalidKind::ALL.len(), "{kinds:?}");
}

fn arb_json() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("type"),
        Just("properties"),
        Just("enum"),
        Just("oneOf"),
        Just("anyOf"),
        Just("items"),
        Just("required"),
        Just("default"),
        Just("const"),
        Just("title"),
        Just("format"),
        Just("minimum"),
        Just("maximum"),
        Just("minLength"),
        Just("maxLength"),
        Just("minItems"),
        Just("maxItems"),
        Just("enumNames"),
        Just("pattern"),
        Just("a"),
        Just("b"),
    ]
    .prop_map(str::to_string);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f)
            .map(Value::Number)),
        prop_oneof![
            Just("string"),
            Just("object"),
            Just("array"),
            Just("number"),
            Just("integer"),
            Just("boolean"),
            Just("email"),
            Just("uri"),
            Just("date"),
            Just("date-time"),
            Just("a"),
        ]
        .prop_map(|s| Value::String(s.to_string())),
        "\\PC{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn nothing_panics_on_arbitrary_json(schema in arb_json(), content in arb_json(), seed in any::<u64>()) {
        let wrapped = serde_json::json!({"type": "object", "properties": {"p": schema.clone(), "q": content.clone()}});
        for v in [&schema, &wrapped] {
            let (model, findings) = parse_schema(v);
            for f in &findings {
                prop_assert!(f.pointer.is_empty() || f.pointer.starts_with('/'));
            }
            if let Some(m) = model {
                let _ = validate_content(&m, &content);
                let _ = form_secret_findings(&m);
                let c = generate_valid(&m, seed);
                // Clean schemas must yield valid content even from odd input.
                if !findings.iter().any(|f| f.severity == Severity::Must) {
                    prop_assert!(validate_content_map(&m, &c).is_empty());
                }
                for kind in InvalidKind::ALL {
                    let _ = generate_invalid(&m, kind, seed);
                }
            }
        }
    }

    #[test]
    fn url_and_text_heuristics_never_panic(s in "\\PC{0,80}", path in "[a-z0-9%@.+=&?#/:-]{0,40}") {
        let _ = url_findings(&s);
        let _ = asks_for_secret(&s);
        let _ = url_findings(&format!("https://example.com/{path}"));
    }
}
