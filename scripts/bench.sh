#!/usr/bin/env bash
# The one command behind BENCHMARKS.md: builds the binaries as they are
# shipped (Cargo profile `dist`: fat LTO, no line tables), makes
# sure sshd is installed (for the ssh comparisons; the harness starts its own
# on 127.0.0.1 with throwaway keys), runs the harness and writes
# bench/results/<date>-<commit>.json, then prints the comparison with the
# previous result file when there is one.
#
#   scripts/bench.sh                      # everything (~15-25 min on 2 cores)
#   scripts/bench.sh --quick              # smoke run, small counts
#   scripts/bench.sh --sections invoke,policy
#
# Extra arguments go to `runner-bench run` (see `runner-bench run --help`).
# CARGO_TARGET_DIR is honoured (default: target/). BENCH_PROFILE=release
# measures the `release` build instead (quicker to rebuild, with line tables
# for perf, but more CPU per call: bench/ROUNDS.md, "Twelfth round").
set -euo pipefail
cd "$(dirname "$0")/.."

profile="${BENCH_PROFILE:-dist}"
bin="${CARGO_TARGET_DIR:-target}/$profile"
cargo build --profile "$profile" --locked --workspace --bins

if ! command -v sshd >/dev/null 2>&1 && [ ! -x /usr/sbin/sshd ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server >/dev/null \
      || echo "bench.sh: could not install openssh-server; ssh comparisons will be skipped" >&2
  else
    echo "bench.sh: sshd not found; ssh comparisons will be skipped" >&2
  fi
fi

mkdir -p bench/results
# Newest by name: the names are ours and begin with the UTC time of the run
# (a fresh clone gives every file the same modification time).
previous="$(find bench/results -maxdepth 1 -name '*.json' | sort | tail -n 1)"
commit="$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
out="bench/results/$(date -u +%Y%m%dT%H%M%SZ)-${commit}.json"

"$bin/runner-bench" run --bin-dir "$bin" --out "$out" "$@"

echo "bench.sh: results in $out; the tables for BENCHMARKS.md:" >&2
"$bin/runner-bench" report "$out"
if [ -n "$previous" ]; then
  "$bin/runner-bench" compare "$previous" "$out"
fi
