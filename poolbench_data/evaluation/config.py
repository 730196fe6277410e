"""Everything an evaluation takes, in one frozen record: `poolbench eval`'s flags are its fields (the
configuration system, poolbench_data.config, makes the parser from them), a YAML file can hold them (`--config`,
flags on the command line win, as TRL's recipes), and `evaluate(config)` checks it before any work."""

from __future__ import annotations

from dataclasses import dataclass, field

from poolbench_data.boards.generate import DEFAULT_N, DEFAULT_SEED
from poolbench_data.games.records import GAMES
from poolbench_data.llm.observation import ACTIONS, HISTORIES
from poolbench_data.llm.registry import BACKENDS
from poolbench_data.llm.tools import MAX_CALLS
from poolbench_data.players import EVAL_BASELINES
from poolbench_data.protocol.prompts import DEFAULT_MAX_TOKENS, DEFAULT_TEMPERATURE, MAX_FEW_SHOT
from poolbench_data.report.eval_results import DEFAULT_DATASET


def _f(default, help: str, **extra):
    return field(default=default, metadata={"help": help, **extra})


@dataclass(frozen=True)
class EvalConfig:
    """A model and the baselines on the same boards, one report (`poolbench eval`)."""

    model: str | None = _f(None, "local HF folder or Hub id (default, or `embedded`: the packaged SmolLM2-135M-Instruct)")
    name: str | None = _f(None, "player name in reports (default: the model's own name: its model card's, "
                                "else its folder's; a training run's merged/ is named by the run)")
    backend: str = _f("vllm", "vllm: in process; openai: any OpenAI-compatible server (--base_url); "
                              "replay: the responses stored in --responses", choices=tuple(BACKENDS))
    base_url: str = _f("http://127.0.0.1:8000/v1", "server for --backend openai")
    request_timeout: float = _f(60.0, "seconds one attempt of one request may take (--backend openai)")
    retries: int = _f(2, "retries of a request that timed out, could not connect or got HTTP 429/5xx "
                         "(--backend openai)")
    timeout: float = _f(1800.0, "seconds all of the model's requests may take together (--backend openai); "
                                "those unanswered by then fail as 'deadline'")
    max_failed_share: float = _f(0.0, "share of the model's shots whose request may fail for good before the run "
                                      "fails (exit 1, results marked incomplete, nothing added to --dataset_dir); "
                                      "0: none may")
    responses: str = _f("", "llm_traces.jsonl whose responses --backend replay re-scores")
    n: int | None = _f(None, f"scenarios (default: the paper's {DEFAULT_N}; with --dataset_dir, every board of "
                             "--split)")
    seed: int | None = _f(None, f"scenario base seed (default: the evaluation set, {DEFAULT_SEED}; with "
                                "--dataset_dir, the seed --split was built with)")
    samples: int = _f(1, "responses per scenario")
    temperature: float = _f(DEFAULT_TEMPERATURE, "sampling temperature (paper: 0.2)")
    max_tokens: int = _f(DEFAULT_MAX_TOKENS, "token budget (paper: 300)")
    gen_seed: int = _f(0, "generation seed (per-request seeds derive from it)")
    structured: bool = _f(False, "constrain output to the action's JSON schema")
    few_shot: int = _f(0, f"worked Oracle examples in the prompt: any whole number from 0 to {MAX_FEW_SHOT} (the "
                          "paper's ablation grid is 0/1/3/5)")
    baselines: str = _f(",".join(EVAL_BASELINES), "baselines in the report")
    model_args: str = _f("", "engine settings passed to vLLM, as lm-evaluation-harness's --model_args: k=v,k=v "
                             "(e.g. dtype=float32,enforce_eager=True,tensor_parallel_size=2); recorded in results")
    max_model_len: int = _f(4096, "context length (the vLLM engine's); every prompt plus --max_tokens must fit in it")
    out: str | None = _f(None, "report folder (default: --output_path's folder if given, else results/eval)")
    boards: int = _f(3, "board PNGs to draw (one per category)")
    dataset_dir: str = _f("", "append the LLM traces to this dataset folder's traces config")
    split: str = _f("test", "dataset split of these scenarios (with --dataset_dir)")
    quiet: bool = _f(False, "no progress bars")
    verbose: bool = _f(False, "show the engine's logs (default: OUT/engine.log)")
    # lm-evaluation-harness's conventions
    limit: int = _f(0, "evaluate only the first N selected boards (0: all)")
    categories: str = _f("", "comma-separated categories to keep (default: all seven)")
    output_path: str = _f("", "results JSON in lm-evaluation-harness's shape (a .json file, or a folder for "
                              "results_<name>.json)")
    log_samples: bool = _f(False, "with --output_path: also samples_<name>.jsonl, one line per shot (response, "
                                  "parsed action, parse status, event trace, metrics)")
    # the Hub's evaluation results
    eval_results: str = _f("", "also write the model's headline metrics (clean_pot, legal_contact, own_potted) to "
                               "this folder as the Hub's evaluation results: poolbench.yaml (poolbench_<condition>"
                               ".yaml for tools, structured, few-shot or vision), to copy into the model repo's "
                               ".eval_results/")
    eval_results_dataset: str = _f(DEFAULT_DATASET, "the benchmark's Hub dataset id the --eval_results are for")
    overwrite: bool = _f(False, "replace the --eval_results file if the folder holds one (else the run is refused "
                                "before any work)")
    # the paper's section 6.3 experiments
    rounds: int = _f(1, "refinement: after each shot the model gets the simulator's feedback and shoots again on "
                        "the same board, this many rounds in all (rows <name>@r2, ...)")
    vision: bool = _f(False, "send the rendered board PNG with the prompt (OpenAI image_url; --backend openai)")
    tools: bool = _f(False, "tool-augmented: the model may call a ghost_ball geometry tool (OpenAI function "
                            "calling, run locally) before it answers; calls in OUT/tool_calls.jsonl")
    max_tool_calls: int = _f(MAX_CALLS, "tool calls a shot may make (with --tools), counted call by call, however "
                                        "many one turn holds: a call past the cap gets an error instead of a "
                                        "result, and the turn after the cap is read as the action")
    tool_lines: bool = _f(False, "with --game runout --tools: each open shot of a report adds the cue ball's "
                                 "headings after contact for stun, follow and draw (cue_after_deg), what a player "
                                 "knows of position without simulating")
    reasoning_budget: int | None = _f(None, "reasoning models: at most this many tokens inside <think> ... </think> "
                                            "(vLLM's thinking_token_budget; the server needs --reasoning-parser), "
                                            "within --max_tokens; tokens spent reasoning are reported in "
                                            "results.json's usage")
    # games played shot by shot (docs/games.md#evaluating-a-model-in-a-game)
    game: str = _f("shot", "shot (the default): one shot a board, the paper's protocol; nineball: DeepPHY's nine-ball "
                           "task on its one rack; nineball-seeded: a rack per episode; runout: an eight-ball visit "
                           "from each board. With a game, --n counts starts, --samples episodes from each, and "
                           "--baselines defaults to the game's players", choices=("shot",) + GAMES)
    attempts: int = _f(15, "with --game: the most attempts an episode takes (DeepPHY's 15)")
    history: str = _f("current", "with --game: what each turn sends: current, the system prompt and the table now "
                                 "with the last shot's outcome (DeepPHY's runner); full, the whole conversation so far",
                      choices=HISTORIES)
    action: str | None = _f(None, "with --game nineball: discrete, DeepPHY's answer line (the default), or "
                                  "continuous, a JSON of cue_speed, a and b; --game runout answers with the "
                                  "protocol's JSON action and optional spin a, b (continuous)",
                            choices=ACTIONS)

