# The JSON-aware steps (in a repro.sh that reads states or answers an
# elicitation).
# pick TOOL...: the first of the tools installed.
pick() { local t; for t in "$@"; do if command -v "$t" >/dev/null 2>&1; then echo "$t"; return 0; fi; done; return 1; }
# States are read with jq where present, else python3; bodies are filled with
# python3 (byte for byte), else jq (as UTF-8 text). REPRO_JSON=jq or
# REPRO_JSON=python3 picks one for both.
READ=$(pick ${REPRO_JSON:-jq python3}) && FILL=$(pick ${REPRO_JSON:-python3 jq}) || {
  echo "repro.sh: reading the server's replies needs jq or python3; install one and re-run" >&2
  exit 2
}
# The python3 side of the JSON steps: "state FILE", "eid FILE", "fill IN OUT".
PY='import json, os, re, sys
def body(b):
    while re.match(rb"HTTP/[0-9.]+ ", b):
        code = b.split(None, 2)[1]
        m = re.search(rb"\r?\n\r?\n", b)
        b = b[m.end():] if m else b""
        if not code.startswith(b"1"):
            break
    return b
def messages(b):
    t = body(b).decode("utf-8", "replace")
    if t.lstrip()[:1] in ("{", "["):
        try:
            v = json.loads(t)
        except ValueError:
            return []
        return v if isinstance(v, list) else [v]
    out = []
    for line in t.split("\n"):
        if line.startswith("data:"):
            try:
                out.append(json.loads(line[5:]))
            except ValueError:
                pass
    return out
def first(path, pick):
    for m in messages(open(path, "rb").read()):
        v = pick(m) if isinstance(m, dict) else None
        if v is not None:
            return v
    sys.exit(1)
def state(m):
    r = m.get("result")
    s = r.get("requestState") if isinstance(r, dict) else None
    return s if isinstance(s, str) else None
def esc(m):
    s = os.environ.get("S" + m.group(1).decode(), "")
    return json.dumps(s, ensure_ascii=False)[1:-1].encode("utf-8", "surrogateescape")
mode = sys.argv[1]
if mode == "state":
    sys.stdout.buffer.write(first(sys.argv[2], state).encode("utf-8", "surrogatepass"))
elif mode == "eid":
    print(json.dumps(first(sys.argv[2], lambda m: m["id"] if m.get("method") == "elicitation/create" and "id" in m else None)))
else:
    data = open(sys.argv[2], "rb").read()
    open(sys.argv[3], "wb").write(re.sub(rb"@@S([0-9]+)@@", esc, data))'
# body_of FILE: the body of the final reply in FILE (curl -i: interim and
# final heads, then the body).
body_of() {
  LC_ALL=C awk 'body { print; next }
    { sub(/\r$/, "") }
    $0 == "" { if (code ~ /^1/) code = ""; else body = 1; next }
    code == "" { code = $2 }' "$1"
}
# state_of FILE: the requestState of the first JSON-RPC result in FILE's
# reply (a JSON body, or SSE data lines), decoded.
state_of() {
  case $READ in
  jq) body_of "$1" | jq -R -s -j -e '[(if test("^\\s*[\\[{]") then fromjson | (if type == "array" then .[] else . end) else split("\n")[] | sub("\r$"; "") | select(startswith("data:")) | .[5:] | fromjson? end) | objects | .result | objects | .requestState | strings] | first // empty' ;;
  *) python3 -c "$PY" state "$1" ;;
  esac
}
# eid_of FILE: the id (as JSON) of the first elicitation/create on FILE's
# stream.
eid_of() {
  case $READ in
  jq) jq -R -s -j -e '[split("\n")[] | sub("\r$"; "") | select(startswith("data:")) | .[5:] | fromjson? | objects | select(.method == "elicitation/create" and .id != null) | .id | tojson] | first // empty' "$1" ;;
  *) python3 -c "$PY" eid "$1" ;;
  esac
}
# capture NAME FILE: NAME is set to the requestState of FILE's reply, byte
# for byte, and exported for fill.
capture() {
  local v
  if v=$(state_of "$2" && printf x); then v=${v%x}; else v=; echo "(no requestState in $2: $1 is empty)"; fi
  export "$1=$v"
}
# fill IN OUT: IN with each @@S<K>@@ replaced by the state S<K>, JSON-escaped
# as in the body.
fill() {
  case $FILL in
  jq) jq -R -s -j 'gsub("@@S(?<k>[0-9]+)@@"; $ENV["S" + .k] // "" | tojson | .[1:-1])' "$1" > "$2" ;;
  *) python3 -c "$PY" fill "$1" "$2" ;;
  esac
}
