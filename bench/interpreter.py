"""The interpreter that runs the benchmarked broker: ``python -m bench.interpreter``.

Samsa's request path is pure Python, so its CPU per request is set by how CPython was built.
The official image runs on ``python:3.11-slim``, built with profile-guided optimization and
link-time optimization; Debian's ``python3`` is built the same way and links libpython into the
executable. pyenv's default build (this project's ``.venv`` on the development machines) has
neither and calls the interpreter through a position-independent ``libpython.so``: the same
broker code spent ~1.5× the CPU per offset commit on it (bench/results.md, "On an optimized
interpreter"). A benchmark meant to say how fast Samsa is should run it on an interpreter like
the one it ships with, and say which one it used.

``python -m bench.interpreter --make`` builds ``.venv-pgo`` beside ``.venv`` from such an
interpreter (``--python``, default the first Debian/system ``python3.X`` of ``.venv``'s minor
version) with the project installed editable, so the checkout's code is what runs;
``bench.brokers.default_samsa_python`` picks it when it exists. Without ``--make`` this prints
the speed of a fixed pure-Python loop on each candidate interpreter (no build flags are
trusted: Debian's PGO build does not say so in ``sysconfig``).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PGO_VENV = REPO_ROOT / ".venv-pgo"

# A fixed loop of the operations a request handler does most (dict and attribute access, calls,
# small tuples and strings): its time compares interpreters, not machines.
_LOOP = """
import json, sys, time
class C:
    __slots__ = ("a", "b")
    def __init__(self, a, b): self.a = a; self.b = b
def f(n):
    d = {}
    for i in range(n):
        c = C(i, str(i))
        d[i & 127] = (c.a, c.b, d.get(i & 127))
    return d
f(10000)
best = min((lambda t: (f(200000), time.process_time() - t)[1])(time.process_time()) for _ in range(3))
print(json.dumps({"version": sys.version.split()[0], "loop_ms": round(best * 1000, 1)}))
"""


def describe(python: str) -> dict[str, object]:
    """Version and the fixed loop's CPU time (ms)."""
    out = subprocess.run([python, "-c", _LOOP], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


def summary(python: str) -> str:
    """One line for a benchmark's environment block."""
    try:
        d = describe(python)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return f"interpreter {python}: not described ({exc})"
    return f"interpreter {python}: CPython {d['version']}, a fixed pure-Python loop {d['loop_ms']} ms CPU"


def candidates(minor: str) -> list[str]:
    """System interpreters of version ``minor`` (e.g. "3.11"), Debian's first."""
    found: dict[Path, str] = {}
    for p in (f"/usr/bin/python{minor}", f"/usr/local/bin/python{minor}", "/usr/bin/python3"):
        if Path(p).exists():
            found.setdefault(Path(p).resolve(), p)
    return list(found.values())


def make(python: str) -> Path:
    """``.venv-pgo`` from ``python`` with this checkout installed editable (its runtime
    dependencies from pyproject.toml; no test extras: the broker is all that runs there)."""
    subprocess.run([python, "-m", "venv", "--clear", str(PGO_VENV)], check=True)
    subprocess.run([str(PGO_VENV / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    "-e", str(REPO_ROOT)], check=True)
    return PGO_VENV / "bin" / "python"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.interpreter", description=__doc__.splitlines()[0])
    ap.add_argument("--make", action="store_true", help="build .venv-pgo from --python")
    ap.add_argument("--python", default=None, help="the interpreter for .venv-pgo (default: the system python3.X)")
    args = ap.parse_args(argv)
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    if args.make:
        python = args.python or next(iter(candidates(minor)), None)
        if python is None:
            print(f"no system python{minor} found; pass --python", file=sys.stderr)
            return 2
        made = make(python)
        print(f"made {made}\n{summary(str(made))}")
        return 0
    venv = REPO_ROOT / ".venv" / "bin" / "python"
    for python in [str(venv)] * venv.exists() + candidates(minor) + [str(PGO_VENV / "bin" / "python")] * PGO_VENV.exists():
        print(summary(python))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
