#!/usr/bin/env bash
# Builds a wheel of the Python package for Debian's python3 (the Python the bindings were built for)
# into OUT_DIR (default: build/wheel), with Debian's build tools only (python3-build, python3-wheel,
# python3-setuptools; no PyPI). The wheel holds the package with its extension module and, in
# polygraphy/_libs, a prefix of its own: libpolygraphy, the `polygraphy` program (installed as the
# wheel's console script), the Python bridge of the CLI's hooks and, when bundled, ONNX Runtime.
# Debian's libraries the core links (protobuf, onnx, oneDNN, fmt) stay dependencies of the system.
#
# usage: scripts/build_wheel.sh [--build-dir DIR] [OUT_DIR]
#   --build-dir DIR: package this configured and built tree (else scripts/build.sh builds build/)
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "[!] build_wheel.sh: $*" >&2; exit 1; }

build=""
if [[ ${1:-} == --build-dir ]]; then
  [[ $# -ge 2 ]] || fail "--build-dir needs a folder"
  build=$(realpath "$2")
  shift 2
fi
out=$(realpath -m "${1:-build/wheel}")
if [[ -z $build ]]; then
  scripts/build.sh
  build=$(realpath build)
fi

cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
[[ -f $build/CMakeCache.txt ]] || fail "$build is not a configured build folder (no CMakeCache.txt)"
python=$(cache_value POLYGRAPHY_PYTHON_EXECUTABLE)
python_dir=$(cache_value POLYGRAPHY_PYTHON_INSTALL_DIR)
libdir=$(cache_value CMAKE_INSTALL_LIBDIR)
version=$(cache_value CMAKE_PROJECT_VERSION)
compgen -G "$build/python/polygraphy/_core*.so" >/dev/null ||
  fail "$build has no Python bindings (they need pybind11-dev, python3-dev and python3-numpy: scripts/setup.sh installs them)"
"$python" -m build --version >/dev/null 2>&1 || fail "$python has no 'build' module (Debian's python3-build: scripts/setup.sh installs it)"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cmake --install "$build" --prefix "$stage/prefix" >"$stage/install.log" || { cat "$stage/install.log"; fail "cmake --install failed"; }

# The package, then its private prefix: the layout the module's, the program's and the bridge's
# run paths expect ($ORIGIN/_libs/<libdir>, $ORIGIN/../<libdir>, $ORIGIN/..).
package=$stage/source/polygraphy
mkdir -p "$stage/source"
cp -r "$stage/prefix/$python_dir/polygraphy" "$package"
mkdir -p "$package/_libs/bin" "$package/_libs/$libdir"
cp "$stage/prefix/bin/polygraphy" "$package/_libs/bin/"
library=$stage/prefix/$libdir/libpolygraphy.so
soname=$(objdump -p "$library" | awk '/SONAME/ {print $2}')
[[ -n $soname ]] || fail "$library has no SONAME"
cp -L "$library" "$package/_libs/$libdir/$soname"  # a wheel holds no symbolic links
[[ -d $stage/prefix/$libdir/polygraphy ]] && cp -rL "$stage/prefix/$libdir/polygraphy" "$package/_libs/$libdir/"
find "$package" -name __pycache__ -prune -exec rm -rf {} +

cat >"$stage/source/pyproject.toml" <<EOF
[build-system]
requires = ["setuptools>=61", "wheel"]
build-backend = "setuptools.build_meta"

[project]
name = "polygraphy"
version = "$version"
description = "Polygraphy's API over the C++ polygraphy library: run ONNX models on several backends and compare them"
requires-python = ">=3.9"
dependencies = ["numpy"]

[project.scripts]
polygraphy = "polygraphy._cli:main"

[tool.setuptools.packages.find]
include = ["polygraphy*"]
exclude = ["polygraphy._libs*"]

[tool.setuptools.package-data]
polygraphy = ["_core*.so", "_libs/**/*"]
EOF
# A binary distribution: the wheel is tagged for this Python's ABI and platform, not "any".
cat >"$stage/source/setup.py" <<'EOF'
from setuptools import setup
from setuptools.dist import Distribution


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


setup(distclass=BinaryDistribution)
EOF

mkdir -p "$out"
(cd "$stage/source" && "$python" -m build --wheel --no-isolation --outdir "$out" >"$stage/build.log" 2>&1) ||
  { tail -n 30 "$stage/build.log"; fail "python3 -m build failed"; }
wheel=$(ls -t "$out"/polygraphy-"$version"-*.whl | head -n 1)
echo "$wheel"
