"""`poolbench play --game ... --web`: what the page plays in a game. web.py serves it through the same endpoints,
so every check of the single-shot page (the Host, the token, the Origin, the JSON body and its size, the framing
headers) holds for a game's requests unchanged.

  GET  /api/state   the turn to play: its id, the table (the game's own: nine-ball's is pooltool's default table,
                    and the page draws whatever size it is sent), what a model reads this turn (llm.observation:
                    the previous shot's outcome and events, the attempt, the table as text), the previous shot's
                    outcome apart, attempts so far and the cap; the rules are the model's system prompt
  POST /api/answer  {"scenario_id": the turn's id, "text": the game's action or "skip"}: played through the
                    game's step and recorded (human/games.py); an answer to another turn (a second tab, a page
                    left open, a turn of an episode that has ended) is 409 and one that is not the game's action
                    400, both recorded nowhere
"""

from __future__ import annotations

from poolbench_data.human.web import Game


def turn_id(k: int, state) -> str:
    return f"episode-{k + 1}-attempt-{state.attempts + 1}"


class GameTable(Game):
    """A game's turns for the page; the lock, the stage and the report as for one shot a board."""

    def __init__(self, session):
        from poolbench_data.human.games import table_geometry
        from poolbench_data.human.web import table_json
        from poolbench_data.llm.observation import default_action, game_system_prompt
        from poolbench_data.protocol.strikespot import SPEEDS, STRIKESPOTS

        super().__init__(session)
        rules = game_system_prompt(session.game, default_action(session.game))
        self.table = {**table_json(table_geometry(session.game), rules),
                      "game": session.game, "speeds": list(SPEEDS), "spots": list(STRIKESPOTS)}

    def state(self) -> dict:
        from poolbench_data.games.nineball import lowest
        from poolbench_data.games.runout import Runout
        from poolbench_data.llm.observation import EIGHT_GROUP, observation, outcome_text

        with self.lock:
            self.watched = True
            s = self.session
            out = {"stage": self.stage, "n": s.n, "unit": "episodes", "answered": len(s.finished()), "player": s.name,
                   "table": self.table, "report": self.report, "game": s.game}
            turn = s.turn() if self.stage == "playing" else None
            if turn is not None:
                k, state = turn
                nine = s.game != "runout"
                hint = (f"Every shot is aimed at ball {lowest(state)}, the lowest on the table. Pot the 9 to win."
                        if nine else EIGHT_GROUP if Runout.on_eight(state) else "")
                out["board"] = {"index": k, "id": turn_id(k, state), "category": state.category,
                                "start": state.start, "attempt": state.attempts + 1,
                                "max_attempts": state.max_attempts, "prompt": observation(state), "hint": hint,
                                "target": lowest(state) if nine else None,
                                "balls": [{"id": b.id, "x": b.x, "y": b.y, "group": b.group} for b in state.balls],
                                "last": outcome_text(state.last) if state.last else None}
            return out

    def answer(self, scenario_id, text) -> dict:
        from poolbench_data.human.answers import SKIP
        from poolbench_data.human.games import read_answer, said

        with self.lock:
            s = self.session
            turn = s.turn() if self.stage == "playing" else None
            if turn is None or turn_id(*turn) != scenario_id:
                return {"ok": False, "code": 409, "status": "stale",
                        "message": "this attempt is not the one to play now (played already, or its episode has "
                                   "ended); reload"}
            if not isinstance(text, str):
                return {"ok": False, "code": 400, "status": "no-text", "message": "send the action as a string"}
            k, state = turn
            text = text.strip()  # as the terminal reads a line
            if text.lower() == SKIP:
                text = ""
            else:
                action, status, message = read_answer(state, text)
                if action is None:
                    return {"ok": False, "code": 400, "status": status, "message": message}
            outcome = s.answer(k, text)
            after = s.table(k)
            line = said(outcome)
            print(f"episode {k + 1}/{s.n}, attempt {outcome.attempt}: {line}", flush=True)
            if not s.pending():
                self.ended.set()
            pocketed = [list(p) for p in outcome.result.pocketed] if outcome.result is not None else []
            return {"ok": True, "index": k, "id": scenario_id, "verdict": line, "events": outcome.event_text,
                    "pocketed": pocketed, "final": [[b.id, b.x, b.y] for b in after.balls],
                    **self._drawn(state, outcome), "episode_done": after.done, "last": self.ended.is_set()}

    def _drawn(self, state, outcome) -> dict:
        """A run-out's shot drawn as the single-shot page draws one (each moving ball's path); nine-ball's table is
        not the benchmark's, whose simulation the drawing replays, so the page shows where the balls stopped."""
        from poolbench_data.games.runout import EIGHT_AS, Runout
        from poolbench_data.core.records import EIGHT

        if state.game != "runout" or not outcome.fired:
            return {"paths": {}, "duration": 0.0}
        drawn = self._paths(Runout().view(state), outcome.shot)
        if Runout.on_eight(state):  # the view plays the 8 under a solid's id: drawn under its own
            drawn["paths"] = {(EIGHT if b == EIGHT_AS else b): xy for b, xy in drawn["paths"].items()}
        return drawn
