"""The ghost_ball tool's two aims, potted: for every (ball, pocket, speed) the tool-use demonstration
search tries (demos.tools) whose tool answer is clear, the shot written with the centre aim and with the
potting-point aim, each parsed and simulated as the evaluator does. Optionally, an `eval --tools` run's own
choices (the ball and pocket of each shot's last good call, its speed) replayed with the potting-point aim.

    python analysis/tool_aims.py --dataset_dir D/poolbench --boards 200
    python analysis/tool_aims.py --dataset_dir D/poolbench --boards 200 --eval_dir R/eval_sft_tools
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class ScriptArguments:
    """The ghost_ball tool's two aims, potted."""

    dataset_dir: str = field(metadata={"help": "dataset folder with a train split (scenarios config)"})
    boards: int = field(default=200, metadata={"help": "the first N train boards"})
    eval_dir: str = field(default="", metadata={"help": "an `eval --tools` output folder to replay (optional)"})


def aim_shots(scenario_rows) -> dict[str, int]:
    from poolbench_data.core.records import Scenario, Shot
    from poolbench_data.llm.tools import tool_answer
    from poolbench_data.demos.tools import _tried, clear, played
    from poolbench_data.protocol.prompts import format_action

    counts = {"clear_shots": 0, "aim_angle_deg": 0, "potting_point_aim_angle_deg": 0}
    for row in scenario_rows:
        s, oracle = Scenario.from_row(row), Shot.from_row(row["oracle_shot"])
        for ball, pocket, speed in _tried(s, oracle):
            answer = tool_answer(s, ball, pocket)
            if not clear(answer):
                continue
            counts["clear_shots"] += 1
            for aim in ("aim_angle_deg", "potting_point_aim_angle_deg"):
                text = format_action(Shot(phi=answer[aim], V0=speed, target_ball=ball, target_pocket=pocket), s)
                counts[aim] += played(s, text)[1].clean_pot
    return counts


def replayed(eval_dir: Path) -> dict[str, int]:
    from poolbench_data.boards.generate import generate
    from poolbench_data.core.records import Shot
    from poolbench_data.llm.tools import tool_answer
    from poolbench_data.players.diagnostics import angular_error
    from poolbench_data.demos.tools import played
    from poolbench_data.protocol.parsing import parse_action
    from poolbench_data.protocol.prompts import format_action

    threads = [json.loads(x) for x in (eval_dir / "tool_calls.jsonl").read_text().splitlines() if x.strip()]
    boards = {s.id: s for s in generate(1 + max(int(t["scenario_id"].rsplit("-", 1)[1]) for t in threads))}
    counts = {"shots": 0, "clean_pot_as_played": 0, "clean_pot_potting_point": 0}
    for t in threads:
        s = boards[t["scenario_id"]]
        counts["shots"] += 1
        shot, m = parse_action(t["final_response"], s).shot, played(s, t["final_response"])[1]
        counts["clean_pot_as_played"] += m.clean_pot
        good = [c["result"] for c in t["calls"] if "error" not in c["result"]]
        if shot is not None and good and abs(angular_error(shot.phi, good[-1]["aim_angle_deg"])) < 0.006:
            last = good[-1]  # the answer copied the centre aim of its last good call: swap in the potting point
            pp = tool_answer(s, last["target_ball"], last["pocket"])["potting_point_aim_angle_deg"]
            text = format_action(Shot(phi=pp, V0=shot.V0, target_ball=last["target_ball"],
                                      target_pocket=last["pocket"]), s)
            m = played(s, text)[1]
        counts["clean_pot_potting_point"] += m.clean_pot
    return counts


def study(a: ScriptArguments) -> int:
    from poolbench_data.core.errors import UserError, check_at_least
    from poolbench_data.hub.folder import read_rows

    check_at_least("--boards", a.boards, 1)
    for flag, path in (("--dataset_dir", a.dataset_dir), ("--eval_dir", a.eval_dir)):
        if path and not Path(path).is_dir():
            raise UserError(f"{flag} {path} is not a folder")

    rows = read_rows(Path(a.dataset_dir), "scenarios", "train")[:a.boards]
    print(f"data: {a.dataset_dir} train, {len(rows)} boards")
    c = aim_shots(rows)
    print(f"{'aim':32}{'clear shots':>12}{'legal pots':>12}{'%':>8}")
    for aim in ("aim_angle_deg", "potting_point_aim_angle_deg"):
        print(f"{aim:32}{c['clear_shots']:>12}{c[aim]:>12}{100 * c[aim] / max(1, c['clear_shots']):>8.1f}")
    if a.eval_dir:
        r = replayed(Path(a.eval_dir))
        print(f"{a.eval_dir}: {r['shots']} shots, clean pots as played {r['clean_pot_as_played']}, "
              f"with the potting-point aim {r['clean_pot_potting_point']}")
    return 0


def main(argv=None) -> int:
    from poolbench_data.config import parse, run_main

    return run_main(lambda: study(parse(ScriptArguments, argv, __doc__)))


if __name__ == "__main__":
    sys.exit(main())
