"""Docs tier: what the README and the manual (docs/, a MkDocs site) show is run as they show it —
the README's and the testing page's pytest examples as a user's own suite, the first-client
example against a broker — and the site builds with ``mkdocs build --strict``, its API/version
table matching protocol/api_versions.py. Needs mkdocs and mkdocs-material (the ``test`` extra) and
the client libraries the examples use. About a minute on two cores; ``-m docs``."""
