"""GRPO on the simulator with real TRL on a tiny random model (CPU).

The boards are PoolBench's own: a dataset folder in Hub layout built by
hub.build.build_benchmark, read back with `load_dataset(folder, "scenarios")`
and given to `GRPOTrainer` as is (its `prompt` column is the conversation). The
reward is `physics_reward`, which rebuilds each board from the row's columns
and simulates the completion with pooltool. These tests pin the contract
between the `scenarios` config, TRL's reward-function calling convention and
`training/grpo.py`.

Context: the tiny model is built with its default max_position_embeddings=2048;
the prompts are ~1,430-1,570 tokens for its tokenizer and this TRL version
does not truncate prompts, so 2048 holds a prompt plus the 16 sampled tokens
(asserted below rather than assumed).

What the run cannot show: the random model's 16 tokens never parse, so every
reward is 0, every group has zero spread and the GRPO loss and gradient are 0.
The runs prove the plumbing (boards -> generation -> simulator reward -> logged
metrics -> a saved adapter), not learning; the Oracle's answers, scored through
the same recorded columns, show that the columns do reach the simulator.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")

from datasets import Dataset, load_dataset  # noqa: E402

from poolbench_data.boards.splits import SplitLeakError  # noqa: E402
from poolbench_data.checks.pairs import ScenarioRowsError, check_scenario_rows  # noqa: E402
from poolbench_data.rl.reward import physics_reward, score_completion  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SMOKE_RECIPE = REPO / "training" / "recipes" / "grpo-smollm2-135m-cpu-smoke.yaml"
BOARD_COLUMNS = ("id", "category", "seed", "cue_ball", "balls")
SCORES = {0.0, 1.0, 2.0, 3.0}
COMPLETION_TOKENS = 16


def _load_grpo_script():
    # training/ is a folder of scripts, not a package: load the file itself.
    spec = importlib.util.spec_from_file_location("poolbench_training_grpo", REPO / "training" / "grpo.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


grpo = _load_grpo_script()


class RewardRecorder:
    """physics_reward, unchanged, plus a record of what TRL passed it and what it returned."""

    def __init__(self):
        # TRL names the logged metric after __name__: rewards/physics_reward/mean.
        self.__name__ = "physics_reward"
        self.calls: list[dict] = []

    def __call__(self, completions, **kwargs):
        rewards = physics_reward(completions, **kwargs)
        self.calls.append({"completions": completions, "kwargs": kwargs, "rewards": list(rewards)})
        return rewards


def board_of(row: dict):
    """The Scenario physics_reward rebuilds from a dataset row."""
    from poolbench_data.core.records import Scenario

    return Scenario.from_row({c: row[c] for c in BOARD_COLUMNS})


@pytest.fixture(scope="module")
def boards_folder(tmp_path_factory) -> Path:
    from poolbench_data.hub.build import build_benchmark

    root = tmp_path_factory.mktemp("pb") / "poolbench"
    build_benchmark(root, eval_n=1, train_n=4, train_seed=2, players=("oracle",), progress=False)
    return root


@pytest.fixture(scope="module")
def boards(boards_folder) -> Dataset:
    return load_dataset(str(boards_folder), "scenarios", split="train")


@pytest.fixture(scope="module")
def trained(tiny_model, boards, tmp_path_factory):
    """Two optimizer steps of GRPOTrainer on the scenarios config, rewarded by the recorded physics_reward."""
    from peft import LoraConfig
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    longest = max(
        len(tokenizer.apply_chat_template(p, add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"])
        for p in boards["prompt"]
    )
    # No truncation anywhere: the whole prompt and the completion must fit the model's positions.
    assert longest + COMPLETION_TOKENS <= 2048, longest

    recorder = RewardRecorder()
    args = GRPOConfig(
        output_dir=str(tmp_path_factory.mktemp("grpo")),
        use_cpu=True,
        bf16=False,
        use_vllm=False,
        max_steps=2,
        num_generations=2,
        max_completion_length=COMPLETION_TOKENS,
        per_device_train_batch_size=2,  # one board x 2 completions per step
        gradient_accumulation_steps=1,
        gradient_checkpointing=False,
        learning_rate=1e-3,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=0,
        disable_tqdm=True,
    )
    trainer = GRPOTrainer(
        model=str(tiny_model),
        reward_funcs=[recorder],
        args=args,
        train_dataset=boards,  # the config as loaded: no remapping, no column selection
        processing_class=tokenizer,
        peft_config=LoraConfig(r=4, target_modules="all-linear"),
    )
    trainer.train()
    return trainer, recorder


# --- GRPOTrainer + physics_reward -----------------------------------------------------


@pytest.mark.slow
def test_grpo_logs_finite_loss_and_rewards(trained):
    trainer, _ = trained
    steps = [e for e in trainer.state.log_history if "loss" in e]
    assert [e["step"] for e in steps] == [1, 2]
    assert all(math.isfinite(e["loss"]) for e in steps)
    for e in steps:
        for key in ("reward", "reward_std", "rewards/physics_reward/mean", "rewards/physics_reward/std"):
            assert key in e and math.isfinite(e[key]), (key, e)
        assert 0.0 <= e["rewards/physics_reward/mean"] <= 3.0


@pytest.mark.slow
def test_rewards_came_from_the_simulator(trained, boards):
    trainer, recorder = trained
    rows = {r["id"]: r for r in boards}
    # One generation batch per optimizer step: a board's 2 completions.
    assert len(recorder.calls) == 2
    for call in recorder.calls:
        kwargs, completions, rewards = call["kwargs"], call["completions"], call["rewards"]
        assert len(completions) == len(rewards) == 2
        # TRL passed the dataset's own board columns, one entry per completion.
        for column in BOARD_COLUMNS:
            assert kwargs[column] == [rows[i][column] for i in kwargs["id"]], column
        assert len(set(kwargs["id"])) == 1  # both completions answer the same board
        assert set(rewards) <= SCORES
        # The same scores, recomputed from the dataset row and the completion's text.
        for board_id, completion, reward in zip(kwargs["id"], completions, rewards):
            assert completion[-1]["role"] == "assistant"
            scenario = board_of(rows[board_id])
            assert score_completion(scenario, completion[-1]["content"]) == reward

    # The logged per-step means are the recorder's outputs.
    logged = [e["rewards/physics_reward/mean"] for e in trainer.state.log_history if "loss" in e]
    assert logged == pytest.approx([sum(c["rewards"]) / len(c["rewards"]) for c in recorder.calls])

    # The random model's text never parses (reward 0, nothing simulated); the Oracle's answer,
    # passed with the very columns TRL passed, is parsed and simulated on that board.
    for call in recorder.calls:
        board_id = call["kwargs"]["id"][0]
        oracle = [[{"role": "assistant", "content": rows[board_id]["oracle_action"]}]]
        board = {c: call["kwargs"][c][:1] for c in BOARD_COLUMNS}
        assert physics_reward(oracle, **board)[0] >= 1.0  # fired: a foul, a contact or a pot


# --- training/grpo.py -------------------------------------------------------------------


def script_args(model: Path, data: Path, out: Path, **overrides) -> list[str]:
    """The smoke recipe, shrunk to the tiny model: every recipe key goes through the real parser."""
    args = {
        "model_name_or_path": str(model),
        "dataset_name": str(data),
        "output_dir": str(out),
        "dtype": "float32",
        "max_completion_length": 8,
        "max_steps": 1,
        "learning_rate": 1e-3,
        "lora_r": 4,
        "seed": 0,
        "disable_tqdm": True,
    }
    args.update(overrides)
    argv = ["--config", str(SMOKE_RECIPE)]
    for key, value in args.items():
        argv += [f"--{key}", str(value)]
    return argv


@pytest.mark.slow
def test_script_trains_and_saves_adapter_and_merged(tiny_model, boards_folder, tmp_path):
    from transformers import AutoModelForCausalLM

    # merged_dtype, the recipe's key, is honoured: merged/ is saved in it, not in the training dtype (fp32 here).
    result = grpo.main(script_args(tiny_model, boards_folder, tmp_path / "run", merged_dtype="bfloat16"))
    assert result.global_step == 1 and math.isfinite(result.training_loss)
    step = next(e for e in result.log_history if "loss" in e)
    assert math.isfinite(step["rewards/physics_reward/mean"])
    assert (result.adapter_dir / "adapter_model.safetensors").is_file()
    assert (result.output_dir / "checkpoint-1").is_dir()
    merged = AutoModelForCausalLM.from_pretrained(result.merged_dir)
    assert not any("lora" in name for name in merged.state_dict())
    from safetensors.torch import load_file

    saved = load_file(str(result.merged_dir / "model.safetensors"))
    assert {str(t.dtype) for t in saved.values()} == {"torch.bfloat16"}


def test_script_refuses_the_test_split_before_loading_the_model(boards_folder, tmp_path):
    # The model path does not exist: reaching the model load would fail differently.
    argv = script_args(tmp_path / "no-model", boards_folder, tmp_path / "out", dataset_train_split="test")
    with pytest.raises(SplitLeakError, match="dataset_train_split='test' is the evaluation split"):
        grpo.main(argv)


def test_script_refuses_evaluation_board_ids(boards_folder, tmp_path):
    # Train boards are pb2-*; declared as evaluation boards, they must not be trained on.
    argv = script_args(tmp_path / "no-model", boards_folder, tmp_path / "out", test_id_prefix="pb2-")
    with pytest.raises(SplitLeakError, match=r"4 of 4 training boards are evaluation boards"):
        grpo.main(argv)


def test_script_names_missing_reward_columns(boards_folder, tmp_path):
    argv = script_args(tmp_path / "no-model", boards_folder, tmp_path / "out", dataset_config="traces")
    with pytest.raises(ScenarioRowsError, match=r"missing column\(s\) \[.*'cue_ball'.*dataset_config: scenarios"):
        grpo.main(argv)


def test_script_refuses_remove_unused_columns(boards_folder, tmp_path):
    argv = script_args(tmp_path / "no-model", boards_folder, tmp_path / "out", remove_unused_columns="true")
    with pytest.raises(ValueError, match="remove_unused_columns=true drops the board columns"):
        grpo.main(argv)


def test_script_checks_prompt_plus_completion_fits_the_context(tiny_model, boards_folder, tmp_path):
    argv = script_args(tiny_model, boards_folder, tmp_path / "out", max_completion_length=1000)
    with pytest.raises(ValueError, match=r"max_position_embeddings=2048.*lower max_completion_length"):
        grpo.main(argv)


def test_malformed_board_is_named_with_its_row(boards):
    rows = boards.to_list()
    rows[2]["balls"] = rows[2]["balls"] + [rows[2]["balls"][0]]  # a ball listed twice
    with pytest.raises(ScenarioRowsError, match=r"1 of 4 rows cannot be scored:\n  row 2: .*appears twice"):
        check_scenario_rows(Dataset.from_list(rows), test_id_prefix=None)
