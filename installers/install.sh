#!/usr/bin/env bash
# install.sh: installs, upgrades or removes `runner` from a release mirror.
#
#   curl -fsSL https://relay.example.com/install.sh | sudo TOKEN=… URL=https://relay.example.com bash
#   curl -fsSL https://relay.example.com/install.sh | sudo bash -s -- --uninstall
#
# The same command upgrades: when the installed `runner --version` already
# equals the mirror's latest version the download is skipped.
#
# Flags:
#   --no-service      install the binary only (no /etc/runner/env, no service)
#   --run-as USER     run the service as this existing user (or RUN_AS=USER)
#   --uninstall       stop and remove the service and the binary; keep
#                     /etc/runner and /var/lib/runner
#   --purge           like --uninstall, and remove /etc/runner and /var/lib/runner
#   -h, --help        this text
#
# Environment:
#   URL               the relay; written to /etc/runner/env as RUNNER_URL
#   TOKEN             registration token; written to /etc/runner/env, never printed
#   RUN_AS            same as --run-as
#   MIRROR            release mirror (default: URL, the relay serves the mirror)
#   VERSION           install this version instead of the mirror's latest
#   PREFIX            install prefix (default /usr/local): PREFIX/bin/runner
#   INSTALL_PUBKEY_PEM  path to the release public key (PEM), or
#   INSTALL_PUBKEY    the raw 32-byte key in base64: the key the release must be
#                     signed with. Default: the key scripts/make-release.sh
#                     wrote into this script when it published it. Either way
#                     the ed25519 signature over SHA256SUMS is verified with
#                     OpenSSL 3 before anything is downloaded or run; without a
#                     key or without OpenSSL 3 nothing is installed.
#   OPENSSL           the openssl program to use (default: openssl on PATH)
#   ROOT              prefix for every path this script writes (default empty),
#                     for tests and image builds; with ROOT set the script
#                     never calls systemctl, launchctl or useradd.
#
# Mirror layout: install.sh, releases/latest (one line: the version),
# releases/download/VERSION/{runner-OS-ARCH,SHA256SUMS,SHA256SUMS.sig}, where
# OS and ARCH are Rust's names (linux/macos, x86_64/aarch64).
set -euo pipefail

SERVICE_NAME=runner
# The release public key (raw 32 bytes, base64), written here by
# scripts/make-release.sh when it publishes this script. Empty in the
# repository's copy: that one needs INSTALL_PUBKEY or INSTALL_PUBKEY_PEM.
embedded_public_key=""

say() { printf 'install.sh: %s\n' "$*" >&2; }
die() {
  printf 'install.sh: error: %s\n' "$*" >&2
  exit 1
}

usage() {
  cat >&2 <<'EOF'
usage: TOKEN=... URL=https://relay.example.com [RUN_AS=user] bash install.sh [FLAGS]

  --no-service    install the binary only (no /etc/runner/env, no service)
  --run-as USER   run the service as this existing user (or RUN_AS=USER)
  --uninstall     remove the service and the binary; keep /etc/runner and /var/lib/runner
  --purge         like --uninstall, and remove /etc/runner and /var/lib/runner

Environment: URL, TOKEN, RUN_AS, MIRROR (default: URL), VERSION (default: the
mirror's latest), PREFIX (default /usr/local), INSTALL_PUBKEY (base64) or
INSTALL_PUBKEY_PEM (file): the release key (default: the one written in by
make-release.sh), OPENSSL (OpenSSL 3 verifies the signature), ROOT (prefix for
every path written; no systemctl/useradd when set).
EOF
}

# --- arguments ---------------------------------------------------------------

mode=install
with_service=1
run_as="${RUN_AS:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --no-service) with_service=0 ;;
    --run-as)
      [ $# -ge 2 ] || die "--run-as needs a user name"
      run_as="$2"
      shift
      ;;
    --run-as=*) run_as="${1#--run-as=}" ;;
    --uninstall) mode=uninstall ;;
    --purge) mode=purge ;;
    -h | --help)
      usage
      exit 0
      ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done

root="${ROOT:-}"
root="${root%/}"
prefix="${PREFIX:-/usr/local}"
bin_dir="$root$prefix/bin"
bin="$bin_dir/runner"
etc_dir="$root/etc/runner"
env_file="$etc_dir/env"
data_dir="$root/var/lib/runner"

if [ -n "$run_as" ]; then
  case "$run_as" in
    *[!A-Za-z0-9._-]* | -*) die "RUN_AS/--run-as '$run_as' is not a valid user name" ;;
  esac
fi

# True when this run may change the live system (services, users).
live_system() { [ -z "$root" ]; }

# --- platform ----------------------------------------------------------------

detect_platform() {
  case "$(uname -s)" in
    Linux) os=linux ;;
    Darwin) os=macos ;;
    *) die "unsupported operating system '$(uname -s)' (supported: Linux, macOS)" ;;
  esac
  case "$(uname -m)" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) die "unsupported architecture '$(uname -m)' (supported: x86_64, aarch64)" ;;
  esac
  asset="runner-$os-$arch"
}

# --- downloads ---------------------------------------------------------------

# fetch URL FILE: downloads URL into FILE; fails on any HTTP error.
fetch() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 3 --connect-timeout 15 -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -T 15 -O "$2" "$1"
  else
    die "neither curl nor wget is installed"
  fi
}

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | awk '{print $1}'
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | awk '{print $1}'
  else
    die "neither sha256sum nor shasum is installed: cannot verify the download"
  fi
}

# installed_version: prints the installed runner's version, or nothing.
installed_version() {
  [ -x "$bin" ] || return 0
  "$bin" --version 2>/dev/null | awk 'NR == 1 {print $2}' || true
}

# OpenSSL 3 (or newer) verifies Ed25519 over a whole file (`pkeyutl -rawin`);
# LibreSSL and OpenSSL 1.x cannot.
check_openssl() {
  openssl="${OPENSSL:-openssl}"
  command -v "$openssl" >/dev/null 2>&1 ||
    die "openssl is not installed: OpenSSL 3 is needed to verify the release signature (set OPENSSL=/path/to/openssl)"
  case "$("$openssl" version 2>/dev/null)" in
    "OpenSSL 3"* | "OpenSSL 4"*) ;;
    *) die "$("$openssl" version 2>/dev/null || echo "$openssl") cannot verify Ed25519 signatures; install OpenSSL 3 and set OPENSSL=/path/to/openssl (macOS: brew install openssl@3)" ;;
  esac
}

# release_key FILE: writes the release public key to FILE (DER), from
# INSTALL_PUBKEY_PEM, INSTALL_PUBKEY or the embedded key, in that order.
release_key() {
  local der="$1" raw="$1.raw" b64
  if [ -n "${INSTALL_PUBKEY_PEM:-}" ]; then
    [ -r "$INSTALL_PUBKEY_PEM" ] || die "INSTALL_PUBKEY_PEM '$INSTALL_PUBKEY_PEM' is not a readable file"
    "$openssl" pkey -pubin -in "$INSTALL_PUBKEY_PEM" -outform DER -out "$der" 2>/dev/null ||
      die "INSTALL_PUBKEY_PEM '$INSTALL_PUBKEY_PEM' is not a public key (PEM)"
    key_source="INSTALL_PUBKEY_PEM"
    return 0
  fi
  b64="${INSTALL_PUBKEY:-$embedded_public_key}"
  key_source="the key this script was published with"
  [ -z "${INSTALL_PUBKEY:-}" ] || key_source="INSTALL_PUBKEY"
  [ -n "$b64" ] ||
    die "no release public key: this install.sh was not published by make-release.sh; set INSTALL_PUBKEY (base64) or INSTALL_PUBKEY_PEM (file) to the key releases are signed with"
  case "$b64" in
    *[!A-Za-z0-9+/=]*) die "the release public key '$b64' is not base64" ;;
  esac
  printf '%s' "$b64" | "$openssl" base64 -d -A -out "$raw" 2>/dev/null ||
    die "the release public key is not base64"
  [ "$(wc -c <"$raw" | tr -d ' ')" = 32 ] || die "the release public key is not 32 bytes (raw Ed25519, base64)"
  # SubjectPublicKeyInfo of an Ed25519 key: this 12-byte header, then the key.
  {
    printf '\060\052\060\005\006\003\053\145\160\003\041\000'
    cat "$raw"
  } >"$der"
}

# verify_signature SUMS SIG: the ed25519 signature SIG (base64 of 64 raw
# bytes, one line) over the exact bytes of SUMS, by the release key.
verify_signature() {
  local sums="$1" sig="$2" raw="$2.raw" key="$temp_dir/release-key.der"
  release_key "$key"
  "$openssl" base64 -d -A -in "$sig" -out "$raw" 2>/dev/null ||
    die "SHA256SUMS.sig of $version is not base64: refusing to install"
  [ "$(wc -c <"$raw" | tr -d ' ')" = 64 ] ||
    die "SHA256SUMS.sig of $version is not a 64-byte Ed25519 signature: refusing to install"
  if ! "$openssl" pkeyutl -verify -pubin -keyform DER -inkey "$key" -rawin \
    -in "$sums" -sigfile "$raw" >/dev/null 2>&1; then
    die "the signature over SHA256SUMS of $version does not verify with $key_source: refusing to install"
  fi
  say "signature over SHA256SUMS verified ($key_source)"
}

# --- service -----------------------------------------------------------------

service_supported() {
  "$bin" service install --help >/dev/null 2>&1
}

write_env_file() {
  # Values are written double-quoted (systemd EnvironmentFile syntax); refuse
  # what would need escaping rather than escape it subtly wrong.
  case "$URL$TOKEN" in
    *$'\n'* | *$'\r'* | *'"'* | *\\* | *'$'* | *'`'*)
      die "URL and TOKEN must be single lines without quotes, backslashes, '\$' or backticks"
      ;;
  esac
  mkdir -p "$etc_dir"
  chmod 0755 "$etc_dir"
  local temp="$env_file.tmp.$$"
  # 0600 from the first byte: the token must never be readable by others.
  (
    umask 077
    {
      printf '# Written by install.sh. Read by the runner service (systemd EnvironmentFile).\n'
      printf 'RUNNER_URL="%s"\n' "$URL"
      printf 'RUNNER_TOKEN="%s"\n' "$TOKEN"
      if [ -n "$run_as" ]; then
        printf '# The service runs as user %s (--run-as / RUN_AS).\n' "$run_as"
      fi
    } >"$temp"
  )
  chmod 0600 "$temp"
  mv -f "$temp" "$env_file"
  say "wrote $env_file (mode 0600; the token is not shown)"
}

install_service() {
  [ -n "${URL:-}" ] || die "URL is not set: the service needs the relay URL (or pass --no-service)"
  [ -n "${TOKEN:-}" ] || die "TOKEN is not set: the service needs a registration token (or pass --no-service)"
  if ! service_supported; then
    die "this runner binary has no 'runner service install' command yet: rerun with --no-service and start 'runner run' yourself"
  fi
  write_env_file
  # `runner service install` creates the `runner` user (unless --run-as),
  # rewrites the env file in its own format, writes the unit and starts it.
  # The token goes to it in the environment, never on a command line.
  local args=(service install --url "$URL" --binary "$prefix/bin/runner")
  [ -z "$run_as" ] || args+=(--run-as "$run_as")
  live_system || args+=(--root "$root")
  RUNNER_TOKEN="$TOKEN" "$bin" "${args[@]}" || die "'runner ${args[*]}' failed"
  say "service installed"
}

remove_service() {
  if [ -x "$bin" ] && "$bin" service uninstall --help >/dev/null 2>&1; then
    local args=(service uninstall)
    live_system || args+=(--root "$root")
    "$bin" "${args[@]}" || die "'runner ${args[*]}' failed"
    return 0
  fi
  # Fallback for binaries without `service uninstall`: the unit's well-known paths.
  local unit="$root/etc/systemd/system/$SERVICE_NAME.service"
  local plist="$root/Library/LaunchDaemons/dev.runner.runner.plist"
  if live_system && [ -f "$unit" ] && command -v systemctl >/dev/null 2>&1; then
    systemctl disable --now "$SERVICE_NAME.service" >/dev/null 2>&1 || true
  fi
  if live_system && [ -f "$plist" ] && command -v launchctl >/dev/null 2>&1; then
    launchctl bootout system "$plist" >/dev/null 2>&1 || true
  fi
  rm -f "$unit" "$plist"
  if live_system && command -v systemctl >/dev/null 2>&1; then
    systemctl daemon-reload >/dev/null 2>&1 || true
  fi
}

# --- main --------------------------------------------------------------------

uninstall() {
  remove_service
  rm -f "$bin" "$bin.previous"
  say "removed $bin"
  if [ "$mode" = purge ]; then
    rm -rf "$etc_dir" "$data_dir"
    say "removed $etc_dir and $data_dir"
  else
    say "kept $etc_dir and $data_dir (use --purge to remove them)"
  fi
}

install() {
  detect_platform
  local mirror="${MIRROR:-${URL:-}}"
  mirror="${mirror%/}"
  [ -n "$mirror" ] || die "set URL (the relay, which serves the releases) or MIRROR"
  if [ "$with_service" = 1 ]; then
    # Fail before downloading anything when the service step cannot succeed.
    [ -n "${URL:-}" ] || die "URL is not set: the service needs the relay URL (or pass --no-service)"
    [ -n "${TOKEN:-}" ] || die "TOKEN is not set: the service needs a registration token (or pass --no-service)"
  fi

  temp_dir="$(mktemp -d "${TMPDIR:-/tmp}/runner-install.XXXXXX")"
  trap 'rm -rf "$temp_dir"' EXIT

  version="${VERSION:-}"
  if [ -z "$version" ]; then
    fetch "$mirror/releases/latest" "$temp_dir/latest" ||
      die "cannot read $mirror/releases/latest"
    version="$(tr -d ' \t\r\n' <"$temp_dir/latest")"
  fi
  case "$version" in
    "" | .* | *[!A-Za-z0-9.+-]*) die "'$version' from $mirror/releases/latest is not a version" ;;
  esac

  local current
  current="$(installed_version)"
  if [ "$current" = "$version" ]; then
    say "runner is already at $version ($bin); nothing to download"
  else
    local base="$mirror/releases/download/$version"
    check_openssl
    # The signed list first: a release that fails it costs two small files,
    # and no byte of the binary is run before its hash is vouched for.
    fetch "$base/SHA256SUMS" "$temp_dir/SHA256SUMS" || die "cannot download $base/SHA256SUMS"
    fetch "$base/SHA256SUMS.sig" "$temp_dir/SHA256SUMS.sig" ||
      die "cannot download $base/SHA256SUMS.sig: refusing an unsigned release"
    verify_signature "$temp_dir/SHA256SUMS" "$temp_dir/SHA256SUMS.sig"
    say "downloading runner $version for $os/$arch from $mirror"
    fetch "$base/$asset" "$temp_dir/$asset" || die "cannot download $base/$asset"

    local expected actual
    expected="$(awk -v name="$asset" '$2 == name || $2 == "*" name {print $1; exit}' "$temp_dir/SHA256SUMS")"
    [ -n "$expected" ] || die "SHA256SUMS of $version has no line for $asset"
    actual="$(sha256_of "$temp_dir/$asset")"
    if [ "$expected" != "$actual" ]; then
      die "checksum mismatch for $asset $version: SHA256SUMS says $expected, the download is $actual; nothing was installed"
    fi
    say "checksum verified ($actual)"

    chmod 0755 "$temp_dir/$asset"
    # Running it catches a binary this machine cannot execute before it
    # replaces a working one.
    local reported
    reported="$("$temp_dir/$asset" --version 2>/dev/null | awk 'NR == 1 {print $2}')" ||
      die "the downloaded $asset does not run on this machine; nothing was installed"
    [ "$reported" = "$version" ] ||
      say "warning: the binary published as $version reports version '$reported'"

    mkdir -p "$bin_dir"
    local staged="$bin_dir/.runner.install.$$"
    cp "$temp_dir/$asset" "$staged"
    chmod 0755 "$staged"
    if [ -f "$bin" ]; then
      cp -p "$bin" "$bin.previous"
    fi
    # A rename in the same directory: a running runner keeps its old inode.
    mv -f "$staged" "$bin"
    if [ -n "$current" ]; then
      say "upgraded runner $current -> $version at $bin (previous kept as $bin.previous)"
    else
      say "installed runner $version at $bin"
    fi
  fi

  if [ "$with_service" = 1 ]; then
    install_service
  else
    say "skipped the service (--no-service); start it with: RUNNER_URL=… RUNNER_TOKEN=… $prefix/bin/runner run"
    if live_system && command -v systemctl >/dev/null 2>&1 &&
      systemctl is-active --quiet "$SERVICE_NAME.service" 2>/dev/null; then
      say "note: the $SERVICE_NAME service is running; restart it to use the new binary"
    fi
  fi
}

case "$mode" in
  install) install ;;
  uninstall | purge) uninstall ;;
esac
