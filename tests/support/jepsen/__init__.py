"""Jepsen-style testing of a 3-broker cluster (issue 20): workloads of real clients that record
what they were told in a history (workloads.py, history.py), a nemesis that draws faults from a
seed (nemesis.py), and a checker that judges the history against the logs the brokers left on
disk once healed (checker.py). Helpers only; the tests are tests/cluster/test_jepsen.py."""
