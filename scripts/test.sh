#!/usr/bin/env bash
# The test command from README.md: builds every binary (the end-to-end tests
# spawn both `runner` and `runner-relay`), then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-test-deps.sh
cargo build --workspace --bins --locked
cargo test --workspace --locked "$@"
