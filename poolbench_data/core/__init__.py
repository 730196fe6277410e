"""The benchmark's vocabulary and records, the table, geometry (ghost-ball
candidates included), physics (pooltool) and scoring: what everything else builds on."""
