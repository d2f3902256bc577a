"""Cluster tier: etcd plus several Samsa broker processes (the ``samsa_cluster`` fixture,
broker/testing/local_cluster.py): metadata through etcd, the controller, replication, failover,
etcd outages, log dirs, the console over a cluster, Spark on a cluster. Needs etcd (the 'etcd'
extra's wheel or Debian's etcd-server; ``./scripts/test.sh`` installs one when it can); without it
every test here skips with the reason. Several minutes on two cores; ``-m cluster`` or
``-m "not cluster"``."""
