"""Reliability harness: the full stack on one machine, a load of simulated annotators, faults, and the
invariants of the collection checked in SQL afterwards (README.md in this directory)."""
