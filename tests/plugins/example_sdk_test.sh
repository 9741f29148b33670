#!/usr/bin/env bash
# The SDK as a module author uses it (CTest: extension_sdk.example_02_extending_polygraphy_run):
# installs this build to a temporary prefix with `cmake --install`, builds the example extension
# module of examples/dev/02_extending_polygraphy_run against it with find_package(polygraphy),
# installs it into the prefix's plugin folder and runs every step of the example's README,
# checking what each prints. Step 5 (--onnxrt) runs only when ONNX-Runtime is available.
#
# usage: example_sdk_test.sh BUILD_DIR SOURCE_DIR WORK_DIR [SDK_PREFIX]
# With SDK_PREFIX, the SDK already installed there is used instead (tests/install/relocated_sdk_test.sh
# passes a prefix that was moved after installing).
set -euo pipefail

build_dir=$(realpath "$1")
source_dir=$(realpath "$2")
work=$3
example="$source_dir/examples/dev/02_extending_polygraphy_run"

fail() { echo "FAIL: $*" >&2; exit 1; }
# expect NAME EXPECTED_STATUS PATTERN... : runs $cmd (an array), checks status and fixed-string patterns.
expect() {
    local name=$1 status=$2; shift 2
    local out rc=0
    out=$("${cmd[@]}" 2>&1) || rc=$?
    echo "---- $name: ${cmd[*]} (exit $rc)"
    echo "$out"
    [[ $rc == "$status" ]] || fail "$name: exit status $rc, expected $status"
    for pattern in "$@"; do
        grep -qF -- "$pattern" <<<"$out" || fail "$name: output lacks '$pattern'"
    done
    if grep -q '^\[W\]' <<<"$out"; then fail "$name: unexpected warning"; fi
    last_output=$out
}
# Average inference time in ms from the runner's summary line.
average_ms() { sed -n 's/.*Average inference time: \([0-9.e+]*\) ms\..*/\1/p' <<<"$1" | head -n1; }

rm -rf "$work"
mkdir -p "$work"
work=$(realpath "$work")
unset POLYGRAPHY_PLUGIN_PATH

if [[ -n "${4:-}" ]]; then
    prefix=$(realpath "$4")
    echo "==== SDK: the one installed in $prefix"
else
    prefix="$work/prefix"
    echo "==== SDK: cmake --install $build_dir --prefix $prefix"
    cmake --install "$build_dir" --prefix "$prefix" >"$work/install.log"
fi
for file in include/polygraphy/extension.h include/polygraphy/tools/args/arg_group.h bin/polygraphy; do
    [[ -e "$prefix/$file" ]] || fail "the SDK lacks $file"
done
config=$(find "$prefix" -name polygraphyConfig.cmake | head -n1)
[[ -n "$config" ]] || fail "the SDK lacks polygraphyConfig.cmake"
libdir=$(dirname "$(dirname "$(dirname "$config")")")
[[ -e "$libdir/libpolygraphy.so" ]] || fail "the SDK lacks libpolygraphy.so in $libdir"
polygraphy="$prefix/bin/polygraphy"

echo "==== Step 1: build and install the extension module"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
cmake -S "$example/extension_module" -B "$work/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" "${launcher[@]}" >"$work/configure.log" || { cat "$work/configure.log"; fail "configure"; }
cmake --build "$work/build" -j2 >"$work/build.log" || { cat "$work/build.log"; fail "build"; }
cmake --install "$work/build" >"$work/module_install.log"
[[ -f "$libdir/polygraphy/plugins/libpolygraphy_reshape_destroyer.so" ]] || fail "the module is not in $libdir/polygraphy/plugins"

cd "$work"
"$work/build/make_no_op_reshape" no_op_reshape.onnx
"$work/build/make_no_op_reshape" real_reshape.onnx --real-reshape

echo "==== Step 2: the new options in polygraphy run -h"
cmd=("$polygraphy" run -h)
expect "step 2" 0 "Run inference using the Identity-Only Runner." "ONNX Reshape Replacement:" "--res-des-rename-nodes" \
    "Identity-Only Runner Inference:" "--res-des-speed {slow,medium,fast}"
cmd=("$polygraphy" --version)
expect "version" 0 "Extension Module: polygraphy_reshape_destroyer | Version: 0.0.1 | Path: ['$libdir/polygraphy/plugins/libpolygraphy_reshape_destroyer.so']"

echo "==== Step 3: the custom runner on a model with a no-op Reshape"
cmd=("$polygraphy" run no_op_reshape.onnx --res-des)
expect "step 3" 0 "[I] Replacing no-op reshape: reshape with an Identity node" "[I] PASSED | Runtime: "

echo "==== Step 4: renaming, speeds"
cmd=("$polygraphy" run no_op_reshape.onnx --res-des --res-des-rename-nodes)
expect "step 4 rename" 0 "[I] Renamed Identity node to: reshape_destroyed" "[I] PASSED"
declare -A ms
for speed in slow medium fast; do
    cmd=("$polygraphy" run no_op_reshape.onnx --res-des "--res-des-speed=$speed")
    expect "step 4 $speed" 0 "[I] PASSED"
    ms[$speed]=$(average_ms "$last_output")
    [[ -n "${ms[$speed]}" ]] || fail "no inference time reported for $speed"
done
awk -v s="${ms[slow]}" -v m="${ms[medium]}" -v f="${ms[fast]}" 'BEGIN { exit !(s >= 950 && m >= 450 && m < s && f < 400) }' ||
    fail "inference times slow=${ms[slow]} medium=${ms[medium]} fast=${ms[fast]} ms do not show the speeds"
echo "inference times: slow=${ms[slow]} ms, medium=${ms[medium]} ms, fast=${ms[fast]} ms"

cmd=("$polygraphy" run no_op_reshape.onnx --res-des --res-des-speed warp)
expect "bad speed" 2 "argument --res-des-speed: invalid choice: 'warp' (choose from 'slow', 'medium', 'fast')"
cmd=("$polygraphy" run real_reshape.onnx --res-des)
expect "unsupported node" 1 "Encountered an unsupported type of node: Reshape (node 'flatten')" \
    "Note: This runner only supports Identity nodes!"

echo "==== Step 5: compare against ONNX-Runtime"
if [[ -n "${POLYGRAPHY_ONNXRUNTIME_LIB:-}" && -e "${POLYGRAPHY_ONNXRUNTIME_LIB}" ]] ||
    [[ -e "$libdir/polygraphy/onnxruntime/libonnxruntime.so.1" ]] ||
    [[ -e "$source_dir/.deps/onnxruntime/lib/libonnxruntime.so.1" ]]; then
    cmd=("$polygraphy" run no_op_reshape.onnx --res-des --onnxrt)
    expect "step 5" 0 "Comparing Output: 'y'" "PASSED | All outputs matched" "[I] PASSED | Runtime: "
else
    echo "step 5 skipped: ONNX-Runtime is not installed (scripts/setup_onnxruntime.sh)"
fi
echo "==== Step 6: the module's kernel of its own operator on the built-in runtime"
"$work/build/make_no_op_reshape" custom_reshape.onnx --custom-op
cmd=("$polygraphy" run no_op_reshape.onnx --ref --save-outputs reshape.json)
expect "step 6 reference" 0 "[I] PASSED | Runtime: "
cmd=("$polygraphy" run custom_reshape.onnx --pluginref --load-outputs reshape.json)
expect "step 6" 0 "PASSED | All outputs matched | Outputs: ['y']" "[I] PASSED | Runtime: "
echo "==== all steps passed"
