"""static tier: ruff, mypy and the import-linter contracts, run as the tools themselves from the
repository root with the configuration in pyproject.toml (no broker, no network; seconds warm)."""
