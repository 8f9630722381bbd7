"""Hand driver for the interop servers in --stdio mode (not used by the Rust tests).

    python3 tests/interop/stdio_drive.py modern|legacy -- CMD...

Writes one JSON-RPC line at a time to CMD's stdin, prints every line it sends (`>`) and
reads (`<`), answers server-to-client `elicitation/create` requests from a script, then
closes stdin and reports the exit code. CMD's stderr goes to /tmp/stdio-drive-<gen>.log.
`modern`: 2026-07-28 (server/discover, tools/list, place_order, plan_trip, connect_account
with the flow page POSTed over HTTP, list_orders). `legacy`: 2025-11-25 (initialize,
notifications/initialized, tools/list, the same tools with elicitation/create answered).
"""
import json, subprocess, sys, time, os, select
gen = sys.argv[1]; cmd = sys.argv[3:]
p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open('/tmp/stdio-drive-%s.log' % gen, 'w'), env=os.environ)
def short(s, n=700):
    return s if len(s) <= n else s[:n] + '…'
def send(obj):
    line = json.dumps(obj, ensure_ascii=False)
    print('>', short(line)); sys.stdout.flush()
    p.stdin.write((line + '\n').encode()); p.stdin.flush()
def read():
    r, _, _ = select.select([p.stdout], [], [], 10)
    if not r: raise SystemExit('timeout waiting for stdout')
    line = p.stdout.readline()
    if not line: raise SystemExit('EOF on stdout')
    print('<', short(line.decode().rstrip('\n'))); sys.stdout.flush()
    return json.loads(line)
def call(obj, answers=()):
    send(obj); answers = list(answers)
    while True:
        m = read()
        if 'method' in m and 'id' in m:  # server->client request
            send({"jsonrpc": "2.0", "id": m["id"], "result": answers.pop(0)})
            continue
        if m.get('id') == obj['id']:
            return m
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "drive.py", "version": "0"}}
if gen == 'modern':
    call({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":META}})
    m = call({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":META}})
    args = {"item": "mug", "quantity": 2}
    r = call({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"place_order","arguments":args,"_meta":META}})["result"]
    key = next(iter(r["inputRequests"]))
    retry = {"name":"place_order","arguments":args,"inputResponses":{key:{"action":"accept","content":{"size":"M","gift_wrap":True}}},"_meta":META}
    if "requestState" in r: retry["requestState"] = r["requestState"]
    call({"jsonrpc":"2.0","id":4,"method":"tools/call","params":retry})
    # plan_trip: two rounds, round 2 carries requestState
    a = {"destination": "Oslo"}
    r = call({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"plan_trip","arguments":a,"_meta":META}})["result"]
    k1 = next(iter(r["inputRequests"]))
    pr = {"name":"plan_trip","arguments":a,"inputResponses":{k1:{"action":"accept","content":{"departure":"2026-12-24","travellers":2}}},"_meta":META}
    if "requestState" in r: pr["requestState"] = r["requestState"]
    r = call({"jsonrpc":"2.0","id":6,"method":"tools/call","params":pr})["result"]
    k2 = next(iter(r["inputRequests"]))
    call({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"plan_trip","arguments":a,"inputResponses":{k2:{"action":"accept","content":{"seat":"window","meal":True}}},"requestState":r["requestState"],"_meta":META}})
    # connect_account: URL mode; submit the page over HTTP, then retry
    r = call({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"connect_account","arguments":{"service":"billing"},"_meta":META}})["result"]
    url = r["inputRequests"]["connect"]["params"]["url"]
    import urllib.request, urllib.parse
    fid = url.rsplit('/', 1)[1]
    with urllib.request.urlopen(url, data=urllib.parse.urlencode({"id": fid, "api_key": "abcDEF123456789"}).encode()) as resp:
        print('# page POST', url, '->', resp.status)
    call({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"connect_account","arguments":{"service":"billing"},"inputResponses":{"connect":{"action":"accept"}},"requestState":r["requestState"],"_meta":META}})
    call({"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"list_orders","arguments":{},"_meta":META}})
else:
    call({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{},"url":{}}},"clientInfo":{"name":"drive.py","version":"0"}}})
    send({"jsonrpc":"2.0","method":"notifications/initialized"})
    call({"jsonrpc":"2.0","id":2,"method":"tools/list"})
    call({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"place_order","arguments":{"item":"mug","quantity":2}}},
         [{"action":"accept","content":{"size":"M","gift_wrap":True}}])
    call({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"plan_trip","arguments":{"destination":"Oslo"}}},
         [{"action":"accept","content":{"departure":"2026-12-24","travellers":2}}, {"action":"accept","content":{"seat":"window","meal":True}}])
    call({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"place_order","arguments":{"item":"cup"}}}, [{"action":"decline"}])
    call({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"connect_account","arguments":{"service":"billing"}}}, [{"action":"decline"}])
    call({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_orders","arguments":{}}})
t = time.time(); p.stdin.close()
try:
    rc = p.wait(timeout=10)
    rest = p.stdout.read()
    print(f'# stdin closed; exit code {rc} after {time.time()-t:.2f}s; trailing stdout bytes: {len(rest)}')
except subprocess.TimeoutExpired:
    print('# stdin closed; process still running after 10s'); p.kill()
