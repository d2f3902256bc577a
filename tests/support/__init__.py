"""Helpers shared by the test tiers, one module per concern (a raw protocol client, wire request
builders, the coordinator harness, the partition log double, cluster, group, security,
transaction, Java, Spark and Docker helpers). Never test modules, and test modules never import
each other: anything two test modules share lives here, fixtures shared by a folder in that
folder's conftest.py."""
