#!/usr/bin/env bash
# Installs the .deb into a clean Debian 12 root and runs `polygraphy run <model> --ref --onnxrt` there,
# with nothing else installed: the package's Depends must bring every library, and --onnxrt must find
# the bundled ONNX Runtime. Needs root (chroot) and network access to Debian's mirror.
#
# usage: scripts/test_deb_install.sh [DEB]
#   DEB defaults to the one scripts/build_deb.sh writes (built first when missing).
#   The clean root is a copy of $FRESH_CACHE/base (default /var/tmp/fresh-machine/base, the root that
#   ../shared/tools/fresh-machine caches) when it exists, else a new `debootstrap --variant=minbase bookworm`.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf '[test_deb_install] %s\n' "$*"; }
[[ "$(id -u)" == 0 ]] || { say "needs root (chroot)"; exit 2; }

deb=${1:-}
if [[ -z "$deb" ]]; then
    deb=$(ls build/package/polygraphy_*_amd64.deb 2>/dev/null | head -n1 || true)
    [[ -n "$deb" ]] || deb=$(scripts/build_deb.sh | tail -n1)
fi
deb=$(realpath "$deb")
[[ -f "$deb" ]] || { say "no package $deb"; exit 1; }

work=$(mktemp -d /var/tmp/polygraphy-deb-test.XXXXXX)
root="$work/root"
mounts=()
cleanup() {
    local i
    for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

base=${FRESH_CACHE:-/var/tmp/fresh-machine}/base
if [[ -f "$base/.complete" ]]; then
    say "copying the clean root $base"
    cp -a "$base" "$root"
else
    say "no cached root in $base: debootstrap bookworm (minbase)"
    command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
    mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
    debootstrap --variant=minbase bookworm "$root" "${mirror:-http://deb.debian.org/debian}" >"$work/debootstrap.log" 2>&1 ||
        { tail -n 20 "$work/debootstrap.log"; say "debootstrap failed"; exit 1; }
fi
for dir in proc sys dev; do mkdir -p "$root/$dir"; mount --bind "/$dir" "$root/$dir"; mounts+=("$root/$dir"); done
cp /etc/resolv.conf "$root/etc/resolv.conf"
mkdir -p "$root/test"
cp "$deb" "$root/test/"
# The model is made here (the package holds no model generator) and copied in.
build/bin/make_example_models "$root/test" >/dev/null

in_root() { chroot "$root" env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 bash -c "$1"; }
if in_root 'command -v polygraphy' >/dev/null 2>&1; then say "the clean root already has polygraphy"; exit 1; fi
say "apt install ./$(basename "$deb")"
in_root "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /test/$(basename "$deb")" \
    >"$work/apt.log" 2>&1 || { tail -n 30 "$work/apt.log"; say "FAILED: apt install"; exit 1; }
say "polygraphy run example_cnn.onnx --ref --onnxrt (in the clean root)"
if ! in_root 'cd /test && polygraphy run example_cnn.onnx --ref --onnxrt --val-range [-1,1] -v' >"$work/run.log" 2>&1; then
    tail -n 30 "$work/run.log"; say "FAILED: polygraphy run"; exit 1
fi
grep -F "Loaded ONNX-Runtime" "$work/run.log" | sed 's/^/    /'
grep -qF "PASSED | All outputs matched" "$work/run.log" || { tail -n 30 "$work/run.log"; say "FAILED: no PASSED line"; exit 1; }
flags=$(in_root 'polygraphy-config --cflags --libs')
echo "    polygraphy-config: $flags"
# Installed under /usr, the system folders must not be named (-I/usr/include breaks #include_next).
if grep -qE -- '-I/usr/include( |$)|-L/usr/lib( |$)' <<<"$flags"; then say "FAILED: polygraphy-config names system folders"; exit 1; fi
say "PASSED: the .deb installs into a clean root and runs --ref --onnxrt"
