"""Cluster metadata stores: where the metadata log (coordinator/metadata/records.py) lives.

- ``local.LocalMetadataStore``: a single node's append-only record log in the log directory
  (``__samsa_metadata.log``), replayed at start-up; no other service.
- ``etcd.EtcdMetadataStore`` (cluster mode, when ``samsa.metadata.etcd.endpoints`` is set): the
  log as keys under a prefix in etcd v3, ordered by etcd's revision, watched from the last
  applied revision; broker liveness as leases, the controller as an election.

The interface both implement is ``store.MetadataStore``.

What the API handlers see of either mode is ``topology.Topology`` (the brokers, the controller,
the topics and their changes): ``single_node.SingleNodeTopology`` over the log manager, or
``cluster_topology.ClusterTopology`` over the metadata image, chosen once by the composition
root (broker/server/broker_server.py). Importing this package imports
nothing else: the single node loads only what it uses.
"""
