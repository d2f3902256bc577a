"""Benchmark Samsa side by side with the reference broker tansu (`python -m bench --help`).

bench never imports tests/: what both need lives here (rawclient.py: a raw protocol client;
tls.py: a throwaway PKI and a broker with secure listeners; brokers.py: the tansu launcher), and
tests/support re-exports it."""
