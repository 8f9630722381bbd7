"""elicitkit interop server on the official MCP Python SDK (`mcp` 2.3.0 from PyPI).

Contract: tests/interop/README.md (launch rules, tools place_order, plan_trip,
connect_account, list_orders).

Generations: 2026-07-28 (MRTR) and 2025-11-25, both on the one `/mcp` endpoint.
The SDK routes each request by its MCP-Protocol-Version header; nothing to configure
(docs/run/legacy-clients.md, "the streamable_http_app() you already deploy serves both").
Sessions stay on (`stateless_http=False`, the default) because 2025-11-25 elicitation is
a server-to-client request and needs the session's stream.

How the tools ask:
- Form questions (place_order, plan_trip) use resolvers, `Annotated[T, Resolve(fn)]`
  with `fn` returning `Elicit(message, Model)`. The docs call this "the one to reach
  for": on 2026-07-28 the SDK returns an InputRequiredResult, on 2025-11-25 it sends
  elicitation/create mid-call (docs/handlers/elicitation.md, docs/handlers/dependencies.md).
  plan_trip's second question is a resolver that depends on the first one, so the
  first answers ride the SDK's requestState into round two.
- URL mode (connect_account) has no resolver form, so the tool branches on
  `ctx.protocol_version` as docs/handlers/multi-round-trip.md says a two-era server
  must: it returns a hand-built InputRequiredResult with ElicitRequestURLParams on
  2026-07-28, and calls `ctx.elicit_url(...)` on 2025-11-25. Before it asks, it checks
  the client's url capability, as "Ask only in a mode the client supports" shows.

requestState: the SDK default. MCPServer seals every outgoing requestState and checks
every echo itself, under a key made at process start (RequestStateSecurity.ephemeral()).
It uses AES-256-GCM, binds the state to the method, tool name, arguments digest and
principal, and lets it expire after 600 s. The docs say "You configure nothing, write
plaintext, and read plaintext" (docs/handlers/multi-round-trip.md, "Protecting
requestState"; docstrings of mcp/server/request_state.py). connect_account's own state
is the flow id, in plaintext; the SDK seals it.

Auth: yes, a static-table TokenVerifier of the kind docs/run/authorization.md shows
("This one looks the token up in a table"). The bearer tokens `alice`, `bob` and `mallory`
are three separate principals (AccessToken.subject). Any other token, or no token, gets a
401 on /mcp.

The /connect/<id> page for URL mode is an `@mcp.custom_route` on the same Starlette app
and port (docs/run/asgi.md, "Custom routes"). The SDK never authenticates custom routes.

--stdio: instead of Streamable HTTP, serve newline-delimited JSON-RPC on stdin/stdout
with the SDK's own stdio transport, `MCPServer.run_stdio_async()` (which is
`mcp.server.stdio.stdio_server()` feeding the lowlevel `Server.run()`, i.e.
`serve_dual_era_loop` in mcp/server/runner.py: the first request picks the era, so
`server/discover` or a `_meta`-enveloped request gives 2026-07-28 and `initialize` gives
2025-11-25). While it serves, the SDK points fd 1 at stderr, so stdout carries only MCP
messages; logs go to stderr. The same MCPServer and tools are used; the /connect/<id>
page is still served over HTTP on 127.0.0.1 (`--port`, default any free port), but that
listener has only the page route, no /mcp. It exits when stdin closes.
Identity over stdio: there is no bearer token, so the principal comes from the
environment variable ELICITKIT_PRINCIPAL, looked up in the same token table
(`alice`, `bob`, `mallory`). Unset or unknown: the server refuses to start (exit 2),
as HTTP answers 401. The AccessToken is put in the SDK's `auth_context_var` before
`stdio_server()` starts its reader task, so every request sees it through
`get_access_token()`, which is what `current_user()` and the SDK's requestState
principal binding (`authenticated_principal`) read.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import datetime
import html
import logging
import os
import re
import secrets
import signal
import socket
import sys
from typing import Annotated, Literal

import uvicorn
from mcp_types import (
    CallToolResult,
    ClientCapabilities,
    ElicitationCapability,
    ElicitRequest,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequiredResult,
    TextContent,
    ToolAnnotations,
    UrlElicitationCapability,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import AnyHttpUrl, BaseModel, Field
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from mcp.server.auth.middleware.auth_context import auth_context_var, get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import (
    AcceptedElicitation,
    CancelledElicitation,
    Context,
    DeclinedElicitation,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)

log = logging.getLogger("interop")

# What the tools did, for list_orders. One process, one event loop: plain lists will do.
ORDERS: list[dict] = []
TRIPS: list[dict] = []
CONNECTIONS: list[dict] = []
FLOWS: dict[str, dict] = {}  # connect_account flow id -> {"service", "user", "done", "session"}

KEY_PATTERN = re.compile(r"[A-Za-z0-9]{12,}")


def current_user() -> str | None:
    token = get_access_token()
    return token.subject if token is not None else None


class StaticTokenVerifier(TokenVerifier):
    """Demo verifier: each known token is its own user. Never deploy this."""

    def __init__(self, resource: str) -> None:
        self.tokens = {
            name: AccessToken(token=name, client_id="elicitkit-interop", subject=name, scopes=[], resource=resource)
            for name in ("alice", "bob", "mallory")
        }

    async def verify_token(self, token: str) -> AccessToken | None:
        return self.tokens.get(token)


# ---------------------------------------------------------------- form models


class OrderOptions(BaseModel):
    size: Literal["S", "M", "L"] = Field(description="Size")
    gift_wrap: bool = Field(description="Gift wrap?")


class TripDetails(BaseModel):
    departure: datetime.date = Field(description="Departure date")
    travellers: int = Field(ge=1, le=9, description="Number of travellers")


class SeatChoice(BaseModel):
    seat: Literal["aisle", "window"] = Field(description="Seat")
    meal: bool | None = Field(default=None, description="Meal on board?")


class Activity(BaseModel):
    orders: list[dict]
    trips: list[dict]
    connections: list[dict]


# ---------------------------------------------------------------- resolvers


async def ask_order_options(item: str, quantity: int) -> Elicit[OrderOptions]:
    return Elicit(f"Options for {quantity} × {item}", OrderOptions)


async def ask_trip_details(destination: str) -> Elicit[TripDetails]:
    return Elicit(f"When do you leave for {destination}, and how many of you travel?", TripDetails)


async def ask_seat(
    destination: str,
    details: Annotated[ElicitationResult[TripDetails], Resolve(ask_trip_details)],
) -> Elicit[SeatChoice] | None:
    if not isinstance(details, AcceptedElicitation):
        return None  # planning already stopped: nothing more to ask
    return Elicit(f"Seat for your trip to {destination} on {details.data.departure}?", SeatChoice)


# ---------------------------------------------------------------- server


def build_server(port: int) -> MCPServer:
    base = f"http://127.0.0.1:{port}"
    mcp = MCPServer(
        "elicitkit-interop-python",
        token_verifier=StaticTokenVerifier(f"{base}/mcp"),
        auth=AuthSettings(
            issuer_url=AnyHttpUrl("https://auth.example.com"),
            resource_server_url=AnyHttpUrl(f"{base}/mcp"),
            required_scopes=[],
            validate_token_resource=True,
        ),
    )

    @mcp.tool()
    async def place_order(
        item: str,
        options: Annotated[ElicitationResult[OrderOptions], Resolve(ask_order_options)],
        quantity: Annotated[int, Field(ge=1, le=10)] = 1,
    ) -> CallToolResult:
        """Place an order; asks for size and gift wrap."""
        match options:
            case AcceptedElicitation(data=chosen):
                order_id = len(ORDERS) + 1
                ORDERS.append(
                    {
                        "orderId": order_id,
                        "item": item,
                        "quantity": quantity,
                        "size": chosen.size,
                        "giftWrap": chosen.gift_wrap,
                        "user": current_user(),
                    }
                )
                text = f"Order #{order_id} placed: {quantity} × {item} (size {chosen.size})"
                return CallToolResult(
                    content=[TextContent(text=text)],
                    structured_content={"orderId": order_id, "item": item, "size": chosen.size},
                )
            case DeclinedElicitation():
                return CallToolResult(content=[TextContent(text="Order not placed (declined)")])
            case CancelledElicitation():
                return CallToolResult(content=[TextContent(text="Order not placed (cancelled)")])

    @mcp.tool()
    async def plan_trip(
        destination: str,
        details: Annotated[ElicitationResult[TripDetails], Resolve(ask_trip_details)],
        seat: Annotated[ElicitationResult[SeatChoice], Resolve(ask_seat)],
    ) -> str:
        """Plan a trip; asks for dates and travellers, then for a seat."""
        if not isinstance(details, AcceptedElicitation) or not isinstance(seat, AcceptedElicitation):
            return "Trip planning stopped"
        trip, choice = details.data, seat.data
        TRIPS.append(
            {
                "destination": destination,
                "departure": trip.departure.isoformat(),
                "travellers": trip.travellers,
                "seat": choice.seat,
                "meal": choice.meal,
                "user": current_user(),
            }
        )
        return f"Trip to {destination} on {trip.departure} for {trip.travellers}, {choice.seat} seat"

    @mcp.tool()
    async def connect_account(service: Literal["billing", "calendar"], ctx: Context) -> str | InputRequiredResult:
        """Connect an account; the API key is entered on a web page, never in the chat."""
        wants_url = ClientCapabilities(elicitation=ElicitationCapability(url=UrlElicitationCapability()))
        if not ctx.session.check_client_capability(wants_url):
            return "Not connected: this client cannot open a URL"

        message = f"Open this page to connect your {service} account."

        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            # 2025-11-25: ask over the session's stream, and ask again until the page was submitted.
            flow_id = secrets.token_urlsafe(16)
            FLOWS[flow_id] = {"service": service, "user": current_user(), "done": False, "session": ctx.session}
            while True:
                answer = await ctx.elicit_url(message, f"{base}/connect/{flow_id}", elicitation_id=flow_id)
                if answer.action != "accept":
                    return "Not connected"
                if FLOWS[flow_id]["done"]:
                    CONNECTIONS.append({"service": service, "user": current_user()})
                    return f"Connected {service}"

        # 2026-07-28: return the URL request; the flow id travels in requestState (sealed by the SDK).
        flow_id = ctx.request_state
        if flow_id is None or flow_id not in FLOWS:
            flow_id = secrets.token_urlsafe(16)
            FLOWS[flow_id] = {"service": service, "user": current_user(), "done": False, "session": None}
        else:
            answer = (ctx.input_responses or {}).get("connect")
            if isinstance(answer, ElicitResult) and answer.action in ("decline", "cancel"):
                return "Not connected"
            if isinstance(answer, ElicitResult) and answer.action == "accept" and FLOWS[flow_id]["done"]:
                CONNECTIONS.append({"service": service, "user": current_user()})
                return f"Connected {service}"
        ask = ElicitRequest(params=ElicitRequestURLParams(message=message, url=f"{base}/connect/{flow_id}"))
        return InputRequiredResult(input_requests={"connect": ask}, request_state=flow_id)

    @mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def list_orders() -> Activity:
        """Report the orders, trips and connections made so far."""
        return Activity(orders=ORDERS, trips=TRIPS, connections=CONNECTIONS)

    @mcp.custom_route("/connect/{flow_id}", methods=["GET", "POST"])
    async def connect_page(request: Request) -> Response:
        flow_id = request.path_params["flow_id"]
        flow = FLOWS.get(flow_id)
        if flow is None:
            return HTMLResponse("<p>Unknown link.</p>", status_code=404)
        if request.method == "GET":
            return HTMLResponse(
                "<!doctype html><title>Connect</title>"
                f"<h1>Connect {html.escape(flow['service'])}</h1>"
                '<form method="post">'
                f'<input type="hidden" name="id" value="{html.escape(flow_id)}">'
                '<label>API key <input type="password" name="api_key" required minlength="12"'
                ' pattern="[A-Za-z0-9]+"></label>'
                '<button type="submit">Connect</button></form>'
            )
        form = await request.form()
        key = form.get("api_key")
        if form.get("id") != flow_id or not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
            return HTMLResponse("<p>That key does not look right.</p>", status_code=400)
        flow["api_key"] = key  # stays on the server
        flow["done"] = True
        if flow["session"] is not None:
            # 2025-11-25: tell the client the out-of-band step is done (docs: send_elicit_complete).
            await flow["session"].send_elicit_complete(flow_id)
        return HTMLResponse("<p>Connected. You can go back to your assistant.</p>")

    mcp.connect_page = connect_page  # for --stdio, which serves this page without /mcp
    return mcp


async def serve(sock: socket.socket, port: int) -> None:
    mcp = build_server(port)
    log_config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    log_config["handlers"]["access"]["stream"] = "ext://sys.stderr"  # stdout carries only the ready line
    config = uvicorn.Config(mcp.streamable_http_app(), log_config=log_config, timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            await task
            return
        await asyncio.sleep(0.01)
    print(f"listening on http://127.0.0.1:{port}/mcp", flush=True)
    # uvicorn begins a graceful shutdown on SIGTERM/SIGINT. With 2025-11-25 calls still waiting
    # on an elicitation, the SDK's session manager then spends about 6 s on write timeouts, so
    # the contract's "exit promptly" gets a hard 2 s cap.
    while not server.should_exit and not task.done():
        await asyncio.sleep(0.05)
    try:
        await asyncio.wait_for(asyncio.shield(task), timeout=2)
    except TimeoutError:
        log.warning("shutdown still running after 2 s; exiting now")
        os._exit(0)


async def serve_stdio(sock: socket.socket, port: int, token: AccessToken) -> None:
    mcp = build_server(port)
    # The URL-mode page still needs HTTP; this listener has that route only.
    page_app = Starlette(routes=[Route("/connect/{flow_id}", mcp.connect_page, methods=["GET", "POST"])])
    log_config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    log_config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    config = uvicorn.Config(page_app, log_config=log_config, timeout_graceful_shutdown=1)
    pages = uvicorn.Server(config)
    # uvicorn would catch SIGTERM/SIGINT and stop only the page listener; here they end the process.
    pages.capture_signals = contextlib.nullcontext  # type: ignore[method-assign]
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _frame: os._exit(0))
    page_task = asyncio.create_task(pages.serve(sockets=[sock]))
    log.info("stdio mode as principal %r; flow pages on http://127.0.0.1:%d/connect/", token.subject, port)
    # Identity for every request on this connection (no bearer token on stdio).
    auth_context_var.set(AuthenticatedUser(token))
    await mcp.run_stdio_async()  # returns when stdin reaches EOF
    log.info("stdin closed, exiting")
    pages.should_exit = True
    try:
        await asyncio.wait_for(page_task, timeout=2)
    except TimeoutError:
        os._exit(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--stdio", action="store_true", help="serve MCP on stdin/stdout (principal: $ELICITKIT_PRINCIPAL)")
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    port = sock.getsockname()[1]
    if args.stdio:
        # The same table HTTP's bearer tokens are checked against; the variable plays the token.
        principal = os.environ.get("ELICITKIT_PRINCIPAL", "")
        token = asyncio.run(StaticTokenVerifier(f"http://127.0.0.1:{port}/mcp").verify_token(principal))
        if token is None:
            log.error("--stdio needs ELICITKIT_PRINCIPAL set to alice, bob or mallory (got %r)", principal)
            sys.exit(2)
        asyncio.run(serve_stdio(sock, port, token))
    else:
        asyncio.run(serve(sock, port))


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stderr, level=logging.INFO)
    main()
