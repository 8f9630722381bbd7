// elicitkit interop server on the official MCP TypeScript SDK v2.
//
// SDK: @modelcontextprotocol/server 2.4.0 (+ @modelcontextprotocol/core 2.4.0),
//      @modelcontextprotocol/node 2.1.2 (Node glue), zod 4.6.7. Runs on Node 20.
//
// Generations served from the one endpoint /mcp:
//   - 2026-07-28 (MRTR, stateless): `createMcpHandler(factory, { legacy: 'reject' })`
//     wrapped with `toNodeHandler`, a fresh McpServer per request.
//   - 2025-11-25 (sessions, `initialize`): requests that `isLegacyRequest()` classifies
//     as 2025-era go to a sessionful `NodeStreamableHTTPServerTransport`, one McpServer
//     per session. This is the routing shown in the SDK's docs/serving/legacy-clients.md
//     ("Keep a sessionful 2025 deployment running") and examples/elicitation/server.ts:
//     the default stateless legacy fallback of `createMcpHandler` cannot push
//     `elicitation/create` (no session, no initialize-declared capabilities).
//
// Elicitation API: one write-once handler per tool that returns `inputRequired(...)`
// and reads answers with `acceptedContent` / `inputResponse`, as in
// docs/servers/input-required.md. On 2026-07-28 the client retries; on 2025-11-25
// the SDK's legacy shim (on by default, `ServerOptions.inputRequired.legacyShim`)
// pushes real `elicitation/create` requests over the session and re-enters the handler.
//
// State handling: `createRequestStateCodec` (HMAC-SHA256, signed not encrypted,
// ttlSeconds 600, random 32-byte per-process key, no `bind`), its `verify` passed as
// `ServerOptions.requestState.verify`, and `mint` for every `requestState` we return;
// this is docs/servers/input-required.md "Protect requestState with the codec" and
// examples/mrtr/server.ts. plan_trip carries round-1 answers in the state;
// connect_account carries its flow id. place_order needs no state. Nothing else
// survives between rounds except the in-memory stores below (orders, trips,
// connections, URL flows).
//
// Host/Origin guards: `localhostHostValidation()` + `localhostOriginValidation()` in
// front of /mcp, as the @modelcontextprotocol/node README shows for plain node:http.
// No authentication.
//
// --stdio: instead of Streamable HTTP on /mcp, serve newline-delimited JSON-RPC on
// stdin/stdout through the SDK's `serveStdio(factory)` from
// '@modelcontextprotocol/server/stdio' (the same `buildServer` factory; default
// `legacy: 'serve'`, so the opening message picks the era: `server/discover` or any
// request with a 2026-07-28 `_meta` envelope pins a modern instance, `initialize` pins a
// 2025-11-25 instance on which the legacy shim sends `elicitation/create` over stdout).
// stdout carries MCP messages only; logs go to stderr. The /connect/<id> flow page for
// connect_account is still served over HTTP on 127.0.0.1 (--port, default any free port;
// its address is logged on stderr). When stdin closes, the page server is closed too and
// the process exits. No authentication, so ELICITKIT_PRINCIPAL is ignored.
//
// Launch: node tests/interop/ts/server.mjs --port 0
//         node tests/interop/ts/server.mjs --stdio [--port N]
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

import {
    localhostHostValidation,
    localhostOriginValidation,
    NodeStreamableHTTPServerTransport,
    toNodeHandler,
    toWebRequest
} from '@modelcontextprotocol/node';
import {
    acceptedContent,
    createMcpHandler,
    createRequestStateCodec,
    inputRequired,
    inputResponse,
    isInitializeRequest,
    isLegacyRequest,
    McpServer
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod/v4';

const log = (...args) => console.error('[interop-ts]', ...args);
const portArg = process.argv.indexOf('--port');
const wantedPort = portArg > 0 ? Number(process.argv[portArg + 1]) : 0;
const stdioMode = process.argv.includes('--stdio');
let origin = ''; // http://127.0.0.1:PORT, known once listening

// What the tools did (list_orders reports it). Flows: id -> { service, done }.
const orders = [];
const trips = [];
const connections = [];
const flows = new Map();

const stateCodec = createRequestStateCodec({
    key: crypto.getRandomValues(new Uint8Array(32)),
    ttlSeconds: 600
});

const text = (s, extra = {}) => ({ content: [{ type: 'text', text: s }], ...extra });
const refused = view => view.kind === 'elicit' && view.action !== 'accept';

const orderForm = z.object({
    size: z.enum(['S', 'M', 'L']).meta({ title: 'Size' }),
    gift_wrap: z.boolean().meta({ title: 'Gift wrap' })
});
const tripDates = z.object({
    departure: z.iso.date().meta({ title: 'Departure date' }),
    travellers: z.number().int().min(1).max(9).meta({ title: 'Travellers' })
});
const tripSeat = z.object({
    seat: z.enum(['aisle', 'window']).meta({ title: 'Seat' }),
    meal: z.boolean().optional().meta({ title: 'Meal' })
});

function buildServer() {
    const server = new McpServer(
        { name: 'elicitkit-interop-ts', version: '0.1.0' },
        { requestState: { verify: stateCodec.verify } }
    );

    server.registerTool(
        'place_order',
        {
            description: 'Place an order; asks for size and gift wrap',
            // No outputSchema: with one, the SDK turns the decline/cancel text results (which carry
            // no structuredContent) into "Output validation error" isError results.
            inputSchema: z.object({ item: z.string(), quantity: z.number().int().min(1).max(10).optional() })
        },
        async ({ item, quantity = 1 }, ctx) => {
            const answer = inputResponse(ctx.mcpReq.inputResponses, 'options');
            if (refused(answer)) {
                return text(`Order not placed (${answer.action === 'decline' ? 'declined' : 'cancelled'})`);
            }
            const form = acceptedContent(ctx.mcpReq.inputResponses, 'options', orderForm);
            if (form === undefined) {
                return inputRequired({
                    inputRequests: {
                        options: inputRequired.elicit({ message: `Choose options for ${item}`, requestedSchema: orderForm })
                    }
                });
            }
            const order = { orderId: orders.length + 1, item, quantity, size: form.size, gift_wrap: form.gift_wrap };
            orders.push(order);
            return text(`Order #${order.orderId} placed: ${quantity} × ${item} (size ${form.size})`, {
                structuredContent: { orderId: order.orderId, item, size: form.size }
            });
        }
    );

    server.registerTool(
        'plan_trip',
        { description: 'Plan a trip in two steps: dates, then seat', inputSchema: z.object({ destination: z.string() }) },
        async ({ destination }, ctx) => {
            const stopped = text('Trip planning stopped');
            const earlier = ctx.mcpReq.requestState(); // verified { departure, travellers }, or undefined
            if (earlier === undefined) {
                if (refused(inputResponse(ctx.mcpReq.inputResponses, 'dates'))) return stopped;
                const dates = acceptedContent(ctx.mcpReq.inputResponses, 'dates', tripDates);
                if (dates === undefined) {
                    return inputRequired({
                        inputRequests: {
                            dates: inputRequired.elicit({ message: `When do you leave for ${destination}?`, requestedSchema: tripDates })
                        }
                    });
                }
                // Mint only what round 1 proved: the dates the user gave.
                return inputRequired({
                    inputRequests: { seat: inputRequired.elicit({ message: 'Pick a seat', requestedSchema: tripSeat }) },
                    requestState: await stateCodec.mint({ departure: dates.departure, travellers: dates.travellers })
                });
            }
            if (refused(inputResponse(ctx.mcpReq.inputResponses, 'seat'))) return stopped;
            const seat = acceptedContent(ctx.mcpReq.inputResponses, 'seat', tripSeat);
            if (seat === undefined) {
                return inputRequired({
                    inputRequests: { seat: inputRequired.elicit({ message: 'Pick a seat', requestedSchema: tripSeat }) },
                    requestState: await stateCodec.mint(earlier)
                });
            }
            const trip = { destination, ...earlier, seat: seat.seat, meal: seat.meal };
            trips.push(trip);
            return text(`Trip to ${destination} on ${trip.departure} for ${trip.travellers}, ${trip.seat} seat`);
        }
    );

    server.registerTool(
        'connect_account',
        {
            description: 'Connect an account through a browser page (URL mode)',
            inputSchema: z.object({ service: z.enum(['billing', 'calendar']) })
        },
        async ({ service }, ctx) => {
            if (refused(inputResponse(ctx.mcpReq.inputResponses, 'connect'))) return text('Not connected');
            const flowId = ctx.mcpReq.requestState()?.flowId;
            if (flowId !== undefined && flows.get(flowId)?.done) {
                connections.push({ service, flowId });
                return text(`Connected ${service}`);
            }
            const id = flowId ?? randomBytes(16).toString('hex');
            if (!flows.has(id)) flows.set(id, { service, done: false });
            return inputRequired({
                inputRequests: {
                    connect: inputRequired.elicitUrl({
                        message: `Open this page to connect your ${service} account`,
                        url: `${origin}/connect/${id}`
                    })
                },
                requestState: await stateCodec.mint({ flowId: id })
            });
        }
    );

    server.registerTool(
        'list_orders',
        {
            description: 'Report orders, trips and connections made so far',
            annotations: { readOnlyHint: true },
            outputSchema: z.object({
                orders: z.array(z.record(z.string(), z.unknown())),
                trips: z.array(z.record(z.string(), z.unknown())),
                connections: z.array(z.record(z.string(), z.unknown()))
            })
        },
        async () => {
            const summary = { orders, trips, connections };
            return text(`${orders.length} orders, ${trips.length} trips, ${connections.length} connections`, {
                structuredContent: summary
            });
        }
    );

    return server;
}

// ---- 2026-07-28: strict modern entry ----
const modern = toNodeHandler(createMcpHandler(buildServer, { legacy: 'reject', onerror: e => log('mcp:', e.message) }), {
    onerror: e => log('node adapter:', e.message)
});

// ---- 2025-11-25: sessionful Streamable HTTP, one McpServer per session ----
const sessions = new Map();
async function legacy(req, res, body) {
    const sid = req.headers['mcp-session-id'];
    if (sid && sessions.has(sid)) return sessions.get(sid).handleRequest(req, res, body);
    if (!sid && isInitializeRequest(body)) {
        const transport = new NodeStreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: id => sessions.set(id, transport)
        });
        transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
        await buildServer().connect(transport);
        return transport.handleRequest(req, res, body);
    }
    const [status, code, message] = sid ? [404, -32001, 'Session not found'] : [400, -32000, 'Bad Request: Session ID required'];
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

// ---- the URL-mode flow page, same process and port ----
const page = (title, inner) =>
    `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1>${inner}</body></html>`;

async function flowPage(req, res, id) {
    const flow = flows.get(id);
    const send = (status, html) => res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' }).end(html);
    if (!flow) return send(404, page('Unknown link', '<p>This link is not valid.</p>'));
    if (req.method === 'GET') {
        return send(
            200,
            page(
                `Connect ${flow.service}`,
                `<form method="post"><input type="hidden" name="id" value="${id}">` +
                    `<label>API key <input type="password" name="api_key" required minlength="12" pattern="[A-Za-z0-9]+"></label>` +
                    `<button type="submit">Connect</button></form>`
            )
        );
    }
    if (req.method !== 'POST') return send(405, page('Method not allowed', ''));
    let raw = '';
    for await (const chunk of req) {
        raw += chunk;
        if (raw.length > 8192) return send(413, page('Too large', ''));
    }
    const form = new URLSearchParams(raw);
    const key = form.get('api_key') ?? '';
    if (form.get('id') !== id || !/^[A-Za-z0-9]{12,}$/.test(key)) {
        return send(400, page('Invalid key', '<p>The key must be at least 12 letters or digits.</p>'));
    }
    flow.done = true;
    flow.apiKey = key; // stays on the server
    log(`flow ${id} (${flow.service}) completed`);
    return send(200, page('Connected', '<p>You can close this window and return to your client.</p>'));
}

// ---- routing ----
const validateHost = localhostHostValidation();
const validateOrigin = localhostOriginValidation();

async function route(req, res) {
    const { pathname } = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (pathname.startsWith('/connect/')) return flowPage(req, res, pathname.slice('/connect/'.length));
    if (pathname !== '/mcp') return res.writeHead(404).end();
    if (!validateHost(req, res) || !validateOrigin(req, res)) return;
    // Classify from a web Request (it holds the body now), then parse the body once for either arm.
    const request = await toWebRequest(req);
    const isLegacy = await isLegacyRequest(request);
    const body = req.method === 'POST' ? await request.json().catch(() => undefined) : undefined;
    return isLegacy ? legacy(req, res, body) : modern(req, res, body);
}

// In --stdio mode this HTTP server only carries the /connect/<id> flow page; MCP goes over stdio.
const pageOnly = (req, res) => {
    const { pathname } = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (!pathname.startsWith('/connect/')) return res.writeHead(404).end();
    return flowPage(req, res, pathname.slice('/connect/'.length));
};

const httpServer = createServer((req, res) => {
    (stdioMode ? pageOnly(req, res) : route(req, res)).catch(error => {
        log('request error:', error instanceof Error ? error.message : error);
        if (!res.headersSent) res.writeHead(500).end();
    });
});

function startStdio() {
    const stdio = serveStdio(buildServer, { onerror: e => log('stdio:', e.message) });
    // The SDK's StdioServerTransport closes itself on stdin EOF; then nothing but the page
    // server keeps the process alive, so close that and exit.
    let finished = false;
    const finish = () => {
        if (finished) return;
        finished = true;
        log('stdin closed, exiting');
        stdio
            .close()
            .catch(() => {})
            .finally(() => {
                httpServer.closeAllConnections();
                httpServer.close(() => process.exit(0));
            });
    };
    process.stdin.once('end', finish);
    process.stdin.once('close', finish);
}

httpServer.listen(wantedPort, '127.0.0.1', () => {
    origin = `http://127.0.0.1:${httpServer.address().port}`;
    if (stdioMode) {
        log(`stdio mode; flow pages on ${origin}/connect/`);
        startStdio();
    } else {
        process.stdout.write(`listening on ${origin}/mcp\n`);
    }
});

for (const signal of ['SIGTERM', 'SIGINT']) {
    process.on(signal, () => {
        log(`${signal}, exiting`);
        httpServer.closeAllConnections();
        httpServer.close();
        process.exit(0);
    });
}
