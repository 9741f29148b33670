#!/usr/bin/env bash
# usage: fetch_trixie_deb.sh PACKAGE DEST_DIR
# Downloads PACKAGE's .deb from Debian trixie through a private apt configuration (the system's
# sources are never touched) and unpacks it with dpkg -x into DEST_DIR. Idempotent: does nothing
# when DEST_DIR/.fetched-PACKAGE exists.
set -euo pipefail
package=$1
dest=$(realpath -m "$2")
stamp="$dest/.fetched-$package"
[ -f "$stamp" ] && exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/archives/partial" "$dest"
cat > "$work/sources.list" <<SOURCES
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main
SOURCES
apt_options=(
  -o Dir::Etc::sourcelist="$work/sources.list" -o Dir::Etc::sourceparts=-
  -o Dir::State::Lists="$work/lists" -o Dir::Cache::archives="$work/archives"
  -o APT::Architecture=amd64 -o Debug::NoLocking=1
)
if ! apt-get "${apt_options[@]}" update -qq >"$work/update.log" 2>&1; then
  echo "[!] Could not read Debian trixie's package lists (see apt output below)"; cat "$work/update.log"; exit 1
fi
if ! (cd "$work" && apt-get "${apt_options[@]}" download "$package" >"$work/download.log" 2>&1); then
  echo "[!] Could not download $package from Debian trixie"; cat "$work/download.log"; exit 1
fi
dpkg -x "$work"/"${package}"_*.deb "$dest"
touch "$stamp"
