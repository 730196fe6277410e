"""What `poolbench figures` reads, and the run that draws it: every input file is read and checked before
anything is drawn or any folder made, so a mistake in one file is one UserError naming the file, its flag and
the fix, with nothing written (report/figures.py draws; this module decides what it is given).

The inputs:
- --eval_dir: a `poolbench eval` report folder. Its summary.json holds {"summary": {player: {"overall":
  {metric: {"k": count, "n": shots}}}}} for legal_contact, own_potted, clean_pot and foul (table1.png); its
  llm_traces.jsonl holds one JSON object a line, and a row with an `action` ({"phi", "V0", ...}) on a
  generated board (scenario_id pb<seed>-<index>) by a `player` can be drawn beside the Oracle (board_pair.png).
- --baselines_json: a `poolbench baseline --out` JSON, its "summary" as summary.json's (table1.png, in place of
  --eval_dir's); its Oracle, on a pilot's boards, is before_after.png's ceiling.
- --board alone: a generated board's id; the paper's Heuristic (pocket-centre aim) beside the Oracle on it
  (board_pair.png), both decided from the board, so nothing but the id is read.
- --pilot_json: a training pilot's results, {"n": boards, "<player>": {metric: count, ...}, ...} with at least
  one of the players of figures.PILOT_BLOCKS, each with counts for legal_contact, own_potted and clean_pot; an
  "oracle" block of the same counts, where there is one, is the ceiling; the counts a label names
  (figures.PILOT_LABEL_COUNTS) are counts or null, and "after_model" (the free-text loop's) is text. With
  --baselines_json, each baseline both files hold has the same counts in both (the same boards).
- --trainer_state: label=PATH pairs, each PATH a trainer_state.json whose "log_history" list holds at least
  one entry with a "step" (a whole number) and a numeric "loss" (training_curves.png); the other keys it logs
  tell an SFT's cross-entropy, a DPO loss and a GRPO loss apart (`loss_kind`), each plotted on its own axis."""

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
BASELINES_FIX = "give --baselines_json the --out JSON of `poolbench baseline` (docs/results/baselines_*.json)"
STATE_FIX = "give --trainer_state label=PATH with the trainer_state.json of a training run"
BOARD_ID = re.compile(r"pb(\d+)-(\d+)")


@dataclass(frozen=True)
class FigureInputs:
    """Every input, read and checked: what each figure is drawn from (None/empty: that figure is not drawn)."""

    summary: dict | None = None  # summary.json's or the baselines JSON's "summary" (table1.png)
    pair: tuple[str, str, Shot] | None = None  # (board id, player, the player's shot) (board_pair.png)
    pilot: dict | None = None  # the pilot's results (before_after.png)
    ceiling: dict[str, tuple[int, int]] | None = None  # the Oracle's (k, n) on the pilot's boards, by metric
    curves: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # label -> (step, loss) points
    kinds: dict[str, str] = field(default_factory=dict)  # label -> what its loss is (figures.LOSS_LABELS)


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
    return read_summary_file(Path(eval_dir) / "summary.json", f"--eval_dir {eval_dir}: summary.json", "--eval_dir",
                             EVAL_FIX)


def read_summary_file(path: Path, where: str, flag: str, fix: str) -> dict:
    """A JSON's "summary" of per-player rates (summary.json's, a baseline run's), each metric of table1.png a
    count k of n > 0 shots; a mistake names `where` (the flag and the file) and `fix`."""
    doc = read_json(path, flag, fix)

    def refuse(problem: str):
        raise UserError(f"{where} {problem}; {fix}")

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
    """A pilot's results JSON: `n` boards and, for each player it evaluated (and the Oracle, where it holds it),
    counts of at most n; the counts its labels name, counts or null."""
    from poolbench_data.report.figures import PILOT_BLOCKS, PILOT_CEILING, PILOT_LABEL_COUNTS

    pilot = read_json(Path(path), "--pilot_json", PILOT_FIX)

    def refuse(problem: str):
        raise UserError(f"--pilot_json {path}: {problem}; {PILOT_FIX}")

    if not isinstance(pilot, dict):
        refuse(f"holds {_kind(pilot)}, not an object")
    n = pilot.get("n")
    if not _count(n) or n == 0:
        refuse("has no \"n\" (the boards each player was evaluated on)" if "n" not in pilot else
               f"\"n\" is {json.dumps(n)[:40]}, not a count of boards > 0")
    players = [key for key in PILOT_BLOCKS if pilot.get(key)]
    if not players:
        refuse(f"holds none of the players a pilot evaluates ({', '.join(PILOT_BLOCKS)})")
    for key in PILOT_LABEL_COUNTS:
        if pilot.get(key) is not None and not _count(pilot[key]):
            refuse(f"\"{key}\" is {json.dumps(pilot[key])[:40]}, not a count (or null)")
    if not isinstance(pilot.get("after_model", ""), str):
        refuse(f"\"after_model\" is {_kind(pilot['after_model'])}, not text (SFT only, SFT + DPO)")
    for key in players + ([PILOT_CEILING] if pilot.get(PILOT_CEILING) else []):
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


def read_curve(label: str, path: Path) -> tuple[list[tuple[float, float]], str]:
    """The (step, loss) points of a trainer_state.json's log_history (at least one, or a UserError) and what
    the loss is (`loss_kind`)."""
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
    return points, loss_kind(log)


def loss_kind(log: list[dict]) -> str:
    """Which trainer logged a log_history, by the keys TRL's trainers log beside the loss: "dpo" (the chosen
    and rejected rewards), "grpo" (the rollouts' reward), "sft" (token accuracy), "" (none of these)."""
    keys = {k for entry in log for k in entry}
    if any(k.startswith(("rewards/", "logps/")) for k in keys):
        return "dpo"
    if "reward" in keys or any(k.startswith("completions/") for k in keys):
        return "grpo"
    return "sft" if "mean_token_accuracy" in keys else ""


def read_inputs(eval_dir: str = "", board: str = "", pilot_json: str = "", trainer_state: str = "",
                baselines_json: str = "") -> FigureInputs:
    """Every input of `poolbench figures`, read and checked (module docstring); nothing is drawn or written."""
    if not (eval_dir or pilot_json or trainer_state or baselines_json or board):
        raise UserError("nothing to draw; give --eval_dir, --baselines_json, --board, --pilot_json or "
                        "--trainer_state")
    if eval_dir and baselines_json:
        raise UserError("--eval_dir and --baselines_json both draw table1.png; give one of them")
    if eval_dir and not Path(eval_dir).is_dir():
        raise UserError(f"--eval_dir {eval_dir}: no such folder; {EVAL_FIX}")
    curves = {label: read_curve(label, path) for label, path in parse_states(trainer_state).items()}
    baselines = read_summary_file(Path(baselines_json), f"--baselines_json {baselines_json}", "--baselines_json",
                                  BASELINES_FIX) if baselines_json else None
    pilot = read_pilot(pilot_json) if pilot_json else None
    return FigureInputs(summary=read_summary(eval_dir) if eval_dir else baselines,
                        pair=read_pair(eval_dir, board) if eval_dir else heuristic_pair(board) if board else None,
                        pilot=pilot, ceiling=pilot_ceiling(pilot, baselines, pilot_json, baselines_json),
                        curves={label: points for label, (points, _) in curves.items()},
                        kinds={label: kind for label, (_, kind) in curves.items()})


def heuristic_pair(board: str) -> tuple[str, str, Shot]:
    """(board, the paper's Heuristic, its shot) on --board, a generated board's id."""
    from poolbench_data.core.vocab import MAX_SEED
    from poolbench_data.players import BASELINES

    found = BOARD_ID.fullmatch(board)
    if not found or int(found.group(1)) > MAX_SEED:
        raise UserError(f"--board {board!r} is not a generated board's id (pb<seed>-<index>, e.g. pb0-000003, "
                        "a seed up to 2**63 - 1)")
    return board, "heuristic-centre", BASELINES["heuristic-centre"][1](_scenario(board)).shot


def pilot_ceiling(pilot: dict | None, baselines: dict | None, pilot_json: str,
                  baselines_json: str) -> dict[str, tuple[int, int]] | None:
    """The Oracle's (k, n) by metric on the pilot's boards: the pilot's own `oracle` block, else the baselines
    JSON's Oracle. A baselines JSON given beside a pilot must be of its boards: the same n, and each baseline
    both hold with the same counts."""
    from poolbench_data.report.figures import PILOT_BASELINES, PILOT_CEILING

    if pilot is None or baselines is None:
        return None
    for key, player in PILOT_BASELINES.items():
        if not pilot.get(key) or player not in baselines:
            continue
        for m in PILOT_METRICS:
            cell, count = baselines[player]["overall"][m], pilot[key][m]
            if (cell["k"], cell["n"]) != (count, pilot["n"]):
                raise UserError(f"--baselines_json {baselines_json} and --pilot_json {pilot_json} are not of the same "
                                f"boards: {player}'s {m} is {cell['k']} of {cell['n']} in one, {count} of "
                                f"{pilot['n']} in the other; give the baselines of the pilot's boards "
                                f"(`poolbench baseline --n {pilot['n']}`)")
    if pilot.get(PILOT_CEILING):
        return {m: (pilot[PILOT_CEILING][m], pilot["n"]) for m in PILOT_METRICS}
    if "oracle" not in baselines:
        return None
    oracle = baselines["oracle"]["overall"]
    if any(oracle[m]["n"] != pilot["n"] for m in PILOT_METRICS):
        raise UserError(f"--baselines_json {baselines_json}: its Oracle played {oracle['clean_pot']['n']} boards and "
                        f"the pilot of --pilot_json {pilot_json} {pilot['n']}; give the baselines of the pilot's "
                        f"boards (`poolbench baseline --n {pilot['n']}`)")
    return {m: (oracle[m]["k"], oracle[m]["n"]) for m in PILOT_METRICS}


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
            drawn.append(figures.before_after_figure(inputs.pilot, folder / "before_after.png",
                                                     ceiling=inputs.ceiling))
        if inputs.curves:
            drawn.append(figures.training_curves_figure(inputs.curves, folder / "training_curves.png",
                                                        inputs.kinds))
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
    """Figures of a run: Table-1 bars, a board's two shots, before/after bars, training curves
    (`poolbench figures`)."""

    eval_dir: str = field(default="", metadata={"help": "a `poolbench eval` report folder (--out): table1.png from "
                                                         "its summary.json, board_pair.png from its llm_traces.jsonl"})
    baselines_json: str = field(default="", metadata={"help": "a `poolbench baseline --out` JSON: table1.png (in "
                                                               "place of --eval_dir's), the Oracle's ceiling of "
                                                               "before_after.png on the pilot's boards"})
    board: str = field(default="", metadata={"help": "board_pair.png's board: with --eval_dir the model's shot on it "
                                                      "(default: the first), else the paper's Heuristic's"})
    pilot_json: str = field(default="", metadata={"help": "a training pilot's results JSON: before_after.png"})
    trainer_state: str = field(default="", metadata={"help": "label=trainer_state.json,...: training_curves.png"})
    out: str = field(default="results/figures", metadata={"help": "folder for the PNGs"})


def draw_figures(config: FiguresConfig) -> tuple[Path, ...]:
    """Read and check every input (`figure_inputs.read_inputs`, before anything is drawn or written), draw each
    figure the given files make into `out`, print each PNG's path; the PNGs written, in that order."""
    inputs = read_inputs(config.eval_dir, config.board, config.pilot_json, config.trainer_state,
                         config.baselines_json)
    drawn = draw(inputs, config.out)
    for path in drawn:
        print(path)
    return tuple(drawn)
