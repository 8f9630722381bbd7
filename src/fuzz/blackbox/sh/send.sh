# Sending and showing requests (every repro.sh has these).
# send N CURL-ARGS...: one request; its reply as curl -i wrote it in
# $OUT/N.reply, curl's exit status in $OUT/N.exit (28: no whole reply within
# $MAX seconds).
send() {
  local n=$1
  shift
  # TLS: curl's TLS flags for an https target (unset for plain http).
  curl -sS -i --max-time "$MAX" ${TLS[@]+"${TLS[@]}"} "$@" > "$OUT/$n.reply"
  echo $? > "$OUT/$n.exit"
}
# show N: prints reply N (and curl's complaint, if any).
show() {
  local rc
  rc=$(cat "$OUT/$1.exit" 2>/dev/null || echo '?')
  [ "$rc" = 0 ] || echo "(curl exit $rc: no complete reply)"
  cat "$OUT/$1.reply" 2>/dev/null
  echo
}
# sid_of FILE: the Mcp-Session-Id header of the final reply in FILE.
sid_of() {
  LC_ALL=C awk '{ sub(/\r$/, "") }
    $0 == "" { if (code ~ /^1/) { code = ""; next } exit }
    code == "" { code = $2; next }
    tolower($0) ~ /^mcp-session-id:/ { sub(/^[^:]*:[ \t]*/, ""); sub(/[ \t]+$/, ""); print; exit }' "$1"
}
