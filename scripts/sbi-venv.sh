#!/usr/bin/env bash
# Creates (or refreshes) the sbi environment target/sbi-venv with the pinned packages of
# scripts/bench/sbi-requirements.txt (sbi, PyPI's torch run on the CPU) from PyPI; prints its python
# on stdout (scripts/python-venv.sh does the work). The list is complete and installed with
# --no-deps, which leaves out the CUDA packages torch declares but never loads (the list's header
# says which and why): 4.5 GB, about 2.5 minutes. No pip cache: it would hold another 3 GB.
set -euo pipefail
PIP_NO_DEPS=1 PIP_NO_CACHE_DIR=1 exec bash "$(dirname "$0")/python-venv.sh" target/sbi-venv \
    scripts/bench/sbi-requirements.txt
