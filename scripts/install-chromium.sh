#!/usr/bin/env bash
# Installs Debian's headless-capable Chromium and ChromeDriver (the report's browser check,
# `cargo xtask check-report`). Exits non-zero, with a message, when they cannot be installed.
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  echo "chromium and chromedriver already installed"; exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "no apt-get here: install Chromium and ChromeDriver by hand to run the browser check" >&2; exit 1
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# fonts-dejavu-core: the face the report's figures are measured with (the page also embeds it).
$SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-dejavu-core
