"""Declared features of every config: what `load_dataset` applies on load."""

from __future__ import annotations

import functools


@functools.cache
def features(config: str):
    from datasets import Features, List, Value

    f64, i64, s, b = Value("float64"), Value("int64"), Value("string"), Value("bool")
    message = {"role": s, "content": s}
    shot = {"phi": f64, "V0": f64, "a": f64, "b": f64, "theta": f64, "target_ball": s, "target_pocket": s}
    outcome = {"legal_contact": b, "own_potted": b, "foul": b, "opp_or_8_potted": b, "clean_pot": b,
               "foul_reasons": List(s)}
    table = {"width": f64, "length": f64, "ball_radius": f64,
             "pockets": List({"id": s, "x": f64, "y": f64, "radius": f64})}
    if config == "scenarios":
        return Features({
            "id": s, "category": s, "seed": i64, "base_seed": i64, "index": i64,
            "cue_ball": {"x": f64, "y": f64},
            "balls": List({"id": s, "group": s, "x": f64, "y": f64}),
            "table": table,
            "prompt": List(message), "prompt_version": s,
            "oracle_shot": shot, "oracle_action": s, "oracle_pots": b, "oracle_how": s, "oracle_sims": i64,
            "straight_pottable": b, "pottable_how": s, "pottability": s,
        })
    if config == "traces":
        return Features({
            "scenario_id": s, "category": s, "player": s, "player_kind": s, "sample": i64,
            "model": s, "prompt_version": s, "temperature": f64, "seed": i64,
            "raw_response": s, "parse_status": s, "parse_message": s,
            "action": shot, "decision_how": s, "decision_sims": i64,
            "sim_status": s, "sim_message": s,
            "events": List({"time": f64, "type": s, "ids": List(s)}),
            "event_text": s,
            "first_contact": s,
            "cushion_contacts": List({"ball": s, "cushion": s}),
            "pocketed": List({"ball": s, "pocket": s}),
            "final_positions": List({"id": s, "x": f64, "y": f64}),
            **outcome,
            "oracle_target_ball": s, "oracle_target_pocket": s,
            "target_matches_oracle": b, "pocket_matches_oracle": b, "angle_error_deg": f64,
        })
    if config in ("pairs", "pairs_tools"):
        side = {"score": f64, "parse_status": s, **{k: v for k, v in outcome.items() if k != "foul_reasons"}}
        # pairs_tools: the pair is the model turn `turn` (0-based) where the two threads' choices part.
        # chosen_robust, rejected_robust: pairs.noise.robust_score of each side where the pair was ranked by it.
        at = {"turn": i64, "chosen_decision": s, "rejected_decision": s, "chosen_robust": f64,
              "rejected_robust": f64} if config == "pairs_tools" else {}
        return Features({
            "prompt": List(message), "chosen": List(message), "rejected": List(message),
            "scenario_id": s, "category": s, "source": s, "chosen_model": s, "rejected_model": s,
            "chosen_outcome": side, "rejected_outcome": side,
            "chosen_score": f64, "rejected_score": f64, "margin": f64, "prompt_version": s, **at,
        })
    if config == "sft":
        return Features({
            "prompt": List(message), "completion": List(message),
            "scenario_id": s, "category": s, "split": s, "demonstration": s, "player": s,
            **{k: v for k, v in outcome.items() if k != "foul_reasons"}, "prompt_version": s,
        })
    if config == "sft_tools":
        return Features({
            # `context`: a model turn shown but not trained (a mistaken call kept to show the recovery).
            "messages": List({"role": s, "content": s, "context": b}),
            "scenario_id": s, "category": s, "split": s, "demonstration": s, "calls": i64,
            "target_ball": s, "pocket": s, "cue_speed": f64,
            **{k: v for k, v in outcome.items() if k != "foul_reasons"}, "player": s, "prompt_version": s,
        })
    if config in ("sft_runout", "pairs_position", "sft_runout_tools", "pairs_position_tools"):
        return _runout(config, s, f64, i64, b, message, shot)
    if config == "episodes":
        return _episodes(s, f64, i64, b, message, shot)
    raise KeyError(config)


def _runout(config, s, f64, i64, b, message, shot):
    """A turn of a run-out visit from a train board (demos.runout, pairs.position): the board, the episode's seed,
    the turn (1-based) and the table it is played from (`balls`), then the demonstration or the pair."""
    from datasets import Features, List

    turn = {"scenario_id": s, "category": s, "split": s, "seed": i64, "turn": i64,
            "balls": List({"id": s, "x": f64, "y": f64}), "prompt_version": s}
    tool = {"tool_version": s} if config.endswith("_tools") else {}  # llm.tools.tool_version: with lines or not
    demo = {"player": s, "how": s, "action": shot, "potted": List(s), "won": b}
    if config == "sft_runout":
        return Features({"prompt": List(message), "completion": List(message), **turn, **demo})
    if config == "sft_runout_tools":
        return Features({"messages": List({"role": s, "content": s, "context": b}), **turn, **demo, **tool})
    side = {"continuation": i64, "potted": List(s), "action": shot, "cue": {"x": f64, "y": f64}}
    return Features({"prompt": List(message), "chosen": List(message), "rejected": List(message), **turn,
                     "continuation_player": s, "options": i64,
                     **{f"{name}_{k}": v for name in ("chosen", "rejected") for k, v in side.items()}, **tool})


def _episodes(s, f64, i64, b, message, shot):
    """games.records.Episode.to_row() less the simulation counts (hub.episodes), each turn with its prompt and
    answer (empty for a baseline), and the episode's identity and balls."""
    from datasets import Features, List

    balls = List({"id": s, "x": f64, "y": f64})
    state = {"game": s, "start": s, "start_seed": i64, "seed": i64, "category": s, "group": s, "max_attempts": i64,
             "balls": balls, "attempts": i64, "potted": List(s), "done": b, "success": b, "end": s}
    action = {"kind": s, **shot, "name": s}  # a nine-ball Strike (V0, a, b, name) or a run-out Shot
    turn = {"attempt": i64, "prompt": List(message), "answer": s, "action": action, "shot": shot, "status": s,
            "event_text": s, "events": List({"time": f64, "type": s, "ids": List(s)}), "first_contact": s,
            "potted": List(s), "scratch": b, "foul_reasons": List(s), "clean": b, "end": s, "respotted": b,
            "parse_status": s, "message": s, "after": state}
    return Features({
        "id": s, "game": s, "base_seed": i64, "index": i64, "player": s, "player_kind": s, "model": s,
        "sample": i64, "start": state, "hows": List(s), "turns": List(turn),
        "success": b, "attempts": i64, "end": s, "balls": i64,
    })


CONFIGS = ("scenarios", "traces", "pairs", "sft", "sft_tools", "pairs_tools", "episodes", "sft_runout",
           "pairs_position", "sft_runout_tools", "pairs_position_tools")
