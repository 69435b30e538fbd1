#!/usr/bin/env bash
# Installs the system OpenBLAS that the `openblas` feature links against (Debian/Ubuntu).
set -euo pipefail
if [ -e /usr/lib/x86_64-linux-gnu/libopenblas.so ] || [ -e /usr/lib/aarch64-linux-gnu/libopenblas.so ]; then
  echo "libopenblas-dev already installed"; exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq libopenblas-dev
