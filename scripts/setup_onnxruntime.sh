#!/usr/bin/env bash
# Installs what `polygraphy run --onnxrt` needs into <repo>/.deps/onnxruntime (git-ignored):
#   lib/libonnxruntime.so.1       ONNX-Runtime 1.30.0 (CPU), from the npm package onnxruntime-node (its
#                                 tarball from the npm registry, integrity-checked)
#                                 (built for glibc 2.28, so it runs on Debian 12)
#   include/onnxruntime_c_api.h   the C API header, from Debian trixie's libonnxruntime-dev (1.21);
#                                 only the header is taken: trixie's library needs a newer glibc
#   LICENSE                       ONNX Runtime's licence (MIT) and its third-party notices: Debian's
#                                 copyright file from the same .deb (the npm package ships none); it is
#                                 installed beside the library (cmake --install, the .deb)
# The library is loaded with dlopen at run time; the header is used at build time (re-run cmake after
# installing it). Idempotent: work already done is skipped. Needs curl, apt-get and dpkg-deb.
# Usage: scripts/setup_onnxruntime.sh [--force]
set -euo pipefail

readonly ORT_VERSION="1.30.0"
# dist.integrity of onnxruntime-node@1.30.0 in the npm registry (`npm view onnxruntime-node@1.30.0 dist.integrity`).
readonly ORT_INTEGRITY="sha512-twhs1C2C/BFkz1yc5OY0KIU2GUq6DURO7hD4bx5Q2Qy3nAMJwRXW8xU3NVczE29VA9lolLOYepoD8fjTGOfIqw=="
readonly HEADER_PACKAGE="libonnxruntime-dev"
readonly HEADER_SUITE="trixie"

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${repo}/.deps/onnxruntime"
lib="${dest}/lib/libonnxruntime.so.1"
lib_stamp="${dest}/lib/.version"
header="${dest}/include/onnxruntime_c_api.h"
header_stamp="${dest}/include/.source"
licence="${dest}/LICENSE"

force=0
if [[ "${1:-}" == "--force" ]]; then force=1; elif [[ $# -gt 0 ]]; then
  echo "usage: $0 [--force]" >&2
  exit 2
fi

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

fail() {
  echo "setup_onnxruntime: error: $*" >&2
  exit 1
}

# Last non-empty line of a log, for one-line error messages.
last_line() { grep -v '^[[:space:]]*$' "$1" | tail -n 1 | tr -d '\r' || true; }

install_library() {
  if [[ ${force} -eq 0 && -f "${lib}" && "$(cat "${lib_stamp}" 2>/dev/null)" == "${ORT_VERSION}" ]]; then
    echo "setup_onnxruntime: ${lib} (ONNX-Runtime ${ORT_VERSION}) already installed"
    return
  fi
  local arch
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) fail "no ONNX-Runtime ${ORT_VERSION} build for architecture $(uname -m) in onnxruntime-node" ;;
  esac
  # The package's tarball from the npm registry, checked against the registry's sha512 integrity: the
  # same file `npm pack` fetches, without installing Node.js and npm (about 300 Debian packages).
  command -v curl >/dev/null || fail "curl is not installed (apt-get install curl), needed to fetch onnxruntime-node@${ORT_VERSION}"
  local url="https://registry.npmjs.org/onnxruntime-node/-/onnxruntime-node-${ORT_VERSION}.tgz"
  if ! curl -fsSL --retry 3 -o "${work}/onnxruntime-node-${ORT_VERSION}.tgz" "${url}" 2>"${work}/curl.log"; then
    fail "downloading ${url} failed: $(last_line "${work}/curl.log")"
  fi
  local expected actual
  expected="$(printf '%s' "${ORT_INTEGRITY#sha512-}" | base64 -d | od -An -v -tx1 | tr -d ' \n')"
  actual="$(sha512sum "${work}/onnxruntime-node-${ORT_VERSION}.tgz" | cut -d' ' -f1)"
  [[ "${actual}" == "${expected}" ]] ||
    fail "onnxruntime-node-${ORT_VERSION}.tgz does not match the npm registry's sha512 integrity (corrupt or tampered download)"
  local tarball member="package/bin/napi-v6/linux/${arch}/libonnxruntime.so.1"
  tarball="${work}/onnxruntime-node-${ORT_VERSION}.tgz"
  tar -xzf "${tarball}" -C "${work}" "${member}" 2>"${work}/tar.log" ||
    fail "${member} not found in onnxruntime-node-${ORT_VERSION}.tgz: $(last_line "${work}/tar.log")"
  mkdir -p "${dest}/lib"
  # Copy then rename, so an interrupted run never leaves a truncated library behind.
  install -m 0755 "${work}/${member}" "${lib}.tmp"
  mv -f "${lib}.tmp" "${lib}"
  echo "${ORT_VERSION}" >"${lib_stamp}"
  echo "setup_onnxruntime: installed ${lib} (ONNX-Runtime ${ORT_VERSION})"
}

# The Debian mirror this system already uses (so proxies and mirrors keep working); deb.debian.org otherwise.
debian_mirror() {
  local mirror
  mirror="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    grep -v '^[[:space:]]*#' | grep -oE '(https?|mirror\+https?)://[^[:space:]]+/debian/?([[:space:]]|$)' |
    head -n 1 | tr -d '[:space:]' || true)"
  echo "${mirror:-http://deb.debian.org/debian}"
}

install_header() {
  if [[ ${force} -eq 0 && -f "${header}" && -f "${header_stamp}" && -f "${licence}" ]]; then
    echo "setup_onnxruntime: ${header} ($(cat "${header_stamp}")) already installed"
    return
  fi
  command -v apt-get >/dev/null || fail "apt-get is not available, needed to fetch ${HEADER_PACKAGE} from Debian ${HEADER_SUITE}"
  local mirror
  mirror="$(debian_mirror)"
  # A private apt configuration: the system's sources, lists and caches are left untouched.
  mkdir -p "${work}/apt/lists/partial" "${work}/apt/cache/archives/partial" "${work}/deb"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${mirror} ${HEADER_SUITE} main" \
    >"${work}/apt/sources.list"
  local apt_opts=(
    -q -o "Dir::Etc::sourcelist=${work}/apt/sources.list" -o "Dir::Etc::sourceparts=-"
    -o "Dir::State::Lists=${work}/apt/lists" -o "Dir::Cache=${work}/apt/cache"
    -o "APT::Architecture=amd64" -o "APT::Architectures=amd64" -o "Acquire::Languages=none"
    -o "APT::Sandbox::User=$(id -un)"
  )
  apt-get "${apt_opts[@]}" update >"${work}/apt.log" 2>&1 ||
    fail "apt-get update for Debian ${HEADER_SUITE} from ${mirror} failed: $(last_line "${work}/apt.log")"
  (cd "${work}/deb" && apt-get "${apt_opts[@]}" download "${HEADER_PACKAGE}") >"${work}/apt.log" 2>&1 ||
    fail "apt-get download ${HEADER_PACKAGE} (Debian ${HEADER_SUITE}) failed: $(last_line "${work}/apt.log")"
  local deb
  deb="$(ls "${work}"/deb/*.deb 2>/dev/null | head -n 1)"
  [[ -n "${deb}" ]] || fail "apt-get download ${HEADER_PACKAGE} produced no .deb"
  dpkg-deb -x "${deb}" "${work}/x" || fail "could not unpack ${deb##*/}"
  local source_header="${work}/x/usr/include/onnxruntime/onnxruntime_c_api.h"
  [[ -f "${source_header}" ]] || fail "${deb##*/} has no usr/include/onnxruntime/onnxruntime_c_api.h"
  # The C API header includes only standard C headers (and specstrings.h on Windows): copy it alone.
  if grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "${source_header}" >/dev/null; then
    fail "onnxruntime_c_api.h in ${deb##*/} includes project headers this script does not copy"
  fi
  local source_licence="${work}/x/usr/share/doc/${HEADER_PACKAGE}/copyright"
  [[ -f "${source_licence}" ]] || fail "${deb##*/} has no usr/share/doc/${HEADER_PACKAGE}/copyright (ONNX Runtime's licence)"
  install -m 0644 "${source_licence}" "${licence}.tmp"
  mv -f "${licence}.tmp" "${licence}"
  mkdir -p "${dest}/include"
  # An unchanged header keeps its timestamp, so a forced re-run does not trigger a rebuild.
  if ! cmp -s "${source_header}" "${header}"; then
    install -m 0644 "${source_header}" "${header}.tmp"
    mv -f "${header}.tmp" "${header}"
  fi
  basename "${deb}" .deb >"${header_stamp}"
  echo "setup_onnxruntime: installed ${header} (from $(cat "${header_stamp}"))"
}

install_library
install_header
