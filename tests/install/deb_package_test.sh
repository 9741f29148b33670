#!/usr/bin/env bash
# The Debian package (CTest: install.deb_package): builds polygraphy_<version>_amd64.deb with CPack from
# this build and checks it with dpkg-deb without installing it:
#   - metadata: name, version, architecture, and Depends computed by dpkg-shlibdeps (the libraries
#     libpolygraphy links: protobuf, ONNX, oneDNN, fmt, OpenMP, the C++ runtime);
#   - contents: the tool, the library, the headers, the CMake package, polygraphy-config, the plugins
#     folder, and (when the build bundles it) ONNX Runtime with its licence;
#   - unpacked anywhere (dpkg-deb -x), its polygraphy-config and polygraphy work from there.
# Installing it into a clean root and running --onnxrt there is scripts/test_deb_install.sh (needs root).
#
# usage: deb_package_test.sh BUILD_DIR WORK_DIR
set -euo pipefail

build_dir=$(realpath "$1")
work=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
work=$(realpath "$work")
unset POLYGRAPHY_PLUGIN_PATH POLYGRAPHY_ONNXRUNTIME_LIB

echo "==== cpack -G DEB"
(cd "$build_dir" && cpack -G DEB -B "$work/package" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack"; }
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build_dir/CPackConfig.cmake")
deb="$work/package/polygraphy_${version}_amd64.deb"
[[ -f "$deb" ]] || { ls "$work/package"; fail "no $deb"; }
echo "$deb: $(du -h "$deb" | cut -f1)"

echo "==== metadata"
field() { dpkg-deb -f "$deb" "$1"; }
[[ "$(field Package)" == polygraphy ]] || fail "Package: $(field Package)"
[[ "$(field Version)" == "$version" ]] || fail "Version: $(field Version)"
[[ "$(field Architecture)" == amd64 ]] || fail "Architecture: $(field Architecture)"
depends=$(field Depends)
echo "Depends: $depends"
# The runtime packages of what libpolygraphy links, as dpkg-shlibdeps names them.
for library in libprotobuf libonnx libdnnl libfmt libgomp1 libstdc++6 libc6; do
    grep -q "$library" <<<"$depends" || fail "Depends lacks $library (dpkg-shlibdeps did not run?)"
done
# dpkg-shlibdeps writes versioned dependencies like "libc6 (>= 2.34)"; a hand-typed list would not.
grep -qE 'libc6 \(>= [0-9.]+\)' <<<"$depends" || fail "Depends is not versioned by dpkg-shlibdeps: $depends"

echo "==== contents"
dpkg-deb -c "$deb" | awk '{print $6}' >"$work/contents.txt"
expect() { grep -qxE "$1" "$work/contents.txt" || fail "the package lacks $1"; }
expect './usr/bin/polygraphy'
expect './usr/bin/polygraphy-config'
expect './usr/lib/(x86_64-linux-gnu/)?libpolygraphy\.so\.[0-9.]+'
expect './usr/include/polygraphy/extension\.h'
expect './usr/lib/(x86_64-linux-gnu/)?cmake/polygraphy/polygraphyConfig\.cmake'
expect './usr/lib/(x86_64-linux-gnu/)?cmake/polygraphy/polygraphyTargets\.cmake'
expect './usr/lib/(x86_64-linux-gnu/)?polygraphy/plugins/'
bundled=0
if grep -qE 'polygraphy/onnxruntime/libonnxruntime\.so\.1$' "$work/contents.txt"; then
    bundled=1
    expect './usr/lib/(x86_64-linux-gnu/)?polygraphy/onnxruntime/LICENSE'
fi
if grep -qE '^\./usr/local/|/\.deps/|/build/' "$work/contents.txt"; then fail "the package holds build-machine paths"; fi

echo "==== unpacked elsewhere"
dpkg-deb -x "$deb" "$work/root"
prefix="$work/root/usr"
[[ "$("$prefix/bin/polygraphy-config" --prefix)" == "$prefix" ]] || fail "polygraphy-config --prefix: $("$prefix/bin/polygraphy-config" --prefix)"
"$build_dir/bin/make_example_models" "$work" >/dev/null
runners=(--ref)
[[ $bundled == 1 ]] && runners+=(--onnxrt)
out=$("$prefix/bin/polygraphy" run "$work/example_cnn.onnx" "${runners[@]}" --val-range [-1,1] -v 2>&1) ||
    { echo "$out"; fail "polygraphy run ${runners[*]} from the unpacked package"; }
grep -qF "PASSED" <<<"$out" || { echo "$out"; fail "no PASSED line"; }
if [[ $bundled == 1 ]]; then
    grep -qF "from $prefix/lib" <<<"$out" || { grep -F "Loaded ONNX-Runtime" <<<"$out"; fail "ONNX Runtime not loaded from the package"; }
fi
echo "==== Debian package: all checks passed"
