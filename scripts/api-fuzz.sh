#!/usr/bin/env bash
# Property-based fuzz of the relay's HTTP API against its own OpenAPI
# document (schemathesis): starts a real `runner-relay serve` on 127.0.0.1
# with a fresh SQLite data dir, creates environments for the paths to hit,
# and fails on any server error, any answer its document does not describe
# (status code, content type, body schema), any valid request refused and
# any invalid one accepted. docs/api-fuzz.md says how to read a failure.
#
# Usage: scripts/api-fuzz.sh [extra `st run` options]
# Environment: RELAY_BIN (default target/debug/runner-relay, built when
# missing), API_FUZZ_MAX_TIME (seconds of fuzzing, default 120),
# API_FUZZ_SEED (default fixed, so a run is repeatable).
set -euo pipefail
cd "$(dirname "$0")/.."

relay_bin=${RELAY_BIN:-target/debug/runner-relay}
max_time=${API_FUZZ_MAX_TIME:-120}
seed=${API_FUZZ_SEED:-20240601}

if ! command -v st >/dev/null 2>&1; then
  echo "api-fuzz: schemathesis (st) is not installed: scripts/install-test-deps.sh" >&2
  exit 1
fi
if [ ! -x "$relay_bin" ]; then
  cargo build -q -p runner-relay
fi

work=$(mktemp -d)
relay_pid=
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  if [ -n "$relay_pid" ]; then
    kill "$relay_pid" 2>/dev/null || true
    wait "$relay_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# Port 0: the relay picks a free port and prints its URL. Only loopback.
"$relay_bin" serve --listen 127.0.0.1:0 --data-dir "$work/data" \
  >"$work/stdout" 2>"$work/relay.log" &
relay_pid=$!
url=
for _ in $(seq 200); do
  url=$(sed -n 's/^runner-relay listening on \(http:\/\/127\.0\.0\.1:[0-9]*\)$/\1/p' "$work/stdout")
  [ -n "$url" ] && break
  kill -0 "$relay_pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "api-fuzz: the relay did not start" >&2
  cat "$work/stdout" "$work/relay.log" >&2
  exit 1
fi
key=$(sed -n 's/^admin API key (shown once): \(rnrk_[A-Za-z0-9_-]*\)$/\1/p' "$work/stdout")
if [ -z "$key" ]; then
  echo "api-fuzz: no admin API key on the relay's stdout" >&2
  exit 1
fi
echo "api-fuzz: relay at $url (log: kept on failure)"

api() {
  curl -fsS -H "Authorization: Bearer $key" -H 'Content-Type: application/json' "$@"
}
# Two environments: one the fuzzer's {id} paths name (so PATCH, tokens and
# invoke-tool reach their handlers instead of answering 404), and one whose
# name the fuzzer's renames may collide with (409).
env_id=$(api -X POST "$url/execution-environments" \
  -d '{"name":"fuzz-target","tier":"development"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
api -X POST "$url/execution-environments" -d '{"name":"fuzz-other"}' >/dev/null
api -X POST "$url/teams" -d '{"name":"fuzz-team"}' >/dev/null

# Excluded, and why:
# - GET /runner/connect: a WebSocket upgrade; the fuzzer speaks plain HTTP.
# - DELETE /execution-environments/{id}: with {id} pinned to the target it
#   would delete the fuzz's own setup, and every later case would be a 404.
# - POST /execution-environments/{id}/revoke-token: same (harmless, but
#   it disconnects nothing here and only repeats generate-token's checks).
# - POST /mcp, /mcp/sessions/{id}: MCP's own protocol (JSON-RPC), which
#   the document leaves to the MCP specification (tested by relay/tests/it
#   with a second MCP implementation).
# - The `stateful` phase: the document has no links between operations.
cat >"$work/schemathesis.toml" <<EOF
# Nothing kept between runs (and nothing written into the work tree).
[cache]
enabled = false

[parameters]
"path.id" = "$env_id"
"path.name" = "fuzz-team"

# A 5xx is a server error, except the two the document gives for a
# runner or sandbox that is not there (503: runner_not_connected,
# no_sandbox_provider, ...; 504: timeout): no runner is connected here.
# status_code_conformance still fails a 503 or 504 an operation does not
# document, and a 500 always fails.
[checks.not_a_server_error]
expected-statuses = ["1xx", "2xx", "3xx", "4xx", 503, 504]

# A template's .env text is a format JSON Schema cannot state (names,
# quotes, escapes, line by line): a body the document allows may still be
# refused with 400 naming the line. Only there is a 400 an accepted answer.
[[operations]]
include-path-regex = "^/templates"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", 400, 401, 403, 404, 409, 429, "5xx"]
EOF

status=0
st --config-file "$work/schemathesis.toml" run "$url/openapi.json" \
  --header "Authorization: Bearer $key" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,positive_data_acceptance,negative_data_rejection \
  --phases examples,coverage,fuzzing \
  --exclude-path /runner/connect \
  --exclude-path /mcp --exclude-path '/mcp/sessions/{id}' \
  --exclude-path '/execution-environments/{id}/revoke-token' \
  --exclude-by 'method == "DELETE" and path == "/execution-environments/{id}"' \
  --max-time "$max_time" --seed "$seed" --workers 1 --request-timeout 10 \
  --no-color --warnings off \
  "$@" || status=$?

if ! kill -0 "$relay_pid" 2>/dev/null; then
  echo "api-fuzz: the relay exited during the fuzz" >&2
  status=1
fi
if [ "$status" -ne 0 ]; then
  echo "api-fuzz: FAILED (exit $status); the relay's log:" >&2
  tail -n 50 "$work/relay.log" >&2
fi
exit "$status"
