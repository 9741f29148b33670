#!/usr/bin/env bash
# The installed Python package works from a moved prefix (CTest: python.installed_package): installs this
# build to a temporary prefix, MOVES it, then imports polygraphy from <prefix>/lib/python3/dist-packages
# with /usr/bin/python3 and runs the identity model on the built-in runtime, then runs the installed CLI with
# --data-loader-script (its bridge must import the moved package). The module must load the
# moved prefix's libpolygraphy (not the build tree's), and the CLI must not link Python.
#
# usage: installed_package_test.sh BUILD_DIR PYTHON PYTHON_INSTALL_DIR MODELS_DIR WORK_DIR
set -euo pipefail

build_dir=$(realpath "$1")
python=$2
python_dir=$3
models=$(realpath "$4")
work=$5
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
work=$(realpath "$work")
cmake --install "$build_dir" --prefix "$work/installed" >"$work/install.log"
mv "$work/installed" "$work/moved"
prefix="$work/moved"

module=$(find "$prefix/$python_dir/polygraphy" -maxdepth 1 -name '_core*.so' | head -n1)
[[ -n "$module" ]] || fail "no extension module under $prefix/$python_dir/polygraphy"
linked=$(ldd "$module" | awk '/libpolygraphy/ {print $3}')
[[ "$linked" == "$prefix/"* ]] || fail "the module loads libpolygraphy from '$linked', not from the moved prefix"
if ldd "$prefix/bin/polygraphy" | grep -q libpython; then fail "the CLI links libpython"; fi

cd "$work"
PYTHONPATH="$prefix/$python_dir" "$python" - "$models/identity.onnx" <<'PY'
import os
import sys

import numpy as np

import polygraphy
from polygraphy.backend.ref import RefRunner, SessionFromOnnx

assert polygraphy.__file__.startswith(os.environ["PYTHONPATH"]), polygraphy.__file__
with RefRunner(SessionFromOnnx(sys.argv[1])) as runner:
    data = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    assert np.array_equal(runner.infer({"x": data})["y"], data)
print("installed package: OK from", polygraphy.__file__)
PY

# The CLI's Python hooks: the moved prefix's bridge finds the moved prefix's package.
bridge="$prefix/lib/polygraphy/libpolygraphy_python_bridge.so"
[[ -f "$bridge" ]] || bridge=$(find "$prefix" -name libpolygraphy_python_bridge.so | head -n1)
[[ -f "$bridge" ]] || fail "no Python bridge installed"
cat >"$work/loader.py" <<'PY'
import numpy as np
import polygraphy

print("hook package:", polygraphy.__file__)

def load_data():
    yield {"x": np.ones((1, 1, 2, 2), dtype=np.float32)}
PY
output=$(env -u PYTHONPATH "$prefix/bin/polygraphy" run "$models/identity.onnx" --ref \
    --data-loader-script "$work/loader.py" 2>&1) || fail "run --data-loader-script failed: $output"
grep -q "hook package: $prefix/" <<<"$output" || fail "the hook did not import the moved prefix's package: $output"
echo "installed CLI hook: OK"
