#!/usr/bin/env bash
# Installs everything polygraphy needs on Debian 12, idempotently: Debian packages first, then
# ONNX Runtime (library from the npm registry, C API header from Debian trixie's .deb) under .deps/.
#   scripts/setup.sh                what the whole test suite needs (the README's second command)
#   scripts/setup.sh --quickstart   only what the first command builds and runs
set -euo pipefail
cd "$(dirname "$0")/.."

# The first Quick start command (`--quickstart`) installs only what building the library, the CLI and the
# example models needs; the second (no option) installs the rest: what the tests, the fuzzers, the
# bindings and the documentation need.
quickstart=0
if [[ "${1:-}" == --quickstart ]]; then quickstart=1; fi

build_packages=(
  build-essential cmake ninja-build pkg-config
  libprotobuf-dev protobuf-compiler libonnx-dev
  libdnnl-dev ocl-icd-opencl-dev  # oneDNN's CMake config calls find_package(OpenCL); libdnnl-dev only recommends it
  libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev  # configuring needs them (the example-model helpers include GoogleTest)
  ca-certificates curl  # curl fetches onnxruntime-node's tarball from the npm registry (scripts/setup_onnxruntime.sh)
  zlib1g-dev  # PNG images in the comparator's SVG figures
  libjpeg62-turbo-dev libpng-dev libtiff-dev libwebp-dev libopenjp2-7-dev  # the built-in runtime's ImageDecoder (JPEG, PNG, TIFF, WebP, JPEG 2000)
)
test_packages=(
  doxygen
  file  # CPack's Debian generator runs dpkg-shlibdeps on the files `file` says are ELF (scripts/build_deb.sh)
  libonnx-testdata
  clang libclang-rt-14-dev libomp-14-dev  # the fuzz smoke run (libFuzzer + sanitizers) in CI
  clang-format  # the test command checks that changed lines follow .clang-format (scripts/format_check.sh)
  chromium    # the test that opens the HTML report in a real (headless) browser
  pybind11-dev python3-dev python3-numpy  # the Python bindings (python/) for /usr/bin/python3, their tests, and the tests that numpy.load our .npz files
  python3-torch  # polygraphy.backend.pyt.PytRunner's tests and bench/python_binding_bench.py (PyTorch, CPU)
  python3-build python3-wheel python3-setuptools python3-venv python3-pip  # scripts/build_wheel.sh and its test, which pip-installs the wheel into a venv
  slurmctld slurmd slurm-client munge  # the test that runs sharded comparisons on a one-node Slurm cluster (tests/cluster/)
)
packages=("${build_packages[@]}")
if ((!quickstart)); then packages+=("${test_packages[@]}"); fi

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done

if ((${#missing[@]})); then
  echo "[I] Installing Debian packages: ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ONNX 1.17's backend-test data (architecture all) from Debian trixie, unpacked privately.
if ((!quickstart)); then scripts/fetch_trixie_deb.sh libonnx-testdata .deps/onnx-testdata-1.17; fi

if [ -x scripts/setup_onnxruntime.sh ]; then
  scripts/setup_onnxruntime.sh
fi
