"""Reports: Table 1 with Wilson intervals, per-category cells, before/after
McNemar, the decomposition, rendering, provenance."""
