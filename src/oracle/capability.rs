//! Capability gating (§2.4, S5): a server MUST NOT ask for an elicitation
//! mode the client did not declare (`{elicitation:{}}` is form only; no
//! `elicitation` allows none; a request without `mode` is form).

use crate::protocol::ClientCapabilities;
use crate::protocol::capabilities::ElicitModes;
use crate::protocol::mrtr::META_CLIENT_CAPABILITIES;
use serde_json::Value;

/// The `elicitation/create` input requests of a result, as `(key, mode)`
/// with `mode` `"form"` or `"url"`.
pub fn elicitations(result: &Value) -> Vec<(String, &'static str)> {
    result
        .get("inputRequests")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter(|(_, r)| {
                    r.get("method").and_then(Value::as_str) == Some("elicitation/create")
                })
                .map(|(k, r)| (k.clone(), request_mode(r.get("params"))))
                .collect()
        })
        .unwrap_or_default()
}

/// The mode of `elicitation/create` params: `"url"`, else `"form"`.
pub fn request_mode(params: Option<&Value>) -> &'static str {
    match params.and_then(|p| p.get("mode")).and_then(Value::as_str) {
        Some("url") => "url",
        _ => "form",
    }
}

/// Whether `mode` (`"form"` or `"url"`) is one of `modes`.
pub fn mode_allowed(modes: ElicitModes, mode: &str) -> bool {
    match mode {
        "url" => modes.url,
        _ => modes.form,
    }
}

/// The input requests of `result` for a mode outside `modes`.
pub fn undeclared(result: &Value, modes: ElicitModes) -> Vec<(String, &'static str)> {
    elicitations(result)
        .into_iter()
        .filter(|(_, m)| !mode_allowed(modes, m))
        .collect()
}

/// The modes of 2025-11-25 `elicitation/create` params (each as pushed on
/// a session) outside `modes`, the modes its `initialize` declared.
pub fn undeclared_pushed(elicitations: &[Value], modes: ElicitModes) -> ElicitModes {
    let mut bad = ElicitModes::default();
    for mode in elicitations.iter().map(|e| request_mode(Some(e))) {
        if !mode_allowed(modes, mode) {
            match mode {
                "url" => bad.url = true,
                _ => bad.form = true,
            }
        }
    }
    bad
}

/// The elicitation modes a 2026-07-28 request's `params` declared in
/// `_meta`; `None` when it carries no readable capabilities (nothing to
/// judge a reply by).
pub fn declared_modes(params: &Value) -> Option<ElicitModes> {
    let caps = params.get("_meta")?.get(META_CLIENT_CAPABILITIES)?;
    caps.is_object()
        .then(|| serde_json::from_value::<ClientCapabilities>(caps.clone()).ok())
        .flatten()
        .map(|c| c.elicit_modes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ir() -> Value {
        json!({"resultType": "input_required", "inputRequests": {
            "a": {"method": "elicitation/create", "params": {"message": "m", "requestedSchema": {}}},
            "b": {"method": "elicitation/create", "params": {"mode": "url", "url": "https://x", "message": "m"}},
            "c": {"method": "sampling/createMessage", "params": {}},
        }})
    }

    #[test]
    fn modes_outside_the_declared_ones_are_named() {
        let form = ClientCapabilities::with_modes(true, false).elicit_modes();
        assert_eq!(undeclared(&ir(), form), vec![("b".to_owned(), "url")]);
        let url = ClientCapabilities::with_modes(false, true).elicit_modes();
        assert_eq!(undeclared(&ir(), url), vec![("a".to_owned(), "form")]);
        let both = ClientCapabilities::with_modes(true, true).elicit_modes();
        assert!(undeclared(&ir(), both).is_empty());
        assert_eq!(undeclared(&ir(), ElicitModes::default()).len(), 2);
    }

    #[test]
    fn pushed_modes_outside_the_declared_ones_are_named() {
        let url = json!({"mode": "url", "url": "https://x", "message": "m", "elicitationId": "e"});
        let form = json!({"message": "m", "requestedSchema": {}});
        let pushed = [form.clone(), url.clone(), url];
        let form_only = ClientCapabilities::elicitation_empty().elicit_modes();
        let bad = undeclared_pushed(&pushed, form_only);
        assert!(bad.url && !bad.form);
        let url_only = ClientCapabilities::with_modes(false, true).elicit_modes();
        let bad = undeclared_pushed(&pushed, url_only);
        assert!(bad.form && !bad.url);
        let none = ClientCapabilities::none().elicit_modes();
        assert!(undeclared_pushed(std::slice::from_ref(&form), none).form);
        let both = ClientCapabilities::with_modes(true, true).elicit_modes();
        assert!(!undeclared_pushed(&pushed, both).any());
    }

    #[test]
    fn declared_modes_are_read_from_meta() {
        let p = |caps: Value| json!({"name": "t", "_meta": {META_CLIENT_CAPABILITIES: caps}});
        let m = declared_modes(&p(json!({"elicitation": {}}))).unwrap();
        assert!(m.form && !m.url);
        let m = declared_modes(&p(json!({"elicitation": {"url": {}}}))).unwrap();
        assert!(!m.form && m.url);
        let m = declared_modes(&p(json!({}))).unwrap();
        assert!(!m.any());
        assert_eq!(declared_modes(&p(json!("x"))), None);
        assert_eq!(declared_modes(&json!({"name": "t"})), None);
    }
}
