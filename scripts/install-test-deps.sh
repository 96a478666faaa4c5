#!/usr/bin/env bash
# Installs the system packages the test suite uses, only where missing.
# Idempotent and quiet when everything is present.
set -euo pipefail
missing=()
need() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }
need python3 python3
need shellcheck shellcheck
need openssl openssl
need systemd-analyze systemd
need git git
need curl curl
need keyctl keyutils
# The sandbox host's tests isolate with bubblewrap (cli/tests/it/sandbox_host.rs).
need bwrap bubblewrap
# The browser tool's test drives a real headless Chromium.
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
python3 -c 'import yaml' 2>/dev/null || missing+=(python3-yaml)
# The container image test (cli/tests/it/container_image.rs) builds with
# podman; crun, podman's default runtime, fails under hybrid cgroups, so
# runc (cli/tests/it/containers.conf); debootstrap makes the base image.
need podman podman
need runc runc
need debootstrap debootstrap
need newuidmap uidmap
# The tests of /metrics parse the exposition with the Prometheus client's
# own parser (scripts/parse-openmetrics.py); apt's module is under
# /usr/bin/python3, which those tests try first.
/usr/bin/python3 -c 'import prometheus_client' 2>/dev/null || missing+=(python3-prometheus-client)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing packages: ${missing[*]} (run as root, or install them)" >&2
    exit 1
  fi
  echo "installing: ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The tests of the relay's MCP server use a second MCP implementation, the
# Python SDK (PyPI's `mcp`; Debian has no package), with the python3 on PATH.
if ! python3 -c 'import mcp.client.streamable_http' 2>/dev/null; then
  echo "installing: the Python MCP SDK (pip: mcp)" >&2
  python3 -m pip install --quiet --disable-pip-version-check 'mcp>=1.10,<2'
fi
# The console's browser test drives Debian's chromium with Playwright for
# Python (its driver only: no browser is downloaded).
if ! python3 -c 'import playwright.sync_api' 2>/dev/null; then
  echo "installing: Playwright for Python (pip: playwright)" >&2
  python3 -m pip install --quiet --disable-pip-version-check 'playwright>=1.40,<2'
fi
# The API fuzz step (scripts/api-fuzz.sh) uses schemathesis, a
# property-based fuzzer of OpenAPI documents (PyPI; its `st` command).
if ! command -v st >/dev/null 2>&1 || ! python3 -c 'import schemathesis' 2>/dev/null; then
  echo "installing: schemathesis (pip)" >&2
  python3 -m pip install --quiet --disable-pip-version-check 'schemathesis>=4.32,<5'
fi
# The container image test (cli/tests/it/container_image.rs) builds
# installers/Dockerfile with podman, on a stand-in for its base image made
# from Debian's packages (no image registry is reachable from CI).
"$(dirname "$0")/prepare-image-test.sh"
