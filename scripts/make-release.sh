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
#   install.sh                                   copy of installers/install.sh
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
# The key defaults to installers/test-keys/release-test.key, a TEST ONLY key
# whose public half is the one built into `runner` for now (see
# installers/README.md). Needs OpenSSL 3 (Ed25519 with `pkeyutl -rawin`).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
test_key="$repo/installers/test-keys/release-test.key"

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
key="$test_key"
binary=""
while [ $# -gt 0 ]; do
  case "$1" in
    --key)
      [ $# -ge 2 ] || die "--key needs a file"
      key="$2"
      shift
      ;;
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
[ -r "$key" ] || die "private key '$key' is not a readable file"

command -v openssl >/dev/null 2>&1 || die "openssl is not installed (OpenSSL 3 signs Ed25519)"
case "$(openssl version)" in
  "OpenSSL 3"* | "OpenSSL 4"*) ;;
  *) die "$(openssl version) cannot sign Ed25519 with -rawin; OpenSSL 3 or newer is needed" ;;
esac

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
  (cd "$repo" && cargo build --profile dist --locked -p runner-cli --bin runner)
  binary="${CARGO_TARGET_DIR:-$repo/target}/dist/runner"
  built="$("$binary" --version | awk '{print $2}')"
  [ "$built" = "$version" ] ||
    die "the built runner reports version '$built', not '$version': bump [workspace.package] version first"
else
  [ -f "$binary" ] || die "--binary '$binary' is not a file"
  reported="$("$binary" --version 2>/dev/null | awk '{print $2}')" || reported="?"
  [ "$reported" = "$version" ] ||
    say "warning: $binary reports version '$reported' but is published as '$version'"
fi

if [ "$key" -ef "$test_key" ]; then
  say "WARNING: signing with the TEST ONLY key $key; never ship this release"
fi

release_dir="$out_dir/releases/download/$version"
mkdir -p "$release_dir"
cp "$repo/installers/install.sh" "$out_dir/install.sh"
chmod 0755 "$out_dir/install.sh"
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
public_b64="$(openssl pkey -pubin -in "$public_pem" -outform DER | tail -c 32 | openssl base64 -A)"

# Last, so a mirror never points at a half-written release.
printf '%s\n' "$version" >"$out_dir/releases/latest.tmp"
mv -f "$out_dir/releases/latest.tmp" "$out_dir/releases/latest"

say "published $asset $version in $out_dir"
say "signed with public key (base64, raw 32 bytes): $public_b64"
