"""DPO on PoolBench pairs with real TRL on a tiny random model (CPU, seconds).

The pairs are PoolBench's own: a dataset folder in Hub layout (parquet under
data/<config>/ + README.md YAML `configs:`) built by hub.build.build_benchmark,
a model's answers replayed through the parser, simulator and trace writer, and
the `pairs` config written by pairs.text.build_pairs + hub.update.write_config
(what builders/build_pairs.py does). It is read back with
`load_dataset(folder, "pairs")`, so these tests also pin the contract between
the dataset and `training/dpo.py`.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import re
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")

import torch  # noqa: E402
from datasets import Dataset, load_dataset  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

from poolbench_data.checks.pairs import PairsFormatError, check_pairs  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CPU_RECIPE = REPO / "training" / "recipes" / "dpo-smollm2-135m-cpu.yaml"


def _load_dpo_script():
    # training/ is a folder of scripts, not a package: load the file itself.
    spec = importlib.util.spec_from_file_location("poolbench_training_dpo", REPO / "training" / "dpo.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


dpo = _load_dpo_script()

PROSE = "Sure! Let me think through this step by step. First, I need to pick the best ball."


def model_answers(scenario: dict) -> list[str]:
    """Four answers of a model on one board: the Oracle's action, the same
    action aimed the opposite way (a miss or a foul), prose (no JSON) and an
    empty response (which the writer leaves out of every pair)."""
    action = json.loads(scenario["oracle_action"])
    away = round((float(action["aim_angle_deg"]) + 180.0) % 360.0, 2)
    return [scenario["oracle_action"], json.dumps({**action, "aim_angle_deg": away}), PROSE, ""]


def build_pairs_folder(folder: Path) -> list[dict]:
    """A PoolBench dataset folder whose `pairs` config is written by the real
    code, the steps of `poolbench eval --split train` + builders/build_pairs.py:
    scenarios and Oracle traces from build_benchmark; the model's answers
    replayed through the parser, simulator and trace writer into `traces`;
    pairs from pairs.text.build_pairs, written with hub.update.write_config."""
    from poolbench_data.core.records import Scenario, Shot
    from poolbench_data.hub.build import build_benchmark
    from poolbench_data.hub.folder import read_rows
    from poolbench_data.hub.update import replace_rows, write_config
    from poolbench_data.llm.player import EvalSettings, evaluate_model, llm_trace_rows
    from poolbench_data.llm.replay import ReplayBackend
    from poolbench_data.pairs.text import SOURCES, build_pairs
    from poolbench_data.report.provenance import provenance

    build_benchmark(folder, eval_n=1, train_n=4, train_seed=1, players=("oracle",), progress=False)
    scenarios = read_rows(folder, "scenarios", "train")
    answers = [model_answers(s) for s in scenarios]
    settings = EvalSettings(model="tiny-random", backend="replay", samples=len(answers[0]), temperature=0.8)
    records, _ = evaluate_model([Scenario.from_row(s) for s in scenarios], ReplayBackend(answers), settings,
                                progress=False)
    oracle = {s["id"]: Shot.from_row(s["oracle_shot"]) for s in scenarios}
    replace_rows(folder, "traces", "train", llm_trace_rows(records, oracle, settings),
                 drop=lambda r: r["player_kind"] == "llm")
    pairs = build_pairs(read_rows(folder, "scenarios", "train"), read_rows(folder, "traces", "train"))
    write_config(folder, "pairs", {"train": pairs}, "pairs", provenance(split="train", sources=list(SOURCES)))
    return pairs


def write_pairs(folder: Path, rows: list[dict]) -> Path:
    """Replace the folder's `pairs` config with `rows`, as the builder writes it."""
    from poolbench_data.hub.update import write_config

    write_config(folder, "pairs", {"train": rows}, "pairs", {})
    return folder


@pytest.fixture(scope="module", autouse=True)
def fresh_datasets_cache(tmp_path_factory):
    """`datasets` caches a local folder under its name and card, not its files'
    contents: a folder named `poolbench` with the same card, built by another
    run, would be read back from that cache. An empty cache per module makes
    every load (here and in training/dpo.py) read the parquet built here."""
    import datasets

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path_factory.mktemp("hf_datasets_cache"))
        yield


@pytest.fixture(scope="module")
def built_pairs(tmp_path_factory) -> tuple[Path, list[dict]]:
    folder = tmp_path_factory.mktemp("pb") / "poolbench"
    return folder, build_pairs_folder(folder)


@pytest.fixture(scope="module")
def pairs_folder(built_pairs) -> Path:
    return built_pairs[0]


@pytest.fixture
def pair_rows(built_pairs) -> list[dict]:
    """The writer's pair rows; a fresh copy per test, so a test may corrupt them."""
    return copy.deepcopy(built_pairs[1])


def tiny_args(model: Path, data: Path, out: Path, **overrides) -> list[str]:
    """The CPU recipe, shrunk to the tiny model: every recipe key goes through the real parser."""
    args = {
        "model_name_or_path": str(model),
        "dataset_name": str(data),
        "output_dir": str(out),
        "per_device_train_batch_size": 4,
        "gradient_accumulation_steps": 1,
        "max_length": 2048,  # the real prompts: ~1,300-1,550 tokens for the tiny tokenizer
        "learning_rate": 1e-3,  # large, so 4 steps visibly move the adapter
        "warmup_steps": 0,
        "lr_scheduler_type": "constant",
        "save_steps": 2,
        "seed": 0,
        "disable_tqdm": True,
    }
    args.update(overrides)
    argv = ["--config", str(CPU_RECIPE)]
    for key, value in args.items():
        argv += [f"--{key}", str(value)]
    return argv


@pytest.fixture(scope="module")
def resumed_run(tiny_model, pairs_folder, tmp_path_factory):
    """Two steps, checkpoint, stop; then the same command with max_steps 4 resumes."""
    out = tmp_path_factory.mktemp("run") / "dpo"
    first = dpo.main(tiny_args(tiny_model, pairs_folder, out, max_steps=2))
    second = dpo.main(tiny_args(tiny_model, pairs_folder, out, max_steps=4))
    return first, second


# --- the dataset format -------------------------------------------------------


def test_pairs_config_loads_from_hub_layout_folder(built_pairs):
    pairs_folder, written = built_pairs
    ds = load_dataset(str(pairs_folder), "pairs")["train"]
    assert len(ds) == len(written) >= 8 and ds.to_list() == written
    assert ds[0]["prompt"][0]["role"] == "system" and ds[0]["chosen"][0]["role"] == "assistant"
    # Both pair sources; rejected sides are the model's bad answers (a simulated
    # miss or foul, prose), never its empty one (it says nothing about play).
    assert {r["source"] for r in written} == {"oracle-vs-llm", "on-policy"}
    rejected = {r["rejected"][0]["content"] for r in written}
    assert PROSE in rejected and any(t.startswith("{") for t in rejected) and "" not in rejected
    check_pairs(ds)


def test_pairs_go_into_dpotrainer_without_remapping(tiny_model, pairs_folder, tmp_path):
    from peft import LoraConfig
    from transformers import AutoTokenizer
    from trl import DPOConfig, DPOTrainer

    ds = load_dataset(str(pairs_folder), "pairs")["train"]
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    trainer = DPOTrainer(
        model=str(tiny_model),
        args=DPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, max_length=2048, report_to="none"),
        train_dataset=ds,
        processing_class=tokenizer,
        peft_config=LoraConfig(r=4, target_modules="all-linear"),
    )
    processed = trainer.train_dataset
    assert len(processed) == len(ds)  # nothing dropped, nothing renamed
    row, raw = processed[0], ds[0]
    expected_prompt = tokenizer.apply_chat_template(raw["prompt"], tokenize=False, add_generation_prompt=True)
    assert tokenizer.decode(row["prompt_ids"]) == expected_prompt
    assert tokenizer.decode(row["chosen_ids"]).startswith(raw["chosen"][0]["content"] + "<|im_end|>")
    assert tokenizer.decode(row["rejected_ids"]).startswith(raw["rejected"][0]["content"] + "<|im_end|>")


# --- check_pairs ----------------------------------------------------------------


def test_check_pairs_accepts_valid_rows(pair_rows):
    check_pairs(Dataset.from_list(pair_rows[:4]))


def test_check_pairs_names_missing_column(pair_rows):
    rows = [{k: v for k, v in r.items() if k != "rejected"} for r in pair_rows[:2]]
    with pytest.raises(PairsFormatError, match=r"missing column\(s\) \['rejected'\].*dataset_config: pairs"):
        check_pairs(Dataset.from_list(rows))


def test_check_pairs_names_empty_message_list(pair_rows):
    rows = pair_rows[:3]
    rows[2]["chosen"] = []
    with pytest.raises(PairsFormatError, match=r"row 2: `chosen` is an empty message list"):
        check_pairs(Dataset.from_list(rows))


@pytest.mark.parametrize(
    "message, problem",
    [
        ({"content": "{}"}, r"`rejected`\[0\]: a message has no 'role'"),
        ({"role": "assistant"}, r"`rejected`\[0\]: the 'assistant' message has no 'content'"),
        ({"role": "user", "content": "{}"}, r"`rejected`\[0\]: role 'user' is not allowed in `rejected`"),
    ],
)
def test_check_pairs_names_malformed_message(message, problem, pair_rows):
    rows = pair_rows[:2]
    rows[1]["rejected"] = [message]
    # From a list of dicts (not Arrow), so a missing key stays missing.
    with pytest.raises(PairsFormatError, match=r"row 1: " + problem):
        check_pairs(rows)
    # Through Arrow, a key missing in one row becomes None: same message.
    with pytest.raises(PairsFormatError, match=problem):
        check_pairs(Dataset.from_list(rows))


def test_check_pairs_rejects_identical_sides(pair_rows):
    rows = pair_rows[:2]
    rows[0]["rejected"] = rows[0]["chosen"]
    with pytest.raises(PairsFormatError, match="row 0: `chosen` and `rejected` are identical"):
        check_pairs(rows)


def test_check_pairs_counts_every_bad_row_and_shows_the_first_few(pair_rows):
    rows = [dict(r) for r in pair_rows[:8]]
    for r in rows[1:]:
        r["rejected"] = r["chosen"]
    with pytest.raises(PairsFormatError) as err:
        check_pairs(rows)
    message = str(err.value)
    assert message.startswith("7 of 8 pairs are malformed:\n  row 1: ")
    assert [ln.split(":")[0].strip() for ln in message.splitlines()[1:6]] == [f"row {i}" for i in range(1, 6)]
    assert message.splitlines()[6] == "  ..." and "row 6" not in message


def test_script_validates_pairs_before_loading_the_model(pairs_folder, pair_rows, tmp_path):
    rows = pair_rows[:4]
    rows[3]["prompt"] = []
    data = write_pairs(shutil.copytree(pairs_folder, tmp_path / "bad"), rows)
    # The model path does not exist: reaching the model load would fail differently.
    with pytest.raises(PairsFormatError, match="row 3: `prompt` is an empty message list"):
        dpo.main(tiny_args(tmp_path / "no-model", data, tmp_path / "out", max_steps=1))


def test_pairs_that_always_prefer_one_turn_kind_stop_before_the_model_loads(pairs_folder, pair_rows, tmp_path):
    from poolbench_data.checks.pairs import PairsBalanceError, check_turn_kinds

    call = '<tool_call>{"name": "ghost_ball", "arguments": {"target_ball": "1", "pocket": "lb"}}</tool_call>'
    rows = pair_rows[:4]
    for r in rows:  # recovery-like: a call chosen over an answer, every time
        r["chosen"] = [{"role": "assistant", "content": call}]
    data = write_pairs(shutil.copytree(pairs_folder, tmp_path / "calls"), rows)
    with pytest.raises(PairsBalanceError, match=r"4 of the 4 pairs whose sides differ in turn kind choose 'call'"):
        dpo.main(tiny_args(tmp_path / "no-model", data, tmp_path / "out", max_steps=1))
    # one mirror pair makes it 3 of 4: still above 0.7, within 0.75; answers against answers never count
    rows[0]["chosen"], rows[0]["rejected"] = pair_rows[0]["rejected"], [{"role": "assistant", "content": call}]
    assert check_turn_kinds(rows, 0.75) == {"call": 3, "answer": 1}
    with pytest.raises(PairsBalanceError):
        check_turn_kinds(rows, 0.7)
    assert len(pair_rows) > 4 and check_turn_kinds(pair_rows[4:], 0.5) == {"call": 0, "answer": 0}
    with pytest.raises(ValueError, match=r"max_turn_kind_share=0.3: .* Fix: give a value in \[0.5, 1.0\]"):
        dpo.main(tiny_args(tmp_path / "no-model", data, tmp_path / "out", max_turn_kind_share=0.3))


def test_a_shared_prompt_with_gradient_checkpointing_is_refused_before_the_model_loads(tiny_model, pairs_folder,
                                                                                       tmp_path):
    with pytest.raises(ValueError, match="share_prompt: true needs gradient_checkpointing: false"):
        dpo.main(tiny_args(tiny_model, pairs_folder, tmp_path / "out", gradient_checkpointing="true"))
    assert not (tmp_path / "out" / "merged").exists()


def test_pairs_from_evaluation_boards_are_refused(pair_rows):
    from poolbench_data.checks.pairs import SplitLeakError

    rows = pair_rows[:4]
    rows[2]["scenario_id"] = "pb0-000002"
    check_pairs(rows)  # no prefix: no id check
    with pytest.raises(SplitLeakError, match=r"(?s)1 of 4 pairs come from evaluation boards:\n  row 2: scenario_id="
                                             r"'pb0-000002' is an evaluation board"):
        check_pairs(rows, test_id_prefix="pb0-")
    rows[2]["scenario_id"], rows[3]["split"] = "pb1-000002", "test"
    with pytest.raises(SplitLeakError, match="row 3: split='test'"):
        check_pairs(rows, test_id_prefix="pb0-")


def test_script_refuses_evaluation_board_pairs_before_loading_the_model(pairs_folder, pair_rows, tmp_path):
    from poolbench_data.checks.pairs import SplitLeakError

    rows = pair_rows[:4]
    rows[1]["scenario_id"] = "pb0-000001"  # the folder's provenance says eval_seed 0
    data = write_pairs(shutil.copytree(pairs_folder, tmp_path / "leak"), rows)
    with pytest.raises(SplitLeakError, match="row 1: scenario_id='pb0-000001'"):
        dpo.main(tiny_args(tmp_path / "no-model", data, tmp_path / "out", max_steps=1))
    with pytest.raises(SplitLeakError, match="dataset_train_split='test' is the evaluation split"):
        dpo.main(tiny_args(tmp_path / "no-model", pairs_folder, tmp_path / "out", dataset_train_split="test"))


def test_a_dataset_name_that_is_no_folder_here_is_never_read_from_a_cache(pairs_folder, tmp_path, monkeypatch):
    # datasets would resolve "poolbench" to a cached copy of another build; the script refuses it.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    for name in ("poolbench", "./poolbench", "runs/poolbench", "a/b/c", str(tmp_path / "missing")):
        with pytest.raises(FileNotFoundError, match=re.escape(f"dataset_name={name!r}: no such folder")):
            dpo.main(tiny_args(tmp_path / "no-model", name, tmp_path / "out", max_steps=1))
    from poolbench_data.finetune.common import resolve_dataset

    assert resolve_dataset("someone/poolbench") == "someone/poolbench"  # a Hub id
    shutil.copytree(pairs_folder, tmp_path / "poolbench")
    assert resolve_dataset("poolbench") == str(tmp_path / "poolbench")


def test_training_checks_its_model_with_the_evaluators_check(tmp_path):
    """One model check (llm.model.resolve_model) for training and evaluation, naming training's field."""
    from poolbench_data.finetune.common import resolve_model_path

    with pytest.raises(ValueError, match="model_name_or_path is not set"):
        resolve_model_path("")
    (tmp_path / "empty").mkdir()
    for path, error in ((tmp_path / "empty", "is a folder but has no config.json"), ("./none", "does not exist"),
                        ("no-org/no-model", "local cache")):
        with pytest.raises(FileNotFoundError, match=f"^model_name_or_path='{re.escape(str(path))}'.*{error}"):
            resolve_model_path(str(path))


# --- training, saving, resuming ---------------------------------------------------


@pytest.mark.slow
def test_training_loss_is_finite(resumed_run):
    _, second = resumed_run
    losses = [entry["loss"] for entry in second.log_history if "loss" in entry]
    assert losses and all(math.isfinite(x) for x in losses)
    assert math.isfinite(second.training_loss)


@pytest.mark.slow
def test_resumes_from_last_checkpoint(resumed_run):
    first, second = resumed_run
    assert first.resumed_from is None and first.global_step == 2
    assert second.resumed_from is not None and Path(second.resumed_from).name == "checkpoint-2"
    assert second.global_step == 4
    # Steps 1-2 come from the checkpoint's state, 3-4 from the resumed run: each logged once.
    steps = [entry["step"] for entry in second.log_history if "loss" in entry]
    assert steps == [1, 2, 3, 4]
    assert (second.output_dir / "checkpoint-4").is_dir()


@pytest.mark.slow
def test_lora_adapter_moved_from_init(resumed_run):
    _, second = resumed_run
    weights = load_file(second.adapter_dir / "adapter_model.safetensors")
    lora_b = {k: v for k, v in weights.items() if "lora_B" in k}
    assert lora_b, f"no LoRA B matrices in {sorted(weights)[:5]}"
    # PEFT initialises B to zero, so any non-zero B is training.
    assert any(v.abs().max() > 0 for v in lora_b.values())
    assert json.loads((second.adapter_dir / "adapter_config.json").read_text())["peft_type"] == "LORA"


@pytest.mark.slow
def test_merged_model_differs_from_base_loads_and_generates(resumed_run, tiny_model, pair_rows):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _, second = resumed_run
    base = AutoModelForCausalLM.from_pretrained(tiny_model)
    merged = AutoModelForCausalLM.from_pretrained(second.merged_dir)
    assert not any("lora" in name for name in merged.state_dict())
    assert merged.config.use_cache  # training switches it off; the saved model must not inherit that
    base_weights = base.state_dict()
    changed = [n for n, w in merged.state_dict().items() if not torch.equal(w, base_weights[n])]
    assert any("q_proj" in n for n in changed)

    tokenizer = AutoTokenizer.from_pretrained(second.merged_dir)
    messages = pair_rows[0]["prompt"]
    inputs = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    out = merged.generate(**inputs, max_new_tokens=8, do_sample=False)
    assert out.shape[1] > inputs["input_ids"].shape[1]


@pytest.mark.slow
def test_same_seed_gives_the_same_adapter(resumed_run, tiny_model, pairs_folder, tmp_path):
    first, _ = resumed_run
    again = dpo.main(tiny_args(tiny_model, pairs_folder, tmp_path / "again", max_steps=2))
    before = load_file(first.output_dir / "checkpoint-2" / "adapter_model.safetensors")
    after = load_file(again.adapter_dir / "adapter_model.safetensors")
    assert before.keys() == after.keys()
    assert all(torch.equal(before[k], after[k]) for k in before)


@pytest.mark.slow
def test_full_fine_tuning_saves_the_model_only(tiny_model, pairs_folder, tmp_path):
    # Without LoRA TRL loads a second copy of the model as the reference.
    result = dpo.main(tiny_args(tiny_model, pairs_folder, tmp_path / "full", max_steps=1, use_peft="false"))
    assert result.adapter_dir is None
    assert (result.merged_dir / "model.safetensors").is_file()
    assert math.isfinite(result.training_loss)

