#!/usr/bin/env bash
# Creates (or refreshes) a Python environment with pinned packages from PyPI:
#   scripts/python-venv.sh [VENV REQUIREMENTS]
# by default the test environment target/python-venv with python/requirements-test.txt
# (scripts/bench-venv.sh makes the benchmark one). Idempotent: reinstalls only when the requirements
# changed. Needs python3 >= 3.11 with the venv module (Debian: python3-venv); prints the venv's
# python on stdout, everything else on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-target/python-venv}
req=${2:-python/requirements-test.txt}
name=$(basename "$venv")
py=${PYTHON:-python3}
if ! command -v "$py" >/dev/null; then
    echo "$name: $py not found; install Python >= 3.11 (Debian: apt-get install python3 python3-venv)" >&2
    exit 1
fi
if ! "$py" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "$name: $py lacks the venv/ensurepip modules or is older than 3.11 (Debian: apt-get install python3-venv)" >&2
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
