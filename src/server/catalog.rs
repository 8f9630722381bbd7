//! What the reference server offers besides tools: one resource (a short
//! guide to the server) and one prompt, the same for every principal and
//! both generations (2026-07-28 lists add the eliciting prompt and resource
//! of [`super::non_tool`]). A server started without tools (`serve --no-tools`)
//! still answers every list, read and get with them. The 2026-07-28
//! handler adds `resultType`, and the caching hints on the lists and the
//! read (§4.4a); the values here carry neither.

use serde_json::{Value, json};

/// The one resource's URI.
pub const GUIDE_URI: &str = "elicitkit://guide";

/// The one prompt's name.
pub const PROMPT_NAME: &str = "try_elicitation";

const GUIDE: &str = "elicitkit reference server. Its tools (unless started with --no-tools) \
ask their caller for input: in a form, or on a page of this server (URL mode). \
2026-07-28 clients get input_required results with a sealed requestState and retry \
with inputResponses; 2025-11-25 clients get elicitation/create on the call's stream.";

/// The `resources/list` result.
pub fn resources_list() -> Value {
    json!({"resources": [{
        "uri": GUIDE_URI,
        "name": "guide",
        "title": "About this server",
        "description": "What the elicitkit reference server does",
        "mimeType": "text/plain",
    }]})
}

/// The `resources/read` result for `uri`, when this server serves it.
pub fn read(uri: &str) -> Option<Value> {
    (uri == GUIDE_URI)
        .then(|| json!({"contents": [{"uri": GUIDE_URI, "mimeType": "text/plain", "text": GUIDE}]}))
}

/// The `prompts/list` result.
pub fn prompts_list() -> Value {
    json!({"prompts": [{
        "name": PROMPT_NAME,
        "title": "Try elicitation",
        "description": "Asks the model to explain how this server asks for input",
    }]})
}

/// The `prompts/get` result for `name`, when this server has that prompt.
pub fn get_prompt(name: &str) -> Option<Value> {
    (name == PROMPT_NAME).then(|| {
        json!({
            "description": "Explain how this server asks for input",
            "messages": [{"role": "user", "content": {"type": "text", "text": format!(
                "Read {GUIDE_URI} and explain, in two sentences, how this server asks its caller for input."
            )}}],
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_listed_can_be_read_and_got() {
        let uri = resources_list()["resources"][0]["uri"].clone();
        assert!(read(uri.as_str().unwrap()).is_some());
        assert!(read("elicitkit://other").is_none());
        let name = prompts_list()["prompts"][0]["name"].clone();
        let got = get_prompt(name.as_str().unwrap()).unwrap();
        assert_eq!(got["messages"][0]["role"], "user");
        assert!(get_prompt("other").is_none());
    }
}
