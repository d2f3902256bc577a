"""Samsa for your tests: the pytest plugin (``plugin.py``: the fixtures ``samsa_broker``,
``samsa_broker_session``, ``samsa_topic``, ``samsa_cluster``), a broker inside the test process
(``inprocess.py``), a broker as a child process (``broker_process.py``), a local cluster with etcd
(``local_cluster.py``) and free ports for them.

``broker.testing`` is the plugin's public name (the ``samsa`` pytest11 entry point), so this
package re-exports it. Sits on top: may import every other package; nothing imports it.
"""
from broker.testing.plugin import *  # noqa: F401,F403
