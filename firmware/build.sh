#!/usr/bin/env bash
# `npm run firmware`: builds firmware/build/blockkit-node.hex and prints its flash and RAM use.
# Installs Debian's AVR toolchain and Arduino core when missing, and simavr for the firmware tests
# (the same packages .ci/run installs). Flashing: docs/hardware.md.
set -euo pipefail
cd "$(dirname "$0")"

packages=(gcc-avr avr-libc arduino-core-avr simavr libsimavr-dev libsimavrparts1 libelf-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "firmware: missing ${missing[*]} and no apt-get here: install them with your package manager" >&2
    exit 1
  fi
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "firmware: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

make -s -j"$(nproc 2>/dev/null || echo 1)" build/blockkit-node.hex
echo "firmware: $(pwd)/build/blockkit-node.hex"
make -s size
