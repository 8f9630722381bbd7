//! The rmcp interop server: the shared contract of `tests/interop/README.md`
//! (`place_order`, `plan_trip`, `connect_account`, `list_orders`) on rmcp
//! 3.11 (the Rust SDK, a dev-dependency), written the way rmcp's docs and
//! examples show: `#[tool_router]`/`#[tool_handler]`, typed argument and form
//! structs (`schemars`, `elicit_safe!`, `ElicitationSchema::from_type`), a
//! `StreamableHttpService` with a `LocalSessionManager` and the default
//! `StreamableHttpServerConfig`, nested under `/mcp` of an axum router that
//! also serves the URL-mode page `/connect/<id>`.
//!
//! Generations, one endpoint. rmcp routes each POST by what it carries:
//! - 2026-07-28 (MRTR): a request whose `_meta` names the version is served
//!   statelessly (rmcp does this whatever `legacy_session_mode` says). A tool
//!   asks by returning an `InputRequiredResult`; the client retries with
//!   `inputResponses` and the echoed `requestState`.
//! - 2025-11-25: `initialize` opens an rmcp session (`Mcp-Session-Id`,
//!   `legacy_session_mode` is on by default) and the same tools ask with
//!   `peer.elicit::<T>()` / `peer.elicit_url()`, which push
//!   `elicitation/create` on the call's SSE stream and await the answer.
//!
//! Both paths share the forms, the answers' handling and the records; a tool
//! picks its path from `RequestContext::protocol_version()`. rmcp itself
//! refuses the crossings (an `InputRequiredResult` to a 2025-11-25 peer, a
//! server-to-client request on 2026-07-28).
//!
//! State. The MRTR progress is sealed into `requestState` with rmcp's
//! `RequestStateCodec::seal_json` (HMAC-SHA256, fixed 32+ byte key) and opened
//! with `open_json` on retry, as `examples/servers/src/mrtr.rs` does: signed,
//! not encrypted (base64url-readable), no TTL and no associated data (the
//! codec offers both through `SealOptions`; the example uses neither), so a
//! state is bound to nothing but its own payload type. `plan_trip` carries
//! round 1's answers forward inside its sealed state. The URL flow keeps its
//! `done` flag server-side, keyed by the random id the state carries. The
//! records (orders, trips, connections) live in memory for the process.
//!
//! Like rmcp's example: capability gating per request from
//! `RequestContext::client_capabilities()` (`-32021` when form or URL mode is
//! missing), decline and cancel answered as plain text results, a missing or
//! unparsable answer as `-32602`. Answers are checked only as far as serde
//! typing goes (enum members, types, required fields), not against the
//! schema's ranges or formats. No authentication, no Origin allow-list (the
//! rmcp default), loopback `Host` only (the rmcp default).
//!
//! In-process API for tests: [`start`] / [`start_with`]; the binary over this
//! module is `examples/interop_rmcp.rs`.

// Two crates include this file (a test and the example); each uses part of it.
#![allow(dead_code)]

use axum::extract::rejection::FormRejection;
use axum::extract::{Form, Path, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::serve::ListenerExt;
use rmcp::handler::server::tool::{InputResponses, RequestState};
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{
    CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock, ElicitRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability, ElicitationSchema,
    FormElicitationCapability, Implementation, InputRequest, InputRequests, InputRequiredResult,
    ProtocolVersion, RequestStateCodec, ServerCapabilities, ServerConfig, UrlElicitationCapability,
};
use rmcp::service::{ElicitationError, RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ErrorData, ServerHandler, elicit_safe, schemars, tool, tool_handler, tool_router};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The signing key for `requestState` (≥ 32 bytes, as `try_new` requires).
const KEY: &[u8] = b"elicitkit-interop-rmcp-request-state-key";

// ---------------------------------------------------------------------------
// What the tools did (reported by `list_orders`).

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrderRecord {
    order_id: u64,
    item: String,
    quantity: u8,
    size: Size,
    gift_wrap: bool,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TripRecord {
    destination: String,
    departure: String,
    travellers: u8,
    seat: Seat,
    meal: Option<bool>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ConnectionRecord {
    service: Service,
}

/// `list_orders`'s structured content.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Listing {
    orders: Vec<OrderRecord>,
    trips: Vec<TripRecord>,
    connections: Vec<ConnectionRecord>,
}

/// A URL-mode flow: which service it connects, and whether its page was
/// submitted (the key itself stays here and is never sent back).
struct Flow {
    service: Service,
    api_key: Option<String>,
}

#[derive(Default)]
struct Records {
    orders: Vec<OrderRecord>,
    trips: Vec<TripRecord>,
    connections: Vec<ConnectionRecord>,
    flows: HashMap<String, Flow>,
}

type Shared = Arc<Mutex<Records>>;

// ---------------------------------------------------------------------------
// Tool arguments.

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct PlaceOrderArgs {
    /// What to order.
    item: String,
    /// How many (1 when omitted).
    #[schemars(range(min = 1, max = 10))]
    quantity: Option<u8>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct PlanTripArgs {
    /// Where to go.
    destination: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum Service {
    Billing,
    Calendar,
}

impl Service {
    fn name(self) -> &'static str {
        match self {
            Service::Billing => "billing",
            Service::Calendar => "calendar",
        }
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ConnectAccountArgs {
    /// Which account to connect.
    service: Service,
}

// ---------------------------------------------------------------------------
// Forms, typed the way `peer.elicit::<T>()` wants them.

#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(inline)]
pub enum Size {
    S,
    M,
    L,
}

impl Size {
    fn name(self) -> &'static str {
        match self {
            Size::S => "S",
            Size::M => "M",
            Size::L => "L",
        }
    }
}

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OrderDetails {
    /// Garment size.
    size: Size,
    /// Wrap it as a gift?
    gift_wrap: bool,
}
elicit_safe!(OrderDetails);

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TripDates {
    /// Departure date.
    #[schemars(extend("format" = "date"))]
    departure: String,
    /// Number of travellers.
    #[schemars(range(min = 1, max = 9))]
    travellers: u8,
}
elicit_safe!(TripDates);

#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum Seat {
    Aisle,
    Window,
}

impl Seat {
    fn name(self) -> &'static str {
        match self {
            Seat::Aisle => "aisle",
            Seat::Window => "window",
        }
    }
}

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TripSeat {
    /// Seat preference.
    seat: Seat,
    /// Book a meal?
    meal: Option<bool>,
}
elicit_safe!(TripSeat);

// ---------------------------------------------------------------------------
// What each tool seals into `requestState` between MRTR rounds.

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum OrderInput {
    Details,
}

#[derive(Debug, Serialize, Deserialize)]
struct OrderState {
    awaiting: OrderInput,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "awaiting", rename_all = "lowercase")]
enum TripState {
    Dates,
    Seat { departure: String, travellers: u8 },
}

#[derive(Debug, Serialize, Deserialize)]
struct ConnectState {
    flow: String,
}

/// One elicitation's outcome, whichever generation carried it.
enum Answer<T> {
    Accepted(T),
    Declined,
    Cancelled,
}

fn text(s: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(s.into())]).into()
}

fn uses_mrtr(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}

fn form_schema<T: schemars::JsonSchema>() -> Result<ElicitationSchema, ErrorData> {
    ElicitationSchema::from_type::<T>()
        .map_err(|e| ErrorData::internal_error(format!("form schema: {e}"), None))
}

/// The legacy answer to `peer.elicit::<T>()`, as the rmcp docs match it.
fn from_elicit<T>(r: Result<Option<T>, ElicitationError>) -> Result<Answer<T>, ErrorData> {
    match r {
        Ok(Some(t)) => Ok(Answer::Accepted(t)),
        Ok(None) | Err(ElicitationError::NoContent) => Err(ErrorData::invalid_params(
            "accepted elicitation had no content",
            None,
        )),
        Err(ElicitationError::UserDeclined) => Ok(Answer::Declined),
        Err(ElicitationError::UserCancelled) => Ok(Answer::Cancelled),
        Err(ElicitationError::ParseError { error, .. }) => Err(ErrorData::invalid_params(
            format!("invalid elicitation content: {error}"),
            None,
        )),
        Err(e) => Err(ErrorData::internal_error(
            format!("elicitation failed: {e}"),
            None,
        )),
    }
}

/// The elicitation modes this request's client declared (per request on
/// 2026-07-28, from `initialize` on a 2025-11-25 session).
fn declared(context: &RequestContext<RoleServer>) -> (bool, bool) {
    match context.client_capabilities().and_then(|c| c.elicitation) {
        None => (false, false),
        // `elicitation: {}` means form only.
        Some(e) if e.form.is_none() && e.url.is_none() => (true, false),
        Some(e) => (e.form.is_some(), e.url.is_some()),
    }
}

fn require(form: bool, url: bool) -> ErrorData {
    let mut elicitation = ElicitationCapability::new();
    if form {
        elicitation = elicitation.with_form(FormElicitationCapability::default());
    }
    if url {
        elicitation = elicitation.with_url(UrlElicitationCapability::default());
    }
    let mut required = ClientCapabilities::default();
    required.elicitation = Some(elicitation);
    ErrorData::missing_required_client_capability(required)
}

/// The server handler; a fresh clone serves each session or stateless request.
#[derive(Clone)]
pub struct Shop {
    codec: Arc<RequestStateCodec>,
    records: Shared,
    /// `http://127.0.0.1:PORT`, for the URL-mode links.
    origin: Arc<str>,
}

impl Shop {
    fn seal<S: Serialize>(&self, state: &S) -> Result<String, ErrorData> {
        self.codec
            .seal_json(state)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    fn open<S: DeserializeOwned>(&self, sealed: &str) -> Result<S, ErrorData> {
        self.codec
            .open_json(sealed)
            .map_err(|_| ErrorData::invalid_params("tampered or unknown request state", None))
    }

    /// An `InputRequiredResult` asking one thing under `key`.
    fn ask<S: Serialize>(
        &self,
        key: &str,
        params: ElicitRequestParams,
        state: &S,
    ) -> Result<CallToolResponse, ErrorData> {
        let sealed = self.seal(state)?;
        let mut requests = InputRequests::new();
        requests.insert(
            key.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        );
        Ok(InputRequiredResult::new(Some(requests), Some(sealed)).into())
    }

    fn form<T: schemars::JsonSchema>(message: &str) -> Result<ElicitRequestParams, ErrorData> {
        Ok(ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message.into(),
            requested_schema: form_schema::<T>()?,
        })
    }

    /// The client's `ElicitResult` under `key` of this retry.
    fn response(
        responses: &Option<rmcp::model::InputResponses>,
        key: &str,
    ) -> Result<ElicitResult, ErrorData> {
        let raw = responses.as_ref().and_then(|r| r.get(key)).ok_or_else(|| {
            ErrorData::invalid_params(format!("missing {key} elicitation response"), None)
        })?;
        ElicitResult::deserialize(raw).map_err(|_| {
            ErrorData::invalid_params(format!("invalid {key} elicitation response"), None)
        })
    }

    /// A form answer of this retry, parsed into `T`.
    fn answer<T: DeserializeOwned>(
        responses: &Option<rmcp::model::InputResponses>,
        key: &str,
    ) -> Result<Answer<T>, ErrorData> {
        let r = Self::response(responses, key)?;
        match r.action {
            ElicitationAction::Accept => {
                let content = r.content.ok_or_else(|| {
                    ErrorData::invalid_params("accepted elicitation had no content", None)
                })?;
                serde_json::from_value(content)
                    .map(Answer::Accepted)
                    .map_err(|e| {
                        ErrorData::invalid_params(format!("invalid elicitation content: {e}"), None)
                    })
            }
            ElicitationAction::Decline => Ok(Answer::Declined),
            ElicitationAction::Cancel => Ok(Answer::Cancelled),
            _ => Err(ErrorData::invalid_params(
                "unsupported elicitation action",
                None,
            )),
        }
    }

    fn place(&self, args: &PlaceOrderArgs, d: OrderDetails) -> CallToolResponse {
        let quantity = args.quantity.unwrap_or(1);
        let mut records = self.records.lock().expect("records lock");
        let order_id = records.orders.len() as u64 + 1;
        records.orders.push(OrderRecord {
            order_id,
            item: args.item.clone(),
            quantity,
            size: d.size,
            gift_wrap: d.gift_wrap,
        });
        let mut result = CallToolResult::success(vec![ContentBlock::text(format!(
            "Order #{order_id} placed: {quantity} × {} (size {})",
            args.item,
            d.size.name()
        ))]);
        result.structured_content = Some(serde_json::json!({
            "orderId": order_id, "item": args.item, "size": d.size,
        }));
        result.into()
    }

    fn book(
        &self,
        destination: &str,
        departure: String,
        travellers: u8,
        s: TripSeat,
    ) -> CallToolResponse {
        let line = format!(
            "Trip to {destination} on {departure} for {travellers}, {} seat",
            s.seat.name()
        );
        self.records
            .lock()
            .expect("records lock")
            .trips
            .push(TripRecord {
                destination: destination.to_owned(),
                departure,
                travellers,
                seat: s.seat,
                meal: s.meal,
            });
        text(line)
    }

    /// Starts a URL-mode flow and returns its id.
    fn new_flow(&self, service: Service) -> String {
        let id = format!("{:032x}", rand::random::<u128>());
        self.records.lock().expect("records lock").flows.insert(
            id.clone(),
            Flow {
                service,
                api_key: None,
            },
        );
        id
    }

    fn flow_url(&self, id: &str) -> String {
        format!("{}/connect/{id}", self.origin)
    }

    /// `Some(true)` once the flow's page was submitted; `None` for an unknown id.
    fn flow_done(&self, id: &str) -> Option<bool> {
        let records = self.records.lock().expect("records lock");
        records.flows.get(id).map(|f| f.api_key.is_some())
    }

    /// Records the connection and retires the flow.
    fn connect(&self, id: &str) -> CallToolResponse {
        let mut records = self.records.lock().expect("records lock");
        let service = records.flows.remove(id).map(|f| f.service);
        match service {
            Some(service) => {
                records.connections.push(ConnectionRecord { service });
                text(format!("Connected {}", service.name()))
            }
            None => text("Not connected"),
        }
    }
}

const CONNECT_MESSAGE: &str = "Open this page to enter your API key for the account.";

#[tool_router]
impl Shop {
    fn new(records: Shared, origin: &str) -> Self {
        Shop {
            codec: Arc::new(RequestStateCodec::try_new(KEY).expect("a key of at least 32 bytes")),
            records,
            origin: origin.into(),
        }
    }

    #[tool(description = "Place an order; asks for the size and gift wrapping.")]
    async fn place_order(
        &self,
        Parameters(args): Parameters<PlaceOrderArgs>,
        context: RequestContext<RoleServer>,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        if !declared(&context).0 {
            return Err(require(true, false));
        }
        const MESSAGE: &str = "Which size, and should it be gift wrapped?";
        let answer = if uses_mrtr(&context) {
            match state {
                None => {
                    let state = OrderState {
                        awaiting: OrderInput::Details,
                    };
                    return self.ask("details", Self::form::<OrderDetails>(MESSAGE)?, &state);
                }
                Some(sealed) => {
                    let OrderState {
                        awaiting: OrderInput::Details,
                    } = self.open(&sealed)?;
                    Self::answer::<OrderDetails>(&responses, "details")?
                }
            }
        } else {
            from_elicit(context.peer.elicit::<OrderDetails>(MESSAGE).await)?
        };
        Ok(match answer {
            Answer::Accepted(details) => self.place(&args, details),
            Answer::Declined => text("Order not placed (declined)"),
            Answer::Cancelled => text("Order not placed (cancelled)"),
        })
    }

    #[tool(description = "Plan a trip; asks for the dates, then for a seat.")]
    async fn plan_trip(
        &self,
        Parameters(args): Parameters<PlanTripArgs>,
        context: RequestContext<RoleServer>,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        if !declared(&context).0 {
            return Err(require(true, false));
        }
        const DATES: &str = "When do you leave, and how many travel?";
        const SEAT: &str = "Which seat, and a meal?";
        const STOPPED: &str = "Trip planning stopped";
        if !uses_mrtr(&context) {
            let peer = &context.peer;
            let Answer::Accepted(dates) = from_elicit(peer.elicit::<TripDates>(DATES).await)?
            else {
                return Ok(text(STOPPED));
            };
            let Answer::Accepted(seat) = from_elicit(peer.elicit::<TripSeat>(SEAT).await)? else {
                return Ok(text(STOPPED));
            };
            return Ok(self.book(&args.destination, dates.departure, dates.travellers, seat));
        }
        let state: Option<TripState> = state.map(|s| self.open(&s)).transpose()?;
        match state {
            None => self.ask("dates", Self::form::<TripDates>(DATES)?, &TripState::Dates),
            Some(TripState::Dates) => match Self::answer::<TripDates>(&responses, "dates")? {
                Answer::Accepted(d) => self.ask(
                    "seat",
                    Self::form::<TripSeat>(SEAT)?,
                    &TripState::Seat {
                        departure: d.departure,
                        travellers: d.travellers,
                    },
                ),
                _ => Ok(text(STOPPED)),
            },
            Some(TripState::Seat {
                departure,
                travellers,
            }) => match Self::answer::<TripSeat>(&responses, "seat")? {
                Answer::Accepted(seat) => {
                    Ok(self.book(&args.destination, departure, travellers, seat))
                }
                _ => Ok(text(STOPPED)),
            },
        }
    }

    #[tool(description = "Connect an account; the key is entered on a page of this server.")]
    async fn connect_account(
        &self,
        Parameters(args): Parameters<ConnectAccountArgs>,
        context: RequestContext<RoleServer>,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        if !declared(&context).1 {
            return Err(require(false, true));
        }
        if !uses_mrtr(&context) {
            let id = self.new_flow(args.service);
            let url = url::Url::parse(&self.flow_url(&id))
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            loop {
                let action = context
                    .peer
                    .elicit_url(CONNECT_MESSAGE, url.clone(), id.clone())
                    .await
                    .map_err(|e| {
                        ErrorData::internal_error(format!("elicitation failed: {e}"), None)
                    })?;
                match action {
                    ElicitationAction::Accept if self.flow_done(&id) == Some(true) => {
                        return Ok(self.connect(&id));
                    }
                    ElicitationAction::Accept => continue,
                    _ => return Ok(text("Not connected")),
                }
            }
        }
        let ask_again = |id: String| {
            let params = ElicitRequestParams::UrlElicitationParams {
                meta: None,
                message: CONNECT_MESSAGE.into(),
                url: self.flow_url(&id),
                // 2026-07-28 removed `elicitationId`; rmcp takes it empty.
                elicitation_id: String::new(),
            };
            self.ask("connect", params, &ConnectState { flow: id })
        };
        match state {
            None => ask_again(self.new_flow(args.service)),
            Some(sealed) => {
                let ConnectState { flow } = self.open(&sealed)?;
                let r = Self::response(&responses, "connect")?;
                match r.action {
                    ElicitationAction::Accept => match self.flow_done(&flow) {
                        Some(true) => Ok(self.connect(&flow)),
                        Some(false) => ask_again(flow),
                        None => Err(ErrorData::invalid_params(
                            "unknown or finished connect flow",
                            None,
                        )),
                    },
                    _ => Ok(text("Not connected")),
                }
            }
        }
    }

    #[tool(
        description = "What the other tools did: orders, trips and connected accounts.",
        annotations(read_only_hint = true)
    )]
    async fn list_orders(&self) -> Result<Json<Listing>, ErrorData> {
        let records = self.records.lock().expect("records lock");
        Ok(Json(Listing {
            orders: records.orders.clone(),
            trips: records.trips.clone(),
            connections: records.connections.clone(),
        }))
    }
}

#[tool_handler]
impl ServerHandler for Shop {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("elicitkit-interop-rmcp", "0.1.0"))
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(&[ProtocolVersion::V_2026_07_28, ProtocolVersion::V_2025_11_25])
    }
}

// ---------------------------------------------------------------------------
// The URL-mode page.

const KEY_FIELD: &str =
    r#"<input type="password" name="api_key" required minlength="12" pattern="[A-Za-z0-9]+">"#;

fn page(status: StatusCode, body: String) -> Response {
    let html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Connect account</title></head><body>{body}</body></html>"
    );
    (status, Html(html)).into_response()
}

async fn connect_page(State(records): State<Shared>, Path(id): Path<String>) -> Response {
    let service = records
        .lock()
        .expect("records lock")
        .flows
        .get(&id)
        .map(|f| f.service);
    match service {
        None => page(StatusCode::NOT_FOUND, "<p>Unknown link.</p>".into()),
        Some(service) => page(
            StatusCode::OK,
            format!(
                "<h1>Connect {}</h1><form method=\"post\"><input type=\"hidden\" name=\"id\" value=\"{id}\"><label>API key {KEY_FIELD}</label><button type=\"submit\">Connect</button></form>",
                service.name()
            ),
        ),
    }
}

#[derive(Deserialize)]
struct KeyForm {
    api_key: String,
}

async fn connect_submit(
    State(records): State<Shared>,
    Path(id): Path<String>,
    form: Result<Form<KeyForm>, FormRejection>,
) -> Response {
    let mut records = records.lock().expect("records lock");
    let Some(flow) = records.flows.get_mut(&id) else {
        return page(StatusCode::NOT_FOUND, "<p>Unknown link.</p>".into());
    };
    let key = match form {
        Ok(Form(f)) => f.api_key,
        Err(_) => String::new(),
    };
    if key.len() < 12 || !key.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return page(
            StatusCode::BAD_REQUEST,
            "<p>That key does not look right: 12 or more letters and digits.</p>".into(),
        );
    }
    flow.api_key = Some(key);
    page(
        StatusCode::OK,
        "<p>Connected. You can close this page and go back to your assistant.</p>".into(),
    )
}

// ---------------------------------------------------------------------------
// Running it.

/// How to start the server.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// The port on 127.0.0.1 (0: any free port).
    pub port: u16,
    /// Set TCP_NODELAY on every accepted socket (false leaves Nagle on).
    pub nodelay: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            port: 0,
            nodelay: true,
        }
    }
}

/// A running server on 127.0.0.1.
pub struct Running {
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    stop: tokio::sync::oneshot::Sender<()>,
    served: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Stops the server (sessions and open streams end at once).
    pub fn stop(self) {
        let _ = self.stop.send(());
    }

    /// Stops the server and waits until it has closed its connections.
    pub async fn shutdown(self) {
        let _ = self.stop.send(());
        let _ = self.served.await;
    }
}

/// The server's router without a socket (the MCP endpoint under `/mcp`,
/// URL-flow pages under `/connect/`), believing it is served at `origin`
/// (`http://127.0.0.1:PORT`), with fresh records; and the call that ends
/// its sessions and streams. Used in process by the fuzz harness.
pub fn app(origin: &str) -> (axum::Router, impl FnOnce() + Send + 'static) {
    let records = Shared::default();
    // Cancelling the config's token ends the sessions and their streams, so
    // a graceful shutdown does not wait on an idle SSE stream.
    let config = StreamableHttpServerConfig::default();
    let ct = config.cancellation_token.clone();

    let shop = Shop::new(records.clone(), origin);
    let service = StreamableHttpService::new(
        move || Ok(shop.clone()),
        LocalSessionManager::default().into(),
        config,
    );
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .route(
            "/connect/{id}",
            axum::routing::get(connect_page).post(connect_submit),
        )
        .with_state(records);
    (router, move || ct.cancel())
}

/// Starts the server on an ephemeral loopback port, TCP_NODELAY on.
pub async fn start() -> Running {
    start_with(Options::default()).await
}

/// Starts the server with the given options.
pub async fn start_with(opts: Options) -> Running {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", opts.port))
        .await
        .expect("bind 127.0.0.1");
    let addr = listener.local_addr().expect("local address");
    let origin = format!("http://{addr}");
    let (router, end_sessions) = app(&origin);

    let nodelay = opts.nodelay;
    let listener = listener.tap_io(move |tcp| {
        if let Err(e) = tcp.set_nodelay(nodelay) {
            tracing::warn!("TCP_NODELAY={nodelay} on an accepted socket: {e}");
        }
    });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
                end_sessions();
            })
            .await;
    });
    Running {
        url: format!("{origin}/mcp"),
        stop,
        served,
    }
}
