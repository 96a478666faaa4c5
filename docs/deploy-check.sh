#!/usr/bin/env bash
# Tests docs/deploy.md: three relays on PostgreSQL + NATS behind nginx.
set -euo pipefail
BIN=${BIN:-target/debug}
DIR=$(mktemp -d)
DB=relay_nginx_$RANDOM$RANDOM
psql -h 127.0.0.1 -U postgres -q -c "CREATE DATABASE $DB"
export RUNNER_RELAY_DATABASE_URL=postgres://postgres@127.0.0.1:5432/$DB
export RUNNER_RELAY_NATS_URL=nats://127.0.0.1:4222
export RUNNER_RELAY_NATS_SUBJECT_PREFIX=nginx_$RANDOM
PIDS=()
ports=()
for name in a b c; do
  $BIN/runner-relay serve --listen 127.0.0.1:0 --instance-id relay-$name > $DIR/$name.out 2> $DIR/$name.err &
  PIDS+=($!)
  for i in $(seq 100); do grep -q listening $DIR/$name.out 2>/dev/null && break; sleep 0.1; done
  ports+=($(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' $DIR/$name.out))
done
KEY=$(sed -n 's/admin API key (shown once): //p' $DIR/a.out)
# nginx on a free port, config from docs/deploy.md minus TLS
NPORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
cat > $DIR/nginx.conf <<CONF
daemon off;
pid $DIR/nginx.pid;
error_log $DIR/nginx.err;
events {}
http {
  access_log off;
  client_body_temp_path $DIR; proxy_temp_path $DIR; fastcgi_temp_path $DIR; uwsgi_temp_path $DIR; scgi_temp_path $DIR;
  upstream runner_relays {
    server 127.0.0.1:${ports[0]} max_fails=1 fail_timeout=5s;
    server 127.0.0.1:${ports[1]} max_fails=1 fail_timeout=5s;
    server 127.0.0.1:${ports[2]} max_fails=1 fail_timeout=5s;
  }
  map \$http_upgrade \$connection_upgrade { default upgrade; '' close; }
  server {
    listen 127.0.0.1:$NPORT;
    client_max_body_size 8m;
    location / {
      proxy_pass http://runner_relays;
      proxy_http_version 1.1;
      proxy_set_header Upgrade \$http_upgrade;
      proxy_set_header Connection \$connection_upgrade;
      proxy_set_header Host \$host;
      proxy_read_timeout 3700s;
      proxy_send_timeout 3700s;
      proxy_next_upstream error timeout;
      proxy_next_upstream_tries 3;
    }
  }
}
CONF
nginx -c $DIR/nginx.conf &
NGINX=$!
for i in $(seq 50); do curl -sf http://127.0.0.1:$NPORT/healthz >/dev/null && break; sleep 0.1; done
LB=http://127.0.0.1:$NPORT
ENV=$(curl -sf -H "Authorization: Bearer $KEY" -H 'content-type: application/json' -d '{"name":"nginx-demo","tier":"development"}' $LB/execution-environments | python3 -c 'import sys,json;print(json.load(sys.stdin)["id"])')
TOKEN=$(curl -sf -X POST -H "Authorization: Bearer $KEY" $LB/execution-environments/$ENV/generate-token | python3 -c 'import sys,json;print(json.load(sys.stdin)["token"])')
mkdir -p $DIR/r/{c,s,w}
RUNNER_TOKEN=$TOKEN RUNNER_CONFIG_DIR=$DIR/r/c RUNNER_STATE_DIR=$DIR/r/s RUNNER_WORKSPACE=$DIR/r/w RUNNER_CREDENTIAL_STORE=file $BIN/runner run --url $LB 2> $DIR/runner.err &
RUNNER=$!
for i in $(seq 100); do curl -sf -H "Authorization: Bearer $KEY" $LB/execution-environments/$ENV/status | grep -q '"connected":true' && break; sleep 0.1; done
ok=0
for i in $(seq 9); do
  curl -sf -H "Authorization: Bearer $KEY" -H 'content-type: application/json' -d "{\"tool_name\":\"ping\",\"args\":{\"i\":$i}}" $LB/execution-environments/$ENV/invoke-tool | grep -q "\"i\":$i" && ok=$((ok+1))
done
echo "pings through nginx: $ok/9"
# kill -9 one relay; calls keep working through nginx
kill -9 ${PIDS[1]}
for i in $(seq 100); do curl -sf -H "Authorization: Bearer $KEY" $LB/execution-environments/$ENV/status | grep -q '"connected":true' && break; sleep 0.1; done
ok2=0
for i in $(seq 9); do
  curl -sf -H "Authorization: Bearer $KEY" -H 'content-type: application/json' -d "{\"tool_name\":\"ping\",\"args\":{\"i\":$i}}" $LB/execution-environments/$ENV/invoke-tool | grep -q "\"i\":$i" && ok2=$((ok2+1))
done
echo "pings through nginx after kill -9 of one relay: $ok2/9"
kill $RUNNER $NGINX ${PIDS[0]} ${PIDS[2]} 2>/dev/null || true
wait 2>/dev/null || true
psql -h 127.0.0.1 -U postgres -q -c "DROP DATABASE $DB WITH (FORCE)"
[ $ok = 9 ] && [ $ok2 = 9 ]
