#!/usr/bin/env bash
# Builds the Debian package polygraphy_<version>_amd64.deb into OUT_DIR (default: build/package) from
# the Release build in build/ (scripts/build.sh runs first). Installs under /usr; Depends are computed
# by dpkg-shlibdeps; ONNX Runtime (.deps/, scripts/setup_onnxruntime.sh) is bundled with its licence.
# usage: scripts/build_deb.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-build/package}")
scripts/build.sh
mkdir -p "$out"
(cd build && cpack -G DEB -B "$out" >"$out/cpack.log" 2>&1) || { cat "$out/cpack.log"; echo "[!] cpack failed"; exit 1; }
ls "$out"/polygraphy_*_amd64.deb
