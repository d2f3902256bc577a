"""KIP-932 share groups: membership (``group.py``) and the state of one share partition
(``partition.py``: which records are available, acquired, acknowledged or archived). Pure. May
import ``protocol/`` and ``coordinator.group`` (the assignors).
"""
