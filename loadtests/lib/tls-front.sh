# Sourced by loadtests scripts that measure an https target: nginx on
# 127.0.0.1 terminating TLS in front of one server, with a throwaway CA and a
# leaf for 127.0.0.1 made by openssl in DIR.
#
# tls_front DIR UPSTREAM: starts nginx (one worker, keep-alive to the
# upstream and to clients) proxying https://127.0.0.1:PORT to UPSTREAM
# (IP:PORT); prints PORT (call it as port=$(tls_front ...)). The CA's PEM is
# DIR/ca.pem; nginx's PID is in DIR/nginx.pid, and the caller stops it:
# tls_front_stop DIR.
tls_front() {
  local dir=$1 upstream=$2 port
  command -v nginx >/dev/null || { echo "nginx not found (tests/need.sh nginx)" >&2; return 2; }
  command -v openssl >/dev/null || { echo "openssl not found (tests/need.sh openssl)" >&2; return 2; }
  mkdir -p "$dir"
  (
    cd "$dir"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
      -subj "/CN=elicitkit bench CA" -addext basicConstraints=critical,CA:TRUE \
      -addext keyUsage=critical,keyCertSign 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout leaf.key -out leaf.csr -subj /CN=127.0.0.1 2>/dev/null
    printf 'basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n' >leaf.ext
    openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem \
      -days 2 -extfile leaf.ext 2>/dev/null
  ) || { echo "openssl could not make the certificates" >&2; return 1; }
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  cat >"$dir/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir/body; proxy_temp_path $dir/proxy; fastcgi_temp_path $dir/fcgi;
  uwsgi_temp_path $dir/uwsgi; scgi_temp_path $dir/scgi;
  keepalive_requests 1000000;
  upstream backend { server $upstream; keepalive 512; }
  server {
    listen 127.0.0.1:$port ssl;
    ssl_certificate $dir/leaf.pem;
    ssl_certificate_key $dir/leaf.key;
    location / {
      proxy_pass http://backend; proxy_http_version 1.1;
      proxy_set_header Connection ""; proxy_set_header Host $upstream;  # the server checks Host
      proxy_buffering off;
    }
  }
}
CONF
  nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return 0; fi
    kill -0 "$pid" 2>/dev/null || { cat "$dir/error.log" >&2; return 1; }
    sleep 0.1
  done
  echo "nginx did not listen on 127.0.0.1:$port" >&2
  return 1
}

# tls_front_stop DIR: stops the nginx tls_front DIR started, if any.
tls_front_stop() {
  [ -s "$1/nginx.pid" ] && kill "$(cat "$1/nginx.pid")" 2>/dev/null || true
}
