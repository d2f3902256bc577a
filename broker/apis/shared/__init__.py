"""What several API modules share (never one API's own code): topic lookup and leader-epoch
checks, coordinator request fields, topic admin rules, cluster-mode config reads and writes."""
