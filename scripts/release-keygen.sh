#!/usr/bin/env bash
# release-keygen.sh: makes the Ed25519 key pair that signs your `runner` releases.
#
#   scripts/release-keygen.sh [DIR]
#
# Writes into DIR (default: ~/.runner-release-key, created 0700):
#
#   release.key       private key (PEM, PKCS#8), mode 0600 from its first byte
#   release.pub.pem   public key (PEM): INSTALL_PUBKEY_PEM for install.sh
#   release.pub.b64   public key, raw 32 bytes in base64: what make-release.sh
#                     bakes into runner (RUNNER_RELEASE_PUBKEY) and install.sh
#
# Then: scripts/make-release.sh VERSION MIRROR_DIR --key DIR/release.key
#
# Keep release.key off the relay and out of any mirror, repository or CI log:
# whoever holds it can make every runner built with its public half install
# anything. It refuses to overwrite an existing key, and refuses a DIR inside
# a git work tree (where `git add .` would publish it). Needs OpenSSL 3.
set -euo pipefail

say() { printf 'release-keygen: %s\n' "$*" >&2; }
die() {
  printf 'release-keygen: error: %s\n' "$*" >&2
  exit 1
}

case "${1:-}" in
  -h | --help)
    sed -n '3p' "${BASH_SOURCE[0]}" | sed 's/^# *//' >&2
    exit 0
    ;;
esac
[ $# -le 1 ] || die "one argument at most: the directory to write the key pair into"
[ -n "${HOME:-}" ] || [ $# -eq 1 ] || die "HOME is not set: name the directory"
dir="${1:-$HOME/.runner-release-key}"

command -v openssl >/dev/null 2>&1 || die "openssl is not installed (OpenSSL 3 makes Ed25519 keys)"
case "$(openssl version)" in
  "OpenSSL 3"* | "OpenSSL 4"*) ;;
  *) die "$(openssl version) cannot make Ed25519 keys for make-release.sh; OpenSSL 3 or newer is needed" ;;
esac

private="$dir/release.key"
[ ! -e "$private" ] || die "$private exists; refusing to overwrite a release key (move it away first)"

# The nearest directory that exists, to ask git before creating anything.
existing="$dir"
while [ ! -d "$existing" ]; do existing="$(dirname "$existing")"; done
if command -v git >/dev/null 2>&1 && git -C "$existing" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  die "$dir is inside a git work tree ($(git -C "$existing" rev-parse --show-toplevel)): keep the private key out of repositories"
fi
umask 077
mkdir -p "$dir"
chmod 0700 "$dir"

# umask 077: the private key is 0600 from its first byte.
temp="$(mktemp "$dir/.release.key.XXXXXX")"
trap 'rm -f "$temp"' EXIT
openssl genpkey -algorithm ed25519 -out "$temp" 2>/dev/null || die "openssl could not make an Ed25519 key"
chmod 0600 "$temp"
mv "$temp" "$private"
trap - EXIT

umask 022
openssl pkey -in "$private" -pubout -out "$dir/release.pub.pem"
openssl pkey -in "$private" -pubout -outform DER | tail -c 32 | openssl base64 -A >"$dir/release.pub.b64"
echo >>"$dir/release.pub.b64"

say "private key: $private (mode 0600; keep it offline, never on the relay)"
say "public key:  $dir/release.pub.pem and $dir/release.pub.b64"
say "sign releases with: scripts/make-release.sh VERSION MIRROR_DIR --key $private"
# The public key on stdout, for scripts.
cat "$dir/release.pub.b64"
