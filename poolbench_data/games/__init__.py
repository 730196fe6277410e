"""Games played shot by shot on a table that evolves: DeepPHY's nine-ball task and PoolBench run-outs.

records (Strike, Outcome, GameState, Episode) -> nineball and runout (the rule sets) -> step (the one step
function) -> players (MOCK, the Oracles, the wrapped baselines) -> play (episodes, in a process pool or on Ray).
"""
