#!/usr/bin/env bash
# Installs Samsa into ./.venv (first run only) and starts a single-node broker on
# localhost:9092 with its data under ./data. Extra arguments go to `samsa serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/samsa ] || { "$PY" -m venv .venv && .venv/bin/python -m pip install -q --disable-pip-version-check -e .; }
# byte-compile as a regular install would (quiet, and a no-op when nothing changed)
.venv/bin/python -m compileall -q broker protocol coordinator >/dev/null || true
exec .venv/bin/samsa serve "$@"
