//! What a server offers besides tools: from a `resources/list` or
//! `prompts/list` reply, the `resources/read` of its first resource or the
//! `prompts/get` of its first prompt, or why there is none to send (`check`
//! and `fuzz` follow a list the same way).

use crate::client::raw::Rpc;
use serde_json::{Map, Value, json};

/// Why a list reply names nothing to read or get (said as a check's or a
/// fuzz case's reason for not probing it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoFollow {
    /// The list is empty (or not a list).
    #[error("{method} lists none: {follow} not probed")]
    NoneListed {
        /// The list method.
        method: &'static str,
        /// The read or get it would be followed by.
        follow: &'static str,
    },
    /// The server does not implement the list (`-32601`).
    #[error("{key} not offered ({method}: -32601)")]
    NotOffered {
        /// `resources` or `prompts`.
        key: &'static str,
        /// The list method.
        method: &'static str,
    },
    /// The list was answered otherwise (how).
    #[error("{method} answered {reply}: {follow} not probed")]
    Answered {
        /// The list method.
        method: &'static str,
        /// The reply, described.
        reply: String,
        /// The read or get it would be followed by.
        follow: &'static str,
    },
    /// The first entry lacks the member the follow needs.
    #[error("{0}")]
    Unnamed(&'static str),
}

super::wire::message_of!(NoFollow);

/// A read or get to send: its label and params.
#[derive(Debug, Clone, PartialEq)]
pub struct Follow {
    /// The method: `resources/read` or `prompts/get`.
    pub method: &'static str,
    /// `resources/read URI` or `prompts/get NAME`.
    pub label: String,
    /// Its params (without `_meta`).
    pub params: Value,
}

/// The `resources/read` of the first resource a `resources/list` reply
/// names, or why there is none.
pub fn first_read(list: &Rpc) -> Result<Follow, NoFollow> {
    let first = first_of(list, "resources/list", "resources")?;
    let uri = first
        .get("uri")
        .and_then(Value::as_str)
        .ok_or(NoFollow::Unnamed(
            "resources/list: its first resource has no uri: resources/read not probed",
        ))?;
    Ok(Follow {
        method: "resources/read",
        label: format!("resources/read {uri}"),
        params: json!({"uri": uri}),
    })
}

/// The `prompts/get` of the first prompt a `prompts/list` reply names
/// (each required argument given a placeholder), or why there is none.
pub fn first_get(list: &Rpc) -> Result<Follow, NoFollow> {
    let first = first_of(list, "prompts/list", "prompts")?;
    let name = first
        .get("name")
        .and_then(Value::as_str)
        .ok_or(NoFollow::Unnamed(
            "prompts/list: its first prompt has no name: prompts/get not probed",
        ))?;
    let arguments: Map<String, Value> = first
        .get("arguments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|a| a.get("required").and_then(Value::as_bool) == Some(true))
        .filter_map(|a| a.get("name").and_then(Value::as_str))
        .map(|n| (n.to_owned(), Value::from("elicitkit")))
        .collect();
    let mut params = json!({"name": name});
    if !arguments.is_empty() {
        params["arguments"] = Value::Object(arguments);
    }
    Ok(Follow {
        method: "prompts/get",
        label: format!("prompts/get {name}"),
        params,
    })
}

/// The first entry of `key` in a list reply, or why there is none.
fn first_of<'a>(
    list: &'a Rpc,
    method: &'static str,
    key: &'static str,
) -> Result<&'a Value, NoFollow> {
    let follow = if key == "resources" {
        "resources/read"
    } else {
        "prompts/get"
    };
    match list {
        Rpc::Result(v) => v
            .get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .ok_or(NoFollow::NoneListed { method, follow }),
        Rpc::Error(e) if e.code == crate::protocol::codes::METHOD_NOT_FOUND => {
            Err(NoFollow::NotOffered { key, method })
        }
        other => Err(NoFollow::Answered {
            method,
            reply: other.describe(),
            follow,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_listed_item_is_followed_or_the_reason_given() {
        let r = Rpc::Result(json!({"resources":[{"uri":"a://1"},{"uri":"a://2"}]}));
        assert_eq!(first_read(&r).unwrap().params, json!({"uri":"a://1"}));
        let p = Rpc::Result(json!({"prompts":[{"name":"p","arguments":[
            {"name":"x","required":true},{"name":"y"}]}]}));
        assert_eq!(
            first_get(&p).unwrap().params,
            json!({"name":"p","arguments":{"x":"elicitkit"}})
        );
        let none = first_read(&Rpc::Result(json!({"resources":[]}))).unwrap_err();
        assert_eq!(
            none.to_string(),
            "resources/list lists none: resources/read not probed"
        );
        let absent = Rpc::Error(crate::protocol::jsonrpc::ErrorObject::new(-32601, "no"));
        assert_eq!(
            first_get(&absent).unwrap_err().to_string(),
            "prompts not offered (prompts/list: -32601)"
        );
        let unnamed = first_get(&Rpc::Result(json!({"prompts":[{}]}))).unwrap_err();
        assert!(matches!(unnamed, NoFollow::Unnamed(w) if w.contains("no name")));
    }
}
