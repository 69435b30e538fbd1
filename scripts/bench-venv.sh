#!/usr/bin/env bash
# Creates (or refreshes) the benchmark environment target/bench-venv with the pinned packages of
# scripts/bench/requirements.txt (causal-learn and its dependencies, CPU only) from PyPI; prints its
# python on stdout (scripts/python-venv.sh does the work).
set -euo pipefail
exec bash "$(dirname "$0")/python-venv.sh" target/bench-venv scripts/bench/requirements.txt
