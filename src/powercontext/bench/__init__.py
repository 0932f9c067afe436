"""Benchmarks that drive PowerContext through its public interfaces only."""
