#!/usr/bin/env bash
# make-release.sh: lays out a signed `runner` release in a mirror directory.
#
#   scripts/make-release.sh VERSION OUT_DIR [--key PRIVATE_KEY_PEM] [--binary PATH]
#
# Without --binary it builds `runner` for this machine (Cargo profile `dist`:
# the release build with fat LTO and without line tables) and refuses when the built
# binary's --version is not VERSION. With --binary it
# publishes that file as VERSION (warning on a mismatch: the tests publish a
# copy of one build under several versions).
#
# OUT_DIR afterwards (any static HTTP server, or `runner-relay
# --releases-dir OUT_DIR`, can serve it):
#
#   install.sh                                   installers/install.sh with the public key written in
#   releases/latest                              "VERSION\n", written last
#   releases/download/VERSION/runner-OS-ARCH     OS/ARCH as Rust names them
#   releases/download/VERSION/SHA256SUMS         sha256sum lines of every runner-* there
#   releases/download/VERSION/SHA256SUMS.sig     ed25519 signature over SHA256SUMS,
#                                                64 raw bytes base64-encoded on one line
#
# Releases for several platforms go into the same VERSION directory by
# running this on each platform (or copying binaries in): SHA256SUMS is
# rewritten over every runner-* file present, and re-signed.
#
# Needs OpenSSL 3 (Ed25519 with `pkeyutl -rawin`).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
test_public_b64="$(tr -d ' \t\r\n' <"$repo/installers/test-keys/release-test.pub.b64")"

say() { printf 'make-release: %s\n' "$*" >&2; }
die() {
  printf 'make-release: error: %s\n' "$*" >&2
  exit 1
}
usage() {
  sed -n '3p' "${BASH_SOURCE[0]}" | sed 's/^# *//' >&2
  exit 2
}

positional=()
key=""
allow_test_key=0
binary=""
while [ $# -gt 0 ]; do
  case "$1" in
    --key)
      [ $# -ge 2 ] || die "--key needs a file"
      key="$2"
      shift
      ;;
    --test-key) allow_test_key=1 ;;
    --binary)
      [ $# -ge 2 ] || die "--binary needs a file"
      binary="$2"
      shift
      ;;
    -h | --help) usage ;;
    -*) die "unknown option '$1'" ;;
    *) positional+=("$1") ;;
  esac
  shift
done
[ ${#positional[@]} -eq 2 ] || usage
version="${positional[0]}"
out_dir="${positional[1]}"

case "$version" in
  "" | .* | *[!A-Za-z0-9.+-]*) die "'$version' is not a version (letters, digits, '.', '+', '-')" ;;
esac
[ -n "$key" ] || die "--key PRIVATE_KEY_PEM is required (make a key pair with scripts/release-keygen.sh)"
[ -r "$key" ] || die "private key '$key' is not a readable file"

command -v openssl >/dev/null 2>&1 || die "openssl is not installed (OpenSSL 3 signs Ed25519)"
case "$(openssl version)" in
  "OpenSSL 3"* | "OpenSSL 4"*) ;;
  *) die "$(openssl version) cannot sign Ed25519 with -rawin; OpenSSL 3 or newer is needed" ;;
esac

# The raw 32-byte public key, base64: what `runner` and install.sh trust.
# An Ed25519 SubjectPublicKeyInfo ends with the raw key.
public_b64="$(openssl pkey -in "$key" -pubout -outform DER 2>/dev/null | tail -c 32 | openssl base64 -A)" ||
  die "cannot read '$key' as a private key"
[ "$(printf '%s' "$public_b64" | openssl base64 -d -A | wc -c | tr -d ' ')" = 32 ] ||
  die "'$key' is not an Ed25519 private key"
build_features=()
if [ "$public_b64" = "$test_public_b64" ]; then
  [ "$allow_test_key" = 1 ] ||
    die "'$key' is the repository's TEST key, whose private half anyone can read; pass --test-key to make a test release that must never ship"
  say "WARNING: signing with the TEST ONLY key $key; never ship this release"
  build_features=(--features test-release-key)
fi

sha256_lines() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$@"
  else
    shasum -a 256 "$@"
  fi
}

# Rust's std::env::consts names, which `runner update` asks for.
case "$(uname -s)" in
  Linux) os=linux ;;
  Darwin) os=macos ;;
  *) die "unsupported operating system '$(uname -s)'" ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) arch=x86_64 ;;
  aarch64 | arm64) arch=aarch64 ;;
  *) die "unsupported architecture '$(uname -m)'" ;;
esac
asset="runner-$os-$arch"

if [ -z "$binary" ]; then
  say "building runner (profile dist: release with fat LTO, without line tables) for $os/$arch"
  # The key the built runner trusts comes from here (cli/build.rs).
  (cd "$repo" && RUNNER_RELEASE_PUBKEY="$public_b64" cargo build --profile dist --locked -p runner-cli --bin runner "${build_features[@]}")
  binary="${CARGO_TARGET_DIR:-$repo/target}/dist/runner"
  built="$("$binary" --version | awk '{print $2}')"
  [ "$built" = "$version" ] ||
    die "the built runner reports version '$built', not '$version': bump [workspace.package] version first"
else
  [ -f "$binary" ] || die "--binary '$binary' is not a file"
  reported="$("$binary" --version 2>/dev/null | awk '{print $2}')" || reported="?"
  [ "$reported" = "$version" ] ||
    say "warning: $binary reports version '$reported' but is published as '$version'"
  # A runner that trusts another key would refuse every later release
  # signed with this one. `doctor` names the key it trusts; run it with
  # no configuration so it probes nothing.
  scratch="$(mktemp -d)"
  trusted="$(env -u RUNNER_URL -u RUNNER_TOKEN -u RUNNER_API_KEY \
    RUNNER_CONFIG_DIR="$scratch/config" RUNNER_STATE_DIR="$scratch/state" \
    "$binary" doctor --json 2>/dev/null)" || true
  rm -rf "$scratch"
  case "$trusted" in
    *"$public_b64"*) ;;
    *) say "warning: $binary does not trust this signing key (see its \`runner doctor\`): once installed it refuses later releases signed with it" ;;
  esac
fi

release_dir="$out_dir/releases/download/$version"
mkdir -p "$release_dir"
# install.sh verifies the signature with the key written into its
# `embedded_public_key=` line (exactly one, checked).
[ "$(grep -c '^embedded_public_key=""$' "$repo/installers/install.sh")" = 1 ] ||
  die "installers/install.sh has no single 'embedded_public_key=\"\"' line to fill in"
sed "s|^embedded_public_key=\"\"\$|embedded_public_key=\"$public_b64\"|" \
  "$repo/installers/install.sh" >"$out_dir/install.sh.tmp"
chmod 0755 "$out_dir/install.sh.tmp"
mv -f "$out_dir/install.sh.tmp" "$out_dir/install.sh"
cp "$binary" "$release_dir/$asset.tmp"
chmod 0755 "$release_dir/$asset.tmp"
mv -f "$release_dir/$asset.tmp" "$release_dir/$asset"

(
  cd "$release_dir"
  # Every platform's binary in this version, in C order so the file is stable.
  export LC_ALL=C
  assets=()
  for file in runner-*; do
    case "$file" in
      *.tmp) ;;
      *) assets+=("$file") ;;
    esac
  done
  sha256_lines "${assets[@]}" >SHA256SUMS.tmp
  mv -f SHA256SUMS.tmp SHA256SUMS
)

signature_raw="$(mktemp)"
public_pem="$(mktemp)"
trap 'rm -f "$signature_raw" "$public_pem"' EXIT
openssl pkeyutl -sign -rawin -inkey "$key" -in "$release_dir/SHA256SUMS" -out "$signature_raw" ||
  die "signing SHA256SUMS with $key failed (is it an Ed25519 private key?)"
[ "$(wc -c <"$signature_raw" | tr -d ' ')" = 64 ] || die "the signature is not 64 bytes: is $key an Ed25519 key?"
openssl base64 -A -in "$signature_raw" >"$release_dir/SHA256SUMS.sig.tmp"
echo >>"$release_dir/SHA256SUMS.sig.tmp"
mv -f "$release_dir/SHA256SUMS.sig.tmp" "$release_dir/SHA256SUMS.sig"

# Self-check with the public half, so a broken signature never gets published.
openssl pkey -in "$key" -pubout -out "$public_pem"
openssl pkeyutl -verify -pubin -inkey "$public_pem" -rawin \
  -in "$release_dir/SHA256SUMS" -sigfile "$signature_raw" >/dev/null ||
  die "the fresh signature does not verify"

# Last, so a mirror never points at a half-written release.
printf '%s\n' "$version" >"$out_dir/releases/latest.tmp"
mv -f "$out_dir/releases/latest.tmp" "$out_dir/releases/latest"

say "published $asset $version in $out_dir"
say "signed with public key (base64, raw 32 bytes): $public_b64"
