#!/usr/bin/env bash
# Creates (or refreshes) the Python test environment target/python-venv with the pinned packages of
# python/requirements-test.txt from PyPI. Idempotent: reinstalls only when the requirements changed.
# Needs python3 with the venv module (Debian: python3-venv); prints the venv's python on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/python-venv
req=python/requirements-test.txt
py=${PYTHON:-python3}
if ! command -v "$py" >/dev/null; then
    echo "python-venv: $py not found; install Python >= 3.11 (Debian: apt-get install python3 python3-venv)" >&2
    exit 1
fi
if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv" >&2
fi
stamp="$venv/.requirements"
if ! cmp -s "$req" "$stamp"; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
    cp "$req" "$stamp"
fi
echo "$venv/bin/python"
