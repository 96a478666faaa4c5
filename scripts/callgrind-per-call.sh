#!/usr/bin/env bash
# Instructions per API call (`ping` by default) in the relay or the runner, counted by
# callgrind: exact and repeatable where wall times on a shared machine are
# not (bench/ROUNDS.md, eighth round).
#
#   scripts/callgrind-per-call.sh BIN_DIR [relay|runner] [CALLS] [METHOD]
#
# BIN_DIR holds a release `runner` and `runner-relay` (built with debug line
# tables, as the workspace's release profile does). The process under
# study runs under `valgrind --tool=callgrind` twice, through `runner-bench
# ab`, once with 300 calls and once with 300 + CALLS (default 1000); the
# difference of the two totals, divided by CALLS, is what one call costs,
# start-up and set-up cancelled out. METHOD is one of `runner-bench ab
# --methods` (ping, shell-true, shell-uname; default ping); under valgrind
# the runner cannot create a call inside its cgroup (`clone3`) and moves
# it in instead, so a runner's `shell` figure counts that path. The profiles stay in the work
# directory printed at the end, for `callgrind_annotate`. EXTRA_FLAGS are
# added to the profiled process's `serve`/`run`, e.g.
# EXTRA_FLAGS='--no-audit --no-metrics' for what the audit log and metrics
# cost the relay. Valgrind's CPU has no SHA extensions: SHA-256 runs its
# portable code there, many times the instructions of the real machine's.
set -euo pipefail
cd "$(dirname "$0")/.."

bin_dir="$(cd "${1:?usage: $0 BIN_DIR [relay|runner] [CALLS]}" && pwd)"
which="${2:-relay}"
calls="${3:-1000}"
method="${4:-ping}"
command -v valgrind >/dev/null || { echo "callgrind-per-call.sh: valgrind is not installed" >&2; exit 1; }
bench="${CARGO_TARGET_DIR:-target}/release/runner-bench"
[ -x "$bench" ] || cargo build --release --locked -p runner-bench
case "$which" in
  relay) program=runner-relay; other=runner ;;
  runner) program=runner; other=runner-relay ;;
  *) echo "callgrind-per-call.sh: relay or runner, not $which" >&2; exit 2 ;;
esac

work="$(mktemp -d /tmp/callgrind-per-call.XXXXXX)"
mkdir -p "$work/bin"
ln -s "$bin_dir/$other" "$work/bin/$other"
# The wrapper keeps valgrind out of the harness's kill (SIGKILL of the
# wrapper's pid): the profiled process outlives the run, and is dumped
# and stopped here.
cat >"$work/bin/$program" <<EOF
#!/bin/sh
case "\$1" in
  serve|run) valgrind --tool=callgrind --callgrind-out-file="$work/out.\$RUN.%p" \
      --log-file="$work/valgrind.\$RUN.%p" "$bin_dir/$program" "\$@" ${EXTRA_FLAGS:-} & wait ;;
  *) exec "$bin_dir/$program" "\$@" ;;
esac
EOF
chmod +x "$work/bin/$program"

total() {
  local run="$1" count="$2" pid
  RUN="$run" "$bench" ab --bin-dir "$work/bin" --bin-dir "$bin_dir" --methods "$method" \
    --calls "$count" --out "$work/ab.$run.json" >"$work/ab.$run.log" 2>&1 \
    || { cat "$work/ab.$run.log" >&2; exit 1; }
  sleep 2
  pid="$(pgrep -f "valgrind.*$work/out.$run" | head -n 1)"
  [ -n "$pid" ] || { echo "callgrind-per-call.sh: the profiled $program is gone" >&2; exit 1; }
  callgrind_control -d "$pid" >/dev/null 2>&1
  sleep 2
  kill "$pid" 2>/dev/null || true
  sleep 2
  grep -h '^summary:' "$work/out.$run.$pid.1" | awk '{ print $2 }'
}

base="$(total base 300)"
more="$(total more $((300 + calls)))"
echo "$program: $(( (more - base) / calls )) instructions per $method call ($calls calls; profiles in $work)"
