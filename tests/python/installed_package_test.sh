#!/usr/bin/env bash
# The installed Python package works from a moved prefix (CTest: python.installed_package): installs this
# build to a temporary prefix, MOVES it, then imports polygraphy from <prefix>/lib/python3/dist-packages
# with /usr/bin/python3 and runs the identity model on the built-in runtime. The module must load the
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
