"""Benchmark Samsa side by side with the reference broker tansu (`python -m bench --help`)."""
