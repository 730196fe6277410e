"""What `poolbench figures` reads, and the run that draws it: every input file is read and checked before
anything is drawn or any folder made, so a mistake in one file is one UserError naming the file, its flag and
the fix, with nothing written (report/figures.py draws; this module decides what it is given).

The inputs:
- --eval_dir: a `poolbench eval` report folder. Its summary.json holds {"summary": {player: {"overall":
  {metric: {"k": count, "n": shots}}}}} for legal_contact, own_potted, clean_pot and foul (table1.png); its
  llm_traces.jsonl holds one JSON object a line, and a row with an `action` ({"phi", "V0", ...}) on a
  generated board (scenario_id pb<seed>-<index>) by a `player` can be drawn beside the Oracle (board_pair.png).
- --pilot_json: a training pilot's results, {"n": boards, "<player>": {metric: count, ...}, ...} with at least
  one of the players of figures.PILOT_BLOCKS, each with counts for legal_contact, own_potted and clean_pot.
- --trainer_state: label=PATH pairs, each PATH a trainer_state.json whose "log_history" list holds at least
  one entry with a "step" (a whole number) and a numeric "loss" (training_curves.png)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from poolbench_data.core.errors import UserError, check_output_dir
from poolbench_data.core.records import Shot

TABLE1_METRICS = ("legal_contact", "own_potted", "clean_pot", "foul")
PILOT_METRICS = ("legal_contact", "own_potted", "clean_pot")
EVAL_FIX = "give --eval_dir the --out folder of a `poolbench eval` run, unedited"
PILOT_FIX = "give --pilot_json a training pilot's results JSON (docs/results/tool_track_*.json)"
STATE_FIX = "give --trainer_state label=PATH with the trainer_state.json of a training run"
BOARD_ID = re.compile(r"pb(\d+)-(\d+)")


@dataclass(frozen=True)
class FigureInputs:
    """Every input, read and checked: what each figure is drawn from (None/empty: that figure is not drawn)."""

    summary: dict | None = None  # summary.json's "summary" (table1.png)
    pair: tuple[str, str, Shot] | None = None  # (board id, player, the player's shot) (board_pair.png)
    pilot: dict | None = None  # the pilot's results (before_after.png)
    curves: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # label -> (step, loss) points


def read_json(path: Path, flag: str, fix: str):
    """A JSON file's value, or one UserError naming the flag, the file and where the JSON breaks."""
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise UserError(f"{flag} {path}: no such file; {fix}") from None
    except OSError as e:
        raise UserError(f"{flag} {path} cannot be read ({e.strerror or e}); {fix}") from None
    except UnicodeDecodeError as e:
        raise UserError(f"{flag} {path} is not JSON (not UTF-8 text: byte {e.object[e.start]:#04x} at offset "
                        f"{e.start}); {fix}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise UserError(f"{flag} {path} is not JSON ({e.msg} at line {e.lineno} column {e.colno}); {fix}") from None
    except RecursionError:
        raise UserError(f"{flag} {path} is not JSON this reader takes (nested too deeply); {fix}") from None


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _kind(value) -> str:
    return "null" if value is None else {dict: "an object", list: "a list", str: "text"}.get(type(value),
                                                                                          repr(value))


def read_summary(eval_dir: str) -> dict:
    """summary.json's per-player rates, each metric of table1.png a count k of n > 0 shots."""
    path = Path(eval_dir) / "summary.json"
    doc = read_json(path, "--eval_dir", EVAL_FIX)

    def refuse(problem: str):
        raise UserError(f"--eval_dir {eval_dir}: {path.name} {problem}; {EVAL_FIX}")

    if not isinstance(doc, dict) or "summary" not in doc:
        refuse("has no \"summary\" object of players")
    summary = doc["summary"]
    if not isinstance(summary, dict) or not summary:
        refuse(f"\"summary\" is {'empty' if summary == {} else _kind(summary)}, not an object of players")
    for player, s in summary.items():
        overall = s.get("overall") if isinstance(s, dict) else None
        if not isinstance(overall, dict):
            refuse(f"player {player!r} has no \"overall\" object of metrics")
        for m in TABLE1_METRICS:
            cell = overall.get(m)
            if not isinstance(cell, dict) or not _count(cell.get("k")) or not _count(cell.get("n")) \
                    or not 0 < cell["n"] or cell["k"] > cell["n"]:
                refuse(f"player {player!r}: overall {m} is {json.dumps(cell)[:80]}, not a count "
                       "{\"k\": shots, \"n\": boards} with 0 <= k <= n and n > 0")
    return summary


def _trace_problem(row: dict) -> str | None:
    """What keeps a trace row with an action from being drawn (a row without one is not drawn at all)."""
    action = row.get("action")
    if action is None:
        return None
    if not isinstance(action, dict):
        return f"action is {_kind(action)}, not an object {{\"phi\", \"V0\", ...}}"
    for key in ("phi", "V0"):
        if not _number(action.get(key)):
            return f"action's {key} is {_kind(action.get(key)) if key in action else 'missing'}, not a number"
    for key in ("a", "b", "theta"):
        if key in action and not _number(action[key]):
            return f"action's {key} is {_kind(action[key])}, not a number"
    for key in ("target_ball", "target_pocket"):
        if not isinstance(action.get(key), (str, type(None))):
            return f"action's {key} is {_kind(action[key])}, not a ball or pocket id"
    if not isinstance(row.get("player"), str):
        return f"player is {_kind(row.get('player'))}, not a name"
    sid = row.get("scenario_id")
    if not isinstance(sid, str) or not BOARD_ID.fullmatch(sid):
        return f"scenario_id {sid!r} is not a generated board (pb<seed>-<index>)"
    return None


def read_pair(eval_dir: str, board: str = "") -> tuple[str, str, Shot] | None:
    """(board, player, shot) of the model's shot to draw beside the Oracle's: --board's, else the first row
    with an action; None when no row has one (every answer unparsed)."""
    from poolbench_data.core.vocab import MAX_SEED
    from poolbench_data.players.traces import load_traces

    path = Path(eval_dir) / "llm_traces.jsonl"
    if not path.is_file():
        raise UserError(f"--eval_dir {eval_dir}: no llm_traces.jsonl there; {EVAL_FIX}")
    rows = [r for r in load_traces(path, EVAL_FIX, check=_trace_problem) if r.get("action") is not None]
    if board and board not in [r["scenario_id"] for r in rows]:
        raise UserError(f"--board {board!r}: no shot of the model on that board in {eval_dir}")
    if not rows:
        return None
    row = next(r for r in rows if r["scenario_id"] == (board or rows[0]["scenario_id"]))
    if int(BOARD_ID.fullmatch(row["scenario_id"]).group(1)) > MAX_SEED:
        raise UserError(f"--eval_dir {eval_dir}: {path.name} names board {row['scenario_id']!r}, whose seed is "
                        f"past 2**63 - 1; {EVAL_FIX}")
    return row["scenario_id"], row["player"], Shot.from_row(row["action"])


def read_pilot(path: str) -> dict:
    """A pilot's results JSON: `n` boards and, for each player it evaluated, counts of at most n."""
    from poolbench_data.report.figures import PILOT_BLOCKS

    pilot = read_json(Path(path), "--pilot_json", PILOT_FIX)

    def refuse(problem: str):
        raise UserError(f"--pilot_json {path}: {problem}; {PILOT_FIX}")

    if not isinstance(pilot, dict):
        refuse(f"holds {_kind(pilot)}, not an object")
    n = pilot.get("n")
    if not _count(n) or n == 0:
        refuse("has no \"n\" (the boards each player was evaluated on)" if "n" not in pilot else
               f"\"n\" is {json.dumps(n)[:40]}, not a count of boards > 0")
    players = [key for key, _ in PILOT_BLOCKS if pilot.get(key)]
    if not players:
        refuse(f"holds none of the players a pilot evaluates ({', '.join(k for k, _ in PILOT_BLOCKS)})")
    for key in players:
        block = pilot[key]
        if not isinstance(block, dict):
            refuse(f"{key!r} is {_kind(block)}, not an object of counts")
        for m in PILOT_METRICS:
            if not _count(block.get(m)) or block[m] > n:
                refuse(f"{key!r}'s {m} is {json.dumps(block.get(m))[:40]}, not a count from 0 to n={n}")
    return pilot


def parse_states(text: str) -> dict[str, Path]:
    """--trainer_state's label=PATH pairs, each label once."""
    states: dict[str, Path] = {}
    for item in filter(None, text.split(",")):
        label, sep, path = item.partition("=")
        if not sep or not label or not path:
            raise UserError(f"--trainer_state {item!r}: give label=PATH, e.g. sft=runs/sft/trainer_state.json")
        if label in states:
            raise UserError(f"--trainer_state: label {label!r} is given twice; give each run its own label")
        states[label] = Path(path)
    return states


def read_curve(label: str, path: Path) -> list[tuple[float, float]]:
    """The (step, loss) points of a trainer_state.json's log_history: at least one, or a UserError."""
    flag = f"--trainer_state {label}={path}"
    state = read_json(path, flag, STATE_FIX)
    log = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(log, list):
        raise UserError(f"{flag}: " + ("has no \"log_history\" list" if not isinstance(state, dict) or
                                       "log_history" not in state else
                                       f"\"log_history\" is {_kind(log)}, not a list of logged steps")
                        + f" (TRL's trainer_state.json has one); {STATE_FIX}")
    points = []
    for i, entry in enumerate(log):
        if not isinstance(entry, dict):
            raise UserError(f"{flag}: log_history[{i}] is {_kind(entry)}, not an object; {STATE_FIX}")
        if "loss" in entry:
            if not _number(entry["loss"]) or not _count(entry.get("step")):
                raise UserError(f"{flag}: log_history[{i}] has step {entry.get('step')!r} and loss "
                                f"{entry['loss']!r}, not an optimizer step and a number; {STATE_FIX}")
            points.append((entry["step"], entry["loss"]))
    if not points:
        raise UserError(f"{flag}: its log_history holds no training loss (an entry with \"loss\"), so there is no "
                        f"curve to draw; give the trainer_state.json of a run that logged its loss")
    return points


def read_inputs(eval_dir: str = "", board: str = "", pilot_json: str = "", trainer_state: str = "") -> FigureInputs:
    """Every input of `poolbench figures`, read and checked (module docstring); nothing is drawn or written."""
    if not (eval_dir or pilot_json or trainer_state):
        raise UserError("nothing to draw; give --eval_dir, --pilot_json or --trainer_state")
    if board and not eval_dir:
        raise UserError("--board is read only with --eval_dir; add --eval_dir, or leave --board out")
    if eval_dir and not Path(eval_dir).is_dir():
        raise UserError(f"--eval_dir {eval_dir}: no such folder; {EVAL_FIX}")
    curves = {label: read_curve(label, path) for label, path in parse_states(trainer_state).items()}
    return FigureInputs(summary=read_summary(eval_dir) if eval_dir else None,
                        pair=read_pair(eval_dir, board) if eval_dir else None,
                        pilot=read_pilot(pilot_json) if pilot_json else None, curves=curves)


def _scenario(scenario_id: str):
    """The generated board of an id pb<seed>-<index>."""
    from poolbench_data.boards.generate import generate

    seed, index = BOARD_ID.fullmatch(scenario_id).groups()
    return generate(1, int(seed), start=int(index))[0]


def draw(inputs: FigureInputs, out: str) -> list[Path]:
    """Draw every figure `inputs` holds into the folder `out` (checked before anything is made); the PNGs'
    paths. A drawing that fails takes its PNGs and the folders made for them with it."""
    from poolbench_data.players import oracle
    from poolbench_data.report import figures

    folder = check_output_dir(out, "--out", make=False)
    made = [p for p in (folder.absolute(), *folder.absolute().parents) if not p.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    drawn: list[Path] = []
    try:
        if inputs.summary is not None:
            drawn.append(figures.table1_figure(inputs.summary, folder / "table1.png"))
        if inputs.pair is not None:
            board, player, shot = inputs.pair
            s = _scenario(board)
            figures.board_figure(s, [(player, shot), ("oracle", oracle(s).shot)], folder / "board_pair.png")
            drawn.append(folder / "board_pair.png")
        if inputs.pilot is not None:
            drawn.append(figures.before_after_figure(inputs.pilot, folder / "before_after.png"))
        if inputs.curves:
            drawn.append(figures.training_curves_figure(inputs.curves, folder / "training_curves.png"))
    except BaseException:
        for path in drawn:
            path.unlink(missing_ok=True)
        for path in made:  # deepest first; a folder something else wrote into stays
            try:
                os.rmdir(path)
            except OSError:
                break
        raise
    return drawn


@dataclass(frozen=True)
class FiguresConfig:
    """Figures of a run: Table-1 bars, a model-vs-Oracle board, before/after bars, training curves
    (`poolbench figures`)."""

    eval_dir: str = field(default="", metadata={"help": "a `poolbench eval` report folder (--out): table1.png from "
                                                         "its summary.json, board_pair.png from its llm_traces.jsonl"})
    board: str = field(default="", metadata={"help": "with --eval_dir: the board of the pair (default: the first)"})
    pilot_json: str = field(default="", metadata={"help": "a training pilot's results JSON: before_after.png"})
    trainer_state: str = field(default="", metadata={"help": "label=trainer_state.json,...: training_curves.png"})
    out: str = field(default="results/figures", metadata={"help": "folder for the PNGs"})


def draw_figures(config: FiguresConfig) -> tuple[Path, ...]:
    """Read and check every input (`figure_inputs.read_inputs`, before anything is drawn or written), draw each
    figure the given files make into `out`, print each PNG's path; the PNGs written, in that order."""
    inputs = read_inputs(config.eval_dir, config.board, config.pilot_json, config.trainer_state)
    drawn = draw(inputs, config.out)
    for path in drawn:
        print(path)
    return tuple(drawn)
