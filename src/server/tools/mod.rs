//! The demo tools and the machinery they share. A tool is a step function:
//! given its arguments and the [`Conversation`] so far it either asks for
//! more input ([`Step::Ask`]), finishes ([`Step::Done`]) or finishes by
//! performing a side effect ([`Step::Act`]). The modern handler turns asks
//! into `input_required`; the legacy driver turns them into
//! `elicitation/create` on the SSE stream. Both complete through
//! [`super::once`], which runs a side effect at most once per originating
//! request: a tool only names its effect, it never performs or guards it.

mod billing;
mod book_trip;
mod delete_file;
mod deploy;
mod profile;

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::protocol::ClientCapabilities;
use crate::protocol::capabilities::ElicitModes;
use crate::protocol::elicitation::{ElicitRequestParams, FormParams, UrlParams};
use crate::schema::RequestedSchema;
use crate::store::StoreError;

use super::app::App;
use super::conversation::{Conversation, Expect};
use super::flaw::Flaw;
use super::stats::{Stats, bump};

/// The demo tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// One form round: environment + confirm.
    Deploy,
    /// Three form rounds: itinerary, passenger, confirm.
    BookTrip,
    /// URL mode: an API key typed on the server's own page.
    ConnectBilling,
    /// Confirm, then a single-use side effect.
    DeleteFile,
    /// A form with every field shape, defaults included.
    Profile,
    /// The server's counters; no elicitation.
    Stats,
}

/// What a tool needs from the client's elicitation capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Nothing.
    Nothing,
    /// Form mode.
    Form,
    /// URL mode.
    Url,
}

impl Tool {
    /// Every tool, in `tools/list` order.
    pub const ALL: [Tool; 6] = [
        Tool::Deploy,
        Tool::BookTrip,
        Tool::ConnectBilling,
        Tool::DeleteFile,
        Tool::Profile,
        Tool::Stats,
    ];

    /// The tool's name.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Deploy => "deploy",
            Tool::BookTrip => "book_trip",
            Tool::ConnectBilling => "connect_billing",
            Tool::DeleteFile => "delete_file",
            Tool::Profile => "profile",
            Tool::Stats => "stats",
        }
    }

    /// Looks a tool up by name.
    pub fn from_name(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The mode it elicits in, given the flaws.
    pub fn needs(self, app: &App) -> Needs {
        match self {
            Tool::Stats => Needs::Nothing,
            Tool::ConnectBilling if !app.flaw(Flaw::SecretInForm) => Needs::Url,
            _ => Needs::Form,
        }
    }

    /// The arguments mirrored into `Mcp-Param-{Name}` headers (the
    /// `x-mcp-header` annotations of its input schema): `(argument, Name)`.
    pub fn header_params(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Tool::Stats => &[("section", "Section")],
            _ => &[],
        }
    }

    /// The `tools/list` entry.
    pub fn descriptor(self) -> Value {
        let (description, props, required): (&str, Value, Vec<&str>) = match self {
            Tool::Deploy => (
                "Deploy a service. Asks (form mode) for the environment and a confirmation; a decline is a tool error.",
                json!({"service": {"type": "string", "description": "Service to deploy"}}),
                vec!["service"],
            ),
            Tool::BookTrip => (
                "Book a trip in three rounds: choose an itinerary, give passenger details (email, date, integer), confirm.",
                json!({"from": {"type": "string"}, "to": {"type": "string"}}),
                vec!["from", "to"],
            ),
            Tool::ConnectBilling => (
                "Connect billing. URL mode: the API key is typed on the server's own page at /flow/<id>; the result shows only a masked key. Requires elicitation.url.",
                json!({}),
                vec![],
            ),
            Tool::DeleteFile => (
                "Delete a file after a confirmation. The deletion happens exactly once per confirmed request.",
                json!({"path": {"type": "string"}}),
                vec!["path"],
            ),
            Tool::Profile => (
                "Edit a profile: a form with every field shape (string formats, number, integer, boolean, single and multi select, legacy enumNames), with defaults.",
                json!({}),
                vec![],
            ),
            Tool::Stats => (
                "Server counters: side effects per kind, states sealed/opened/rejected, sessions, pending elicitations. `section` picks one part; it travels in the Mcp-Param-Section header too.",
                json!({"section": {
                    "type": "string",
                    "description": "One part of the counters: side_effects, states, active_sessions, pending_elicitations, store",
                    "x-mcp-header": "Section"
                }}),
                vec![],
            ),
        };
        json!({
            "name": self.name(),
            "description": description,
            "inputSchema": {"type": "object", "properties": props, "required": required},
        })
    }
}

/// Everything a tool step may look at.
pub struct Ctx<'a> {
    /// Shared server state.
    pub app: &'a Arc<App>,
    /// The calling principal.
    pub principal: &'a str,
    /// Tool arguments (an object).
    pub args: &'a Map<String, Value>,
    /// Digest of the originating request.
    pub digest: [u8; 32],
    /// The originating request's completion key
    /// ([`super::once::Origin::key`]; its flows' records are created for
    /// it).
    pub origin: &'a str,
}

/// A side effect a tool performs when it completes, counted in the stats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// `deploy` deployed.
    Deployment,
    /// `delete_file` deleted.
    FileDeletion,
    /// `connect_billing` connected.
    BillingConnection,
    /// `book_trip` booked.
    TripBooking,
    /// `profile` saved.
    ProfileSave,
}

impl Effect {
    /// Counts this effect having happened.
    pub fn count(self, stats: &Stats) {
        bump(match self {
            Effect::Deployment => &stats.deployments,
            Effect::FileDeletion => &stats.files_deleted,
            Effect::BillingConnection => &stats.billing_connected,
            Effect::TripBooking => &stats.trips_booked,
            Effect::ProfileSave => &stats.profiles_saved,
        });
    }
}

impl<'a> Ctx<'a> {
    /// The context of one call.
    pub fn new(
        app: &'a Arc<App>,
        principal: &'a str,
        args: &'a Map<String, Value>,
        digest: [u8; 32],
        origin: &'a str,
    ) -> Self {
        Ctx {
            app,
            principal,
            args,
            digest,
            origin,
        }
    }
}

/// One input the tool asks for.
#[derive(Debug, Clone)]
pub struct Ask {
    /// The `inputRequests` key.
    pub key: String,
    /// The elicitation.
    pub params: ElicitRequestParams,
}

impl Ask {
    /// A form-mode ask.
    pub fn form(key: &str, message: String, spec: &FormSpec) -> Ask {
        Ask {
            key: key.to_owned(),
            params: ElicitRequestParams::Form(FormParams {
                message,
                requested_schema: spec.json.clone(),
                mode_explicit: true,
            }),
        }
    }

    /// A URL-mode ask.
    pub fn url(key: &str, message: String, url: String, id: String) -> Ask {
        Ask {
            key: key.to_owned(),
            params: ElicitRequestParams::Url(UrlParams {
                message,
                url,
                elicitation_id: Some(id),
            }),
        }
    }
}

/// A finished tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The text content.
    pub text: String,
    /// `isError`.
    pub is_error: bool,
    /// Optional `structuredContent`.
    pub structured: Option<Value>,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(text: impl Into<String>) -> Self {
        ToolResult {
            text: text.into(),
            is_error: false,
            structured: None,
        }
    }

    /// A tool error (`isError: true`).
    pub fn error(text: impl Into<String>) -> Self {
        ToolResult {
            text: text.into(),
            is_error: true,
            structured: None,
        }
    }

    /// The `CallToolResult` object (without `resultType`).
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            "content".into(),
            json!([{"type": "text", "text": self.text}]),
        );
        m.insert("isError".into(), self.is_error.into());
        if let Some(s) = &self.structured {
            m.insert("structuredContent".into(), s.clone());
        }
        Value::Object(m)
    }
}

/// A tool step's outcome.
#[derive(Debug, Clone)]
pub enum Step {
    /// More input is needed.
    Ask(Vec<Ask>),
    /// The call is finished.
    Done(ToolResult),
    /// The call is finished by performing this side effect (which the
    /// framework runs at most once per originating request); the result
    /// says it happened.
    Act(Effect, ToolResult),
}

/// Why a tool step cannot go on (mapped to JSON-RPC errors).
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The arguments are unusable (`-32602`).
    #[error("invalid arguments: {0}")]
    BadArguments(String),
    /// The store failed.
    #[error("store: {0}")]
    Store(#[from] StoreError),
}

/// [`check_arguments`] as `app` does it, either generation: never with
/// the `accept-wrong-typed-arguments` flaw, which takes any value as valid.
pub fn judge_arguments(app: &App, tool: Tool, args: &Map<String, Value>) -> Result<(), ToolError> {
    match app.flaw(Flaw::AcceptWrongTypedArguments) {
        true => Ok(()),
        false => check_arguments(tool, args),
    }
}

/// Checks that the tool's arguments are usable before anything else.
pub fn check_arguments(tool: Tool, args: &Map<String, Value>) -> Result<(), ToolError> {
    let need = |k: &str| match args.get(k) {
        Some(Value::String(s)) if !s.trim().is_empty() && s.len() <= 256 => Ok(()),
        _ => Err(ToolError::BadArguments(format!(
            "arguments.{k} must be a non-empty string of at most 256 bytes"
        ))),
    };
    match tool {
        Tool::Deploy => need("service"),
        Tool::BookTrip => need("from").and(need("to")),
        Tool::DeleteFile => need("path"),
        Tool::Stats => match args.get("section") {
            None | Some(Value::Null) => Ok(()),
            Some(Value::String(s)) if s.len() <= 256 => Ok(()),
            Some(_) => Err(ToolError::BadArguments(
                "arguments.section must be a string of at most 256 bytes".into(),
            )),
        },
        Tool::ConnectBilling | Tool::Profile => Ok(()),
    }
}

/// A string argument already checked by [`check_arguments`].
pub fn arg<'a>(args: &'a Map<String, Value>, key: &str) -> &'a str {
    args.get(key).and_then(Value::as_str).unwrap_or("")
}

/// What the answer under `key` must look like, for this call.
pub fn expect(tool: Tool, ctx: &Ctx<'_>, key: &str) -> Option<Expect> {
    match tool {
        Tool::Deploy => deploy::expect(ctx, key),
        Tool::BookTrip => book_trip::expect(ctx, key),
        Tool::ConnectBilling => billing::expect(ctx, key),
        Tool::DeleteFile => delete_file::expect(ctx, key),
        Tool::Profile => profile::expect(ctx, key),
        Tool::Stats => None,
    }
}

/// Runs one step of `tool`.
pub async fn step(tool: Tool, ctx: &Ctx<'_>, conv: &mut Conversation) -> Result<Step, ToolError> {
    match tool {
        Tool::Deploy => deploy::step(ctx, conv).await,
        Tool::BookTrip => book_trip::step(ctx, conv).await,
        Tool::ConnectBilling => billing::step(ctx, conv).await,
        Tool::DeleteFile => delete_file::step(ctx, conv).await,
        Tool::Profile => profile::step(ctx, conv).await,
        Tool::Stats => {
            let mut stats = ctx.app.stats_json();
            if let Some(section) = ctx.args.get("section").and_then(Value::as_str) {
                let Some(part) = stats.get(section).cloned() else {
                    let known: Vec<&str> = stats
                        .as_object()
                        .map(|o| o.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    return Ok(Step::Done(ToolResult::error(format!(
                        "unknown section {section:?}: use one of {}",
                        known.join(", ")
                    ))));
                };
                stats = json!({ section: part });
            }
            let mut r = ToolResult::ok(stats.to_string());
            r.structured = Some(stats);
            Ok(Step::Done(r))
        }
    }
}

/// Decides whether `needs` can be met under `caps`; on refusal returns the
/// `requiredCapabilities` object (JSON) for `-32021`. Applies the capability flaws.
pub fn gate(app: &App, needs: Needs, modes: ElicitModes) -> Result<(), Value> {
    let without = !modes.any() && app.flaw(Flaw::ElicitWithoutCapability);
    match needs {
        Needs::Nothing => Ok(()),
        Needs::Form if modes.form || without => Ok(()),
        Needs::Form if !modes.any() => Err(ClientCapabilities::elicitation_empty().to_value()),
        Needs::Form => Err(ClientCapabilities::with_modes(true, false).to_value()),
        Needs::Url if modes.url || without => Ok(()),
        Needs::Url if modes.form && app.flaw(Flaw::UrlToFormClient) => Ok(()),
        Needs::Url => Err(ClientCapabilities::with_modes(false, true).to_value()),
    }
}

/// A refusal result for decline / cancel.
pub fn refused(what: &str, action: crate::protocol::ElicitAction) -> ToolResult {
    match action {
        crate::protocol::ElicitAction::Decline => {
            ToolResult::error(format!("{what}: declined by the user."))
        }
        _ => ToolResult::error(format!("{what}: cancelled by the user.")),
    }
}

/// A form schema, parsed once and kept with its JSON.
#[derive(Debug, Clone)]
pub struct FormSpec {
    /// The typed model answers are validated against.
    pub model: Arc<RequestedSchema>,
    /// The `requestedSchema` JSON sent to the client.
    pub json: Value,
}

impl FormSpec {
    /// Parses a schema literal written in this module.
    pub fn new(json: Value) -> Self {
        let model = Arc::new(RequestedSchema::from_value(&json).0.unwrap_or_default());
        FormSpec { model, json }
    }

    /// What an answer to it must look like.
    pub fn expect(&self) -> Expect {
        Expect::Form(self.model.clone())
    }
}
