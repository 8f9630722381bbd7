# Sourced by the loadtests scripts that start a server on 127.0.0.1:0.
#
# listening_url FILE PID: waits up to 10 s for the `listening on URL` line
# the server (process PID) prints to FILE, and prints URL. Fails saying why
# when PID exits first or the line never comes.
listening_url() {
  local file=$1 pid=$2 url
  for _ in $(seq 100); do
    url=$(sed -n 's/^listening on //p' "$file" 2>/dev/null | head -1)
    if [ -n "$url" ]; then
      echo "$url"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || { echo "the server (pid $pid) exited before it listened" >&2; return 1; }
    sleep 0.1
  done
  echo "no 'listening on' line in $file after 10 s" >&2
  return 1
}
