"""The simulator as a reward, and the games as environments a trainer plays:

- `reward`: the simulator as a reward function with TRL's reward-function signature (physics_reward);
- `env`: the single shot with the ghost_ball tool as a TRL environment (environment_factory), and its rewards;
- `boards`: the train boards whose sampled answers score differently, where GRPO can learn;
- `game_env`: a game played turn by turn through text (GameSession), what every harness below plays;
- `shot_env`: the paper's single shot as a one-answer episode with GameSession's interface (ShotSession);
- `game_trl`: games as multi-turn TRL environments, the model shooting through the `shoot` tool;
- `server`: the games (and the single shot) as an OpenEnv environment server (`poolbench serve-env`);
- `serving`: that server on a socket, the address checked before anything loads;
- `asgi_guard`: the request guard in front of the server (body size, JSON depth, Host on loopback);
- `openenv_client`: the server's typed OpenEnv client;
- `openenv_trl`: GRPO against a running server, through TRL's OpenEnv integration.
"""
