"""Our foul flag against pooltool's own eight-ball rules on fixture shots.

Expected difference: pooltool also calls a foul when no ball reaches a
cushion after first contact and nothing is potted (the 'rail' rule); the
paper's metric does not. Everything else must agree.
"""

from poolbench_data.core.physics import build_system, engine
from poolbench_data.core.records import SOLIDS, Shot
from poolbench_data.core.scoring import score
from poolbench_data.core.physics import result_from_system


def _pooltool_legal(system, scenario):
    from pooltool.ruleset.datatypes import BallInHandOptions, ShotConstraints
    from pooltool.ruleset.eight_ball import is_legal

    hittable = tuple(b.id for b in scenario.balls if b.id in SOLIDS)
    c = ShotConstraints(ball_in_hand=BallInHandOptions.NONE, movable=[], cueable=["cue"],
                        hittable=hittable, call_shot=False)
    return is_legal(system, c, break_shot=False)


def _rail_rule_applies(result) -> bool:
    """pooltool's rail rule, read off our own trace: the first contact is legal,
    nothing is potted and no ball touches a cushion after that contact."""
    if not score(result).legal_contact or result.pocketed:
        return False
    t = next(e.time for e in result.events if e.type == "ball_ball" and "cue" in e.ids)
    return not any(e.type in ("ball_linear_cushion", "ball_circular_cushion") and e.time > t for e in result.events)


def test_foul_agrees_with_pooltool_except_the_rail_rule(benchmark_scenarios, board):
    import pooltool as pt

    from poolbench_data.players import BASELINES

    shots = [(s, BASELINES[name][1](s).shot.validated())
             for s in benchmark_scenarios[:21] for name in ("heuristic-centre", "random")]
    # The rail rule's own case: a soft, straight, legal hit on ball 1 after which
    # no ball reaches a cushion. 0.3 m/s is below the benchmark's V0 range (at
    # 2 m/s or more some ball always reaches a cushion), so it is built here.
    soft = board({"cue": (0.5, 0.8), "1": (0.5, 1.0), "9": (0.9, 0.3), "8": (0.2, 1.9)}, id="soft")
    shots.append((soft, Shot(90.0, 0.3)))

    agree = rail_only = rail_rule = 0
    disagreements = []
    for s, shot in shots:
        system = build_system(s, shot)
        pt.simulate(system, engine=engine(), inplace=True, max_events=1000)
        r = result_from_system(system, "ok")
        m = score(r)
        rail_rule += _rail_rule_applies(r)
        legal, reason = _pooltool_legal(system, s)
        if legal == (not m.foul):
            agree += 1
        else:
            # The only allowed disagreement: our legal shot, pooltool's rail foul.
            assert not m.foul and reason == "Cushion not contacted after first contact", (s.id, reason, m)
            rail_only += 1
            disagreements.append(s.id)
    # rail_only is the documented difference and nothing else: exactly the shots
    # where the rail rule applies, which our metric (the paper's) scores legal.
    assert rail_only == rail_rule
    assert "soft" in disagreements
    assert agree >= 30
