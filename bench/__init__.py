"""Benchmarks: how fast the suite runs, and how fast the implementations are against the
alternatives a user would pick (torch's packed `nn.LSTM`, scikit-learn's LogisticRegression).

Run with `nox -s bench` or `python -m bench`; see docs/development.md, "Benchmarks". Machines are shared and
noisy, so every comparison is a ratio of medians measured side by side, interleaved, in one run.
"""
