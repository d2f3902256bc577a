"""Jepsen-style tests (issue 20): real clients write and read a 3-broker cluster (etcd, RF=3,
min.insync.replicas=2) while a nemesis draws faults from a seed — the leader SIGKILLed and
restarted, the leader paused past the session timeout, etcd restarted and, where the cluster can
cut links, the leader cut from its peers and etcd, a follower cut, the controller cut from etcd.
After healing, the checker (tests/support/jepsen/checker.py) judges what the clients were told
against the three brokers' logs on disk: no acknowledged record lost, duplicated or out of order,
no read that disagrees with the final log, transactions all-or-nothing for read_committed,
replicas byte-identical; it reports the time to the next acknowledged write after each fault.

The seed is in the test id; ``SAMSA_JEPSEN_SEED=<n>`` replays one seed (``SAMSA_JEPSEN_SECONDS``
sets the fault window). The history, the JSON artefact and the brokers' and etcd's logs go to
``.cache/jepsen/<test>-<time>/`` (``SAMSA_JEPSEN_DIR`` elsewhere), not to tmp_path: pytest
prunes tmp_path dirs while other runs go on, and a failure must stay replayable.

The default variant is 2 seeds × 60 s of faults, the second with the Java client 4.3 as one more
idempotent producer (marked ``java``); the ``slow`` one is 3 seeds × 240 s, all with the Java
client, and runs only with ``SAMSA_JEPSEN_LONG=1`` (CI selects no markers out, so ``slow`` alone
would add a quarter of an hour to every CI run). Which faults the seed draws depends on which the cluster offers (link cuts or not): the
summary lists the faults that ran and those not available."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from broker.testing.local_cluster import LocalCluster, find_etcd
from tests.support.jepsen.runner import OVERRIDES, run

pytestmark = [pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed (the 'etcd' extra or "
                                                              "Debian's etcd-server)"),
              pytest.mark.parametrize("samsa_cluster", [{"overrides": OVERRIDES}], indirect=True, ids=["rf3"])]

REPLAY = os.environ.get("SAMSA_JEPSEN_SEED")
JAVA = "4.3.0"
CI_SEEDS = [int(REPLAY)] if REPLAY else [1]
CI_JAVA_SEEDS = [int(REPLAY)] if REPLAY else [2]
SLOW_SEEDS = [int(REPLAY)] if REPLAY else [101, 102, 103]


def _seconds(default: float) -> float:
    return float(os.environ.get("SAMSA_JEPSEN_SECONDS", default))


REPO = Path(__file__).resolve().parents[2]


def _out_dir(request: pytest.FixtureRequest) -> Path:
    base = Path(os.environ.get("SAMSA_JEPSEN_DIR") or REPO / ".cache" / "jepsen")
    name = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in request.node.name)
    return base / f"{name}-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}"


def _java_ready() -> str:
    from tests.support.javaclient import java_available, prepare

    if not java_available():
        pytest.skip("java and javac (a JDK) are not on PATH")
    prepare(JAVA)           # fetch and compile before the clock of the run starts
    return JAVA


def _run_and_check(c: LocalCluster, seed: int, seconds: float, request: pytest.FixtureRequest,
                   java: str | None = None) -> None:
    result = run(c, seed, seconds, _out_dir(request), java=java)
    print(result.summary())
    assert not result.report.problems, (
        f"seed {seed}: {len(result.report.problems)} problems; history {result.history_path}, artefact "
        f"{result.artefact_path}; replay: SAMSA_JEPSEN_SEED={seed}\n" + "\n".join(result.report.problems))


@pytest.mark.slow
@pytest.mark.parametrize("seed", CI_SEEDS, ids=lambda s: f"seed{s}")
def test_jepsen(samsa_cluster: LocalCluster, seed: int, request: pytest.FixtureRequest) -> None:
    _run_and_check(samsa_cluster, seed, _seconds(60), request)


@pytest.mark.slow
@pytest.mark.java
@pytest.mark.parametrize("seed", CI_JAVA_SEEDS, ids=lambda s: f"seed{s}")
def test_jepsen_with_java(samsa_cluster: LocalCluster, seed: int, request: pytest.FixtureRequest) -> None:
    _run_and_check(samsa_cluster, seed, _seconds(60), request, java=_java_ready())


@pytest.mark.slow
@pytest.mark.java
@pytest.mark.skipif(not os.environ.get("SAMSA_JEPSEN_LONG"), reason="the long Jepsen-style runs (3 seeds × 240 s) are "
                    "opt-in: SAMSA_JEPSEN_LONG=1 (CI runs the slow marker too)")
@pytest.mark.parametrize("seed", SLOW_SEEDS, ids=lambda s: f"seed{s}")
def test_jepsen_long(samsa_cluster: LocalCluster, seed: int, request: pytest.FixtureRequest) -> None:
    _run_and_check(samsa_cluster, seed, _seconds(240), request, java=_java_ready())
