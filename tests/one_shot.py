"""One shot simulated, its result printed (status, event count, balls potted, final positions). scripts/test.sh
runs it to compile pooltool's numba functions before the tests; test_packaging runs it in the wheel's venv, cold
and then from the cache."""

from poolbench_data.boards.generate import generate
from poolbench_data.core.physics import simulate
from poolbench_data.core.records import Shot

r = simulate(generate(1, base_seed=1)[0], Shot(phi=30.0, V0=3.0))
print(r.status, len(r.events), r.pocketed, r.final_positions)
