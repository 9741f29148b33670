#!/usr/bin/env bash
# The wheel (CTest: python.wheel): scripts/build_wheel.sh packages this build; pip installs the wheel,
# without any index, into a fresh virtual environment (with Debian's numpy through
# --system-site-packages); outside the source and build trees and without PYTHONPATH, the venv's
# python imports the wheel's package and its own libpolygraphy, runs the seeds' API scripts
# (examples/python/*), and the wheel's `polygraphy` command compares a model and runs a Python hook
# against the wheel's package. A wheel tagged for another Python is refused by pip in one line.
#
# usage: wheel_test.sh SOURCE_DIR BUILD_DIR PYTHON MODELS_DIR WORK_DIR
set -euo pipefail

source_dir=$(realpath "$1")
build_dir=$(realpath "$2")
python=$3
models=$(realpath "$4")
work=$5
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
work=$(realpath "$work")
unset PYTHONPATH

wheel=$("$source_dir/scripts/build_wheel.sh" --build-dir "$build_dir" "$work/dist" | tail -n 1)
tag=$("$python" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
[[ $(basename "$wheel") =~ ^polygraphy-[0-9.]+-$tag-$tag-linux_x86_64\.whl$ ]] ||
  fail "the wheel $(basename "$wheel") is not tagged for $python ($tag, linux_x86_64)"
contents=$("$python" -m zipfile -l "$wheel")
for member in "polygraphy/_core" "polygraphy/_libs/bin/polygraphy" "polygraphy/_libs/lib/libpolygraphy.so." \
  "polygraphy/_libs/lib/polygraphy/libpolygraphy_python_bridge.so" "polygraphy/comparator/__init__.py"; do
  grep -qF "$member" <<<"$contents" || fail "the wheel has no $member"
done
echo "wheel: $(basename "$wheel") ($(du -h "$wheel" | cut -f1))"

"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --no-index --no-deps --disable-pip-version-check -q "$wheel" ||
  fail "pip could not install $wheel"
venv_python=$work/venv/bin/python

mkdir -p "$work/run"
cd "$work/run"
"$venv_python" - "$work/venv" "$models/identity.onnx" <<'PY'
import sys

import numpy as np

import polygraphy
import polygraphy._core
from polygraphy.backend.ref import RefRunner, SessionFromOnnx

venv = sys.argv[1]
assert polygraphy.__file__.startswith(venv), f"polygraphy imported from {polygraphy.__file__}"
libraries = {line.split()[-1] for line in open("/proc/self/maps") if "libpolygraphy.so" in line}
assert libraries and all(path.startswith(venv) for path in libraries), f"libpolygraphy loaded from {libraries}"
with RefRunner(SessionFromOnnx(sys.argv[2])) as runner:
    data = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    assert np.array_equal(runner.infer({"x": data})["y"], data)
print("wheel package: OK from", polygraphy.__file__, "with", *libraries)
PY

# The seeds' API scripts, as their READMEs run them, with the venv's python and command.
for example in "$source_dir"/examples/python/*/; do
  name=$(basename "$example")
  status=0
  bash "$source_dir/tests/python/run_python_example.sh" "$example" "$models" "$work/examples/$name" "$venv_python" \
    "$work/venv/bin/polygraphy" >"$work/example_$name.log" 2>&1 || status=$?
  ((status == 0)) || { tail -n 20 "$work/example_$name.log"; fail "example $name failed with the wheel (exit $status)"; }
  echo "example $name: OK"
done

# The wheel's command: a comparison with ONNX Runtime when the wheel carries it, and a hook that
# must import the wheel's package through the wheel's bridge.
runners=(--ref)
grep -qF "libonnxruntime.so" <<<"$contents" && runners=(--onnxrt --ref)
output=$("$work/venv/bin/polygraphy" run "$models/identity.onnx" "${runners[@]}" 2>&1) ||
  fail "the wheel's polygraphy run failed: $output"
grep -q "PASSED | Runtime" <<<"$output" || fail "no PASSED line from the wheel's polygraphy run: $output"
cat >loader.py <<'PY'
import numpy as np
import polygraphy

print("hook package:", polygraphy.__file__)

def load_data():
    yield {"x": np.ones((1, 1, 2, 2), dtype=np.float32)}
PY
output=$("$work/venv/bin/polygraphy" run "$models/identity.onnx" --ref --data-loader-script loader.py 2>&1) ||
  fail "the wheel's run --data-loader-script failed: $output"
grep -q "hook package: $work/venv/" <<<"$output" || fail "the hook did not import the wheel's package: $output"
echo "wheel command: OK (${runners[*]}, --data-loader-script)"

# Bad input: a wheel for another Python is one line from pip and a non-zero exit, nothing installed.
other=$work/dist/$(basename "$wheel" | sed "s/-$tag-$tag-/-cp27-cp27mu-/")
cp "$wheel" "$other"
"$python" -m venv --system-site-packages "$work/other_venv"
status=0
output=$("$work/other_venv/bin/pip" install --no-index --no-deps --disable-pip-version-check "$other" 2>&1) || status=$?
((status != 0)) || fail "pip installed a wheel tagged for another Python: $output"
# (pip may say first where it looks, when a local configuration gives it links)
[[ $(grep -c "^ERROR" <<<"$output") == 1 ]] && grep -q "^ERROR: .* is not a supported wheel on this platform" <<<"$output" ||
  fail "pip's refusal of a wheel for another Python is not one line: $output"
"$work/other_venv/bin/python" -c "import polygraphy" 2>/dev/null && fail "the refused wheel is importable"

# The package outside a wheel has no program to run: one line, exit 1.
status=0
output=$(PYTHONPATH="$build_dir/python" "$python" -c "import sys; from polygraphy._cli import main; sys.exit(main())" 2>&1) ||
  status=$?
((status == 1)) && [[ $(grep -c . <<<"$output") == 1 ]] || fail "polygraphy._cli outside a wheel: exit $status: $output"
echo "wheel refusals: OK"
