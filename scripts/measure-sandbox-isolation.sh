#!/usr/bin/env bash
# Times the isolation a sandbox host uses, side by side (docs/sandboxes.md):
#   bash      `bash -c true` (no isolation)
#   bwrap     bubblewrap alone: every namespace, the host's root read-only
#   sandbox   what `runner sandbox-enter` does: a private mount namespace,
#             an overlay root (a small base + the host's /usr), then bwrap
#             with every namespace, uid 0, --die-with-parent
# Prints p50 and p90 in ms over N runs (default 50). Needs root and bwrap.
set -euo pipefail
runs=${1:-50}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
base=$work/base
mkdir -p "$base"/{usr,proc,dev,etc,tmp,root,workspace}
for link in bin lib lib64 sbin; do [ -L /$link ] && ln -s "$(readlink /$link)" "$base/$link"; done
cp /etc/passwd /etc/group "$base/etc/"

sandbox() {
  local d=$work/s$1
  mkdir -p "$d"/{upper,work,merged,uupper,uwork}
  unshare --mount --propagation private sh -c "
    mount -t overlay overlay -o lowerdir=$base,upperdir=$d/upper,workdir=$d/work $d/merged &&
    mount -t overlay overlay -o lowerdir=/usr,upperdir=$d/uupper,workdir=$d/uwork $d/merged/usr &&
    exec bwrap --bind $d/merged / --proc /proc --dev /dev --unshare-all --uid 0 --gid 0 \
      --die-with-parent --new-session -- /bin/true"
  rm -rf "$d"
}

measure() {
  local name=$1; shift
  local times=()
  for i in $(seq "$runs"); do
    local start end
    start=$(date +%s%N)
    "$@" "$i" >/dev/null
    end=$(date +%s%N)
    times+=($(( (end - start) / 1000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk -v name="$name" '
    { t[NR] = $1 }
    END { printf "%-8s p50 %6.1f ms  p90 %6.1f ms  (%d runs)\n", name, t[int(NR*0.5)+1]/1000, t[int(NR*0.9)+1]/1000, NR }'
}

measure bash bash -c true
measure bwrap bwrap --ro-bind / / --proc /proc --dev /dev --unshare-all --uid 0 --gid 0 --die-with-parent -- /bin/true
measure sandbox sandbox
