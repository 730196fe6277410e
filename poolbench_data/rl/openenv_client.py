"""The typed OpenEnv client of the PoolBench server (rl.server): openenv's EnvClient over the WebSocket /ws, one
game session a connection.

    from poolbench_data.rl.openenv_client import PoolEnvClient
    from poolbench_data.rl.server import PoolAction

    with PoolEnvClient(base_url="http://127.0.0.1:8000").sync() as env:
        first = env.reset(game="runout", episode=0, seed=0)
        result = env.step(PoolAction(answer='{"target_ball": "1", ...}'))
        print(result.reward, result.done, env.state().rewards)

A refused request (a bad reset argument, a step after the episode ended) raises RuntimeError with the server's
reason; the session goes on.
"""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from poolbench_data.rl.server import PoolAction, PoolObservation, PoolState


class PoolEnvClient(EnvClient[PoolAction, PoolObservation, PoolState]):
    def _step_payload(self, action: PoolAction) -> dict[str, Any]:
        return action.model_dump()

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[PoolObservation]:
        obs = PoolObservation.model_validate({**payload.get("observation", {}), "reward": payload.get("reward"),
                                              "done": payload.get("done", False)})
        return StepResult(observation=obs, reward=payload.get("reward"), done=payload.get("done", False),
                          metadata=payload.get("metadata"))

    def _parse_state(self, payload: dict[str, Any]) -> PoolState:
        return PoolState.model_validate(payload)
