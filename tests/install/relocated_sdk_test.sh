#!/usr/bin/env bash
# The install is relocatable (CTest: install.relocated_sdk): installs this build to a temporary prefix,
# MOVES the prefix, then uses it from its new place:
#   - polygraphy-config reports the new prefix, and refuses an unknown flag with exit 2 and a usage line;
#   - the installed polygraphy runs (it finds libpolygraphy through its $ORIGIN-relative rpath) and, when
#     ONNX Runtime was bundled, loads the copy inside the moved prefix;
#   - a `run --gen-script` program compiles with the moved polygraphy-config and gives the CLI's verdict;
#   - the extension-module example builds against the moved CMake package and passes its README steps
#     (tests/plugins/example_sdk_test.sh with the moved prefix).
#
# usage: relocated_sdk_test.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail

build_dir=$(realpath "$1")
source_dir=$(realpath "$2")
work=$3
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
work=$(realpath "$work")
unset POLYGRAPHY_PLUGIN_PATH POLYGRAPHY_ONNXRUNTIME_LIB

echo "==== cmake --install $build_dir --prefix $work/installed, then mv to $work/moved"
cmake --install "$build_dir" --prefix "$work/installed" >"$work/install.log"
mv "$work/installed" "$work/moved"
prefix="$work/moved"
[[ ! -e "$work/installed" ]] || fail "the original prefix still exists"

echo "==== polygraphy-config"
config="$prefix/bin/polygraphy-config"
[[ "$("$config" --prefix)" == "$prefix" ]] || fail "polygraphy-config --prefix: $("$config" --prefix), expected $prefix"
flags=$("$config" --cflags --libs)
echo "$flags"
grep -qF -- "-I$prefix/include" <<<"$flags" || fail "--cflags lacks -I$prefix/include"
grep -qF -- "-L$prefix/" <<<"$flags" || fail "--libs lacks -L$prefix/..."
if grep -qF -- "$work/installed" <<<"$flags"; then fail "polygraphy-config still names the original prefix"; fi
# Through a symbolic link elsewhere, it still finds its own prefix.
ln -s "$config" "$work/config-link"
[[ "$("$work/config-link" --prefix)" == "$prefix" ]] || fail "polygraphy-config through a link: $("$work/config-link" --prefix)"
rc=0
out=$("$config" --frobnicate 2>&1) || rc=$?
[[ $rc == 2 ]] || fail "polygraphy-config --frobnicate: exit $rc, expected 2"
grep -qF "unknown option: --frobnicate" <<<"$out" || fail "polygraphy-config --frobnicate: $out"
grep -qF "usage: polygraphy-config" <<<"$out" || fail "polygraphy-config --frobnicate prints no usage line"

echo "==== the moved polygraphy"
polygraphy="$prefix/bin/polygraphy"
"$polygraphy" --version | grep -qF "Path: ['$prefix/" || fail "polygraphy --version does not name the moved prefix"
"$build_dir/bin/make_example_models" "$work" >/dev/null
model="$work/example_cnn.onnx"
[[ -f "$model" ]] || fail "make_example_models wrote no example_cnn.onnx"
runners=(--ref)
bundled="$(find "$prefix" -path '*/polygraphy/onnxruntime/libonnxruntime.so.1' | head -n1)"
if [[ -n "$bundled" ]]; then
    runners+=(--onnxrt)
    out=$("$polygraphy" run "$model" "${runners[@]}" --val-range [-1,1] -v 2>&1) || { echo "$out"; fail "run --ref --onnxrt"; }
    grep -qF "Loaded ONNX-Runtime 1." <<<"$out" || { echo "$out"; fail "no 'Loaded ONNX-Runtime' line"; }
    grep -qF "from $bundled" <<<"$out" || { grep -F "Loaded ONNX-Runtime" <<<"$out"; fail "ONNX Runtime not loaded from the moved prefix ($bundled)"; }
    grep -qF "PASSED | All outputs matched" <<<"$out" || { echo "$out"; fail "the comparison did not pass"; }
    echo "ONNX Runtime loaded from $bundled"
else
    echo "(no ONNX Runtime bundled in this build: --onnxrt not tried)"
fi

echo "==== a --gen-script program built against the moved SDK"
(cd "$work" && "$polygraphy" run "$model" "${runners[@]}" --val-range [-1,1] --gen-script prog.cpp >/dev/null)
compiler=${CXX:-c++}
# shellcheck disable=SC2046
$compiler -std=c++20 -O0 "$work/prog.cpp" $("$config" --cflags --libs) -o "$work/prog" ||
    fail "the generated program does not compile against the moved SDK"
cli_rc=0
"$polygraphy" run "$model" "${runners[@]}" --val-range [-1,1] >"$work/cli.log" 2>&1 || cli_rc=$?
prog_rc=0
"$work/prog" >"$work/prog.log" 2>&1 || prog_rc=$?
[[ $prog_rc == "$cli_rc" ]] || { cat "$work/prog.log"; fail "program exit $prog_rc, CLI exit $cli_rc"; }
grep -qF "PASSED" "$work/prog.log" || { cat "$work/prog.log"; fail "the generated program printed no PASSED line"; }
linked=$(ldd "$work/prog" | awk '/libpolygraphy/ {print $3}')
[[ "$linked" == "$prefix/"* ]] || fail "the program loads libpolygraphy from $linked, not from the moved prefix"

echo "==== the extension-module example against the moved SDK"
bash "$source_dir/tests/plugins/example_sdk_test.sh" "$build_dir" "$source_dir" "$work/example" "$prefix"
echo "==== relocated SDK: all checks passed"
