"""Evaluations of tether against public benchmarks (optional extras, imported lazily)."""
