#!/usr/bin/env bash
# Installs Samsa into ./.venv (first run only) and starts a single-node broker on
# localhost:9092 with its data under ./data. Extra arguments go to `samsa serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/samsa ] || { "$PY" -m venv .venv && .venv/bin/python -m pip install -q --disable-pip-version-check -e .; }
exec .venv/bin/samsa serve "$@"
