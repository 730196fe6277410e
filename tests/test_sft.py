"""SFT on PoolBench demonstrations with real TRL on a tiny random model (CPU, seconds).

The rows are made by the package's own `poolbench_data.demos.text.sft_rows`
from scenario and Oracle-trace rows, written with the package's ShardWriter
and dataset card (a folder in Hub layout) and read back with
`load_dataset(folder, "sft")`, so these tests also pin the contract between the
`sft` config and `training/sft.py`.
"""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")

import torch  # noqa: E402
from datasets import Dataset, load_dataset  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from transformers import PreTrainedModel  # noqa: E402

from poolbench_data.hub.card import write_card  # noqa: E402
from poolbench_data.hub.folder import ShardWriter, write_provenance  # noqa: E402
from poolbench_data.boards.splits import SplitLeakError, eval_id_prefix  # noqa: E402
from poolbench_data.checks import demos as check_sft  # noqa: E402
from poolbench_data.demos.text import sft_rows  # noqa: E402
from poolbench_data.finetune.common import command_line  # noqa: E402
from poolbench_data.finetune.lengths import measure_lengths  # noqa: E402
from tiny_model import IM_END  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CPU_RECIPE = REPO / "training" / "recipes" / "sft-smollm2-135m-cpu.yaml"

SYSTEM = (
    "You are an expert eight-ball pool player. Use the ghost-ball construction: aim the cue ball one ball "
    "diameter behind the object ball on the line from the pocket. Respond with ONLY JSON: "
    '{"target_ball": "<id>", "target_pocket": [x, y], "aim_angle_deg": <float>, "cue_speed": <float>}'
)
POCKETS = [(-0.0295, -0.0295), (1.0963, -0.0295), (-0.0685, 1.0668), (1.1353, 1.0668), (-0.0295, 2.1631), (1.0963, 2.1631)]
LONG_PROMPT_ROWS = (3, 9)  # their user prompt alone is longer than LENGTH_LIMIT tokens
LONG_COMPLETION_ROW = 6  # its prompt fits, its completion runs past LENGTH_LIMIT
LENGTH_LIMIT = 512


def _load_sft_script():
    # training/ is a folder of scripts, not a package: load the file itself.
    spec = importlib.util.spec_from_file_location("poolbench_training_sft", REPO / "training" / "sft.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


sft = _load_sft_script()


def make_scenarios_and_traces(n: int = 12, base_seed: int = 1, long_rows: bool = False):
    """Scenario and Oracle-trace rows with the fields `sft_rows` reads, as the dataset stores them."""
    scenarios, traces = [], []
    for i in range(n):
        ball = 1 + i % 7
        x, y = 0.1 + 0.05 * i, 0.3 + 0.1 * i
        px, py = POCKETS[i % 6]
        user = (
            "Table: width=1.0668m, length=2.1336m. Ball radius=0.02858m\n"
            f"Cue ball C = (0.5334, 0.4)\nYour group: SOLIDS (balls 1--7).\n"
            f"Ball {ball}: x={x:.4f}, y={y:.4f} (distance from cue = {abs(y - 0.4) + 0.1:.3f}m)\n"
            "Respond with ONLY JSON."
        )
        action = json.dumps(
            {"target_ball": str(ball), "target_pocket": [px, py], "aim_angle_deg": round(10.0 + 20 * i, 1),
             "cue_speed": 2.5}
        )
        if long_rows and i in LONG_PROMPT_ROWS:
            user += "\n" + " ".join(f"Ball {b}: x=0.{b:04d}, y=1.{b:04d}" for b in range(200))
        if long_rows and i == LONG_COMPLETION_ROW:
            action += " " + " ".join(f"{b}.{b:04d}" for b in range(300))
        scenario_id = f"pb{base_seed}-{i:06d}"
        scenarios.append({
            "id": scenario_id, "category": ["open", "crowded", "foul-trap", "spin-shot"][i % 4],
            "prompt": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
            "oracle_action": action, "prompt_version": "poolbench-a1-v1",
        })
        potted = i % 3 != 2
        traces.append({
            "scenario_id": scenario_id, "player": "oracle", "clean_pot": potted, "legal_contact": True,
            "foul": False, "own_potted": potted, "opp_or_8_potted": False,
        })
    # A board the Oracle fouls on: no demonstration, so sft_rows must skip it.
    scenarios.append({**scenarios[0], "id": f"pb{base_seed}-{n:06d}"})
    traces.append({**traces[0], "scenario_id": f"pb{base_seed}-{n:06d}", "clean_pot": False, "foul": True})
    return scenarios, traces


def make_sft_rows(n: int = 12, long_rows: bool = False) -> list[dict]:
    rows = sft_rows(*make_scenarios_and_traces(n, long_rows=long_rows), split="train")
    assert len(rows) == n  # the fouled board is skipped
    return rows


def write_sft_folder(folder: Path, rows: list[dict], provenance: dict | None = None) -> Path:
    """A dataset folder in Hub layout, written by the package's own writer and card."""
    writer = ShardWriter(folder, "sft", "train", rows_per_shard=1000)
    writer.extend(rows)
    writer.close()
    write_provenance(folder, provenance or {})
    write_card(folder)
    return folder


@pytest.fixture(scope="module")
def sft_folder(tmp_path_factory) -> Path:
    return write_sft_folder(tmp_path_factory.mktemp("poolbench"), make_sft_rows())


@pytest.fixture(scope="module")
def long_folder(tmp_path_factory) -> Path:
    return write_sft_folder(tmp_path_factory.mktemp("poolbench-long"), make_sft_rows(long_rows=True))


def tiny_args(model: Path, data: Path, out: Path, **overrides) -> list[str]:
    """The CPU recipe, shrunk to the tiny model: every recipe key goes through the real parser."""
    args = {
        "model_name_or_path": str(model),
        "dataset_name": str(data),
        "output_dir": str(out),
        "per_device_train_batch_size": 2,
        "gradient_accumulation_steps": 1,
        "max_length": LENGTH_LIMIT,
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


def parse(argv: list[str]):
    return sft.make_parser().parse_args_and_config(args=argv)


@pytest.fixture(scope="module")
def resumed_run(tiny_model, sft_folder, tmp_path_factory):
    """Two steps, checkpoint, stop; then the same command with max_steps 4 resumes.
    With LoRA on bf16 weights (the recipe trains all weights in fp32 by
    default): the adapter path and its fp32 merge are what these tests check."""
    out = tmp_path_factory.mktemp("run") / "sft"
    lora = {"use_peft": "true", "dtype": "bfloat16", "bf16": "false"}
    first = sft.main(tiny_args(tiny_model, sft_folder, out, max_steps=2, **lora))
    second = sft.main(tiny_args(tiny_model, sft_folder, out, max_steps=4, **lora))
    return first, second


# --- the dataset format -------------------------------------------------------


def test_sft_config_loads_from_hub_layout_folder(sft_folder):
    ds = load_dataset(str(sft_folder), "sft")["train"]
    assert len(ds) == 12
    row = ds[0]
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert row["completion"] == [{"role": "assistant", "content": row["completion"][0]["content"]}]
    assert row["split"] == "train" and row["scenario_id"].startswith("pb1-")
    check_sft.check_sft_rows(ds)


def test_check_sft_rows_names_missing_column():
    rows = [{k: v for k, v in r.items() if k != "completion"} for r in make_sft_rows(2)]
    with pytest.raises(check_sft.SFTFormatError, match=r"missing column\(s\) \['completion'\].*dataset_config: sft"):
        check_sft.check_sft_rows(Dataset.from_list(rows))


@pytest.mark.parametrize(
    "column, value, problem",
    [
        ("completion", [], r"`completion` is 0 messages, expected exactly one assistant message"),
        ("completion", [{"role": "assistant", "content": "{}"}] * 2, r"`completion` is 2 messages"),
        ("completion", [{"role": "assistant", "content": "  "}],
         r"`completion`\[0\]: the 'assistant' message is empty"),
        ("completion", [{"role": "user", "content": "{}"}], r"`completion`\[0\]: role 'user' is not allowed"),
        ("completion", [{"role": "assistant"}], r"`completion`\[0\]: the 'assistant' message has no 'content'"),
        ("prompt", [], r"`prompt` is an empty message list"),
        ("prompt", [{"content": "hi"}], r"`prompt`\[0\]: a message has no 'role'"),
        ("prompt", [{"role": "system", "content": SYSTEM}], r"`prompt` ends with a 'system' message"),
        ("prompt", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "{}"}],
         r"`prompt`\[1\]: role 'assistant' is not allowed"),
    ],
)
def test_check_sft_rows_names_malformed_row(column, value, problem):
    rows = make_sft_rows(3)
    rows[2][column] = value
    with pytest.raises(check_sft.SFTFormatError, match=r"1 of 3 sft rows are malformed:\n  row 2: " + problem):
        check_sft.check_sft_rows(rows)


def test_check_sft_rows_refuses_test_split_rows():
    rows = make_sft_rows(4)
    rows[1]["split"] = "test"
    with pytest.raises(SplitLeakError, match=r"(?s)1 of 4 training rows come from the test split:\n  row 1: "
                       r"split='test'\n.*--split train"):
        check_sft.check_sft_rows(rows)


def test_check_sft_rows_refuses_evaluation_board_ids():
    rows = make_sft_rows(4)
    rows[2]["scenario_id"] = "pb0-000002"  # an evaluation board, whatever its split column says
    rows[3]["scenario_id"] = "pb01-000003"  # another base seed: not a prefix match
    with pytest.raises(SplitLeakError, match=r"(?s)1 of 4 .*row 2: scenario_id='pb0-000002' is an evaluation"):
        check_sft.check_sft_rows(rows)
    check_sft.check_sft_rows(rows, test_id_prefix=None)  # no id check: only the split column counts
    check_sft.check_sft_rows(rows[:2] + rows[3:])


def test_test_id_prefix_follows_the_dataset_provenance(tmp_path):
    assert eval_id_prefix(None) == check_sft.DEFAULT_TEST_ID_PREFIX == "pb0-"
    write_provenance(tmp_path, {"benchmark": {"settings": {"eval_seed": 7, "train_seed": 8}}})
    assert eval_id_prefix(str(tmp_path)) == "pb7-"


@pytest.fixture
def unloadable_model(tmp_path) -> Path:
    """A folder that passes the existence check but that no tokenizer or model loads from:
    an error other than the load's proves the script stopped before loading."""
    folder = tmp_path / "config-only"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    return folder


def test_script_refuses_test_split_before_loading_the_model(tmp_path, unloadable_model):
    rows = make_sft_rows(4)
    rows[3]["split"] = "test"
    data = write_sft_folder(tmp_path / "leak", rows)
    with pytest.raises(SplitLeakError, match="row 3: split='test'"):
        sft.main(tiny_args(unloadable_model, data, tmp_path / "out", max_steps=1))
    with pytest.raises(SplitLeakError, match="dataset_train_split='test' is the evaluation split"):
        sft.main(tiny_args(unloadable_model, data, tmp_path / "out", max_steps=1, dataset_train_split="test"))


def test_script_validates_rows_before_loading_the_model(tmp_path, unloadable_model):
    rows = make_sft_rows(4)
    rows[0]["completion"] = [{"role": "assistant", "content": ""}]
    data = write_sft_folder(tmp_path / "bad", rows)
    with pytest.raises(check_sft.SFTFormatError, match=r"row 0: `completion`\[0\]: the 'assistant' message is empty"):
        sft.main(tiny_args(unloadable_model, data, tmp_path / "out", max_steps=1))


@pytest.mark.parametrize("model", ["{tmp}/no-such-model", "./no-such-model", "runs/a/merged", "no-org/no-such-model"])
def test_missing_model_fails_before_anything_loads(tmp_path, model):
    # conftest.py sets HF_HUB_OFFLINE, so a Hub id is looked up in the local cache only. The dataset does not
    # exist either: the model is checked first.
    with pytest.raises(FileNotFoundError, match=r"model_name_or_path=.*no-such-model|model_name_or_path=.*merged"):
        sft.main(tiny_args(model.format(tmp=tmp_path), tmp_path / "no-data", tmp_path / "out", max_steps=1))


def test_model_folder_without_config_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="has no config.json"):
        sft.main(tiny_args(tmp_path / "empty", tmp_path / "no-data", tmp_path / "out", max_steps=1))


def test_completion_only_loss_false_is_refused(tiny_model, sft_folder, tmp_path):
    with pytest.raises(ValueError, match="completion_only_loss=false would train on the prompt"):
        sft.main(tiny_args(tiny_model, sft_folder, tmp_path / "out", max_steps=1, completion_only_loss=False))


# --- max_length -----------------------------------------------------------------


def test_rows_over_max_length_stop_the_run_before_the_model_loads(tiny_model, long_folder, tmp_path):
    # max_dropped_share 0.0 (the recipe's): any row that does not fit stops the run.
    with pytest.raises(ValueError, match=(
        r"2 of 12 rows have a prompt of at least max_length=512 tokens and 1 more a completion that runs past it "
        r"\(rows \[3, 6, 9\]\): 25.0% of the training rows would be dropped, more than max_dropped_share=0.0. "
        r"Fix: raise max_length")):
        sft.main(tiny_args(tiny_model, long_folder, tmp_path / "out", max_steps=1))
    with pytest.raises(ValueError, match=r"more than max_dropped_share=0.2\b"):
        sft.main(tiny_args(tiny_model, long_folder, tmp_path / "out", max_steps=1, max_dropped_share=0.2))


def test_rows_over_max_length_are_counted_and_dropped_within_the_share(tiny_model, long_folder, tmp_path):
    trainer, _, report = sft.make_trainer(*parse(tiny_args(tiny_model, long_folder, tmp_path / "out",
                                                           max_dropped_share=0.25)))
    assert report.prompt_too_long == list(LONG_PROMPT_ROWS)
    assert report.completion_cut == [LONG_COMPLETION_ROW]
    assert report.metrics() == {"train_rows": 12, "train_rows_kept": 9, "train_rows_prompt_over_max_length": 2,
                                "train_rows_completion_over_max_length": 1}
    # TRL agrees: it drops and cuts nothing more (every kept row fits whole).
    assert len(trainer.train_dataset) == 9
    assert max(len(ids) for ids in trainer.train_dataset["input_ids"]) <= LENGTH_LIMIT
    assert all(labels[-2] != -100 for labels in trainer.train_dataset["labels"])  # the end of turn is trained


def test_max_length_measure_matches_trl(tiny_model, long_folder, tmp_path):
    """Without the script's filter TRL drops exactly the rows measure_lengths calls prompt_too_long."""
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    ds = load_dataset(str(long_folder), "sft")["train"].select_columns(["prompt", "completion"])
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    report = measure_lengths(ds, tokenizer, LENGTH_LIMIT)
    trainer = SFTTrainer(
        model=str(tiny_model),
        args=SFTConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, max_length=LENGTH_LIMIT, report_to="none"),
        train_dataset=ds,
        processing_class=tokenizer,
    )
    assert len(trainer.train_dataset) == len(ds) - len(report.prompt_too_long)


# --- what the trainer sees ---------------------------------------------------------


def test_loss_is_on_the_completion_only(tiny_model, sft_folder, tmp_path):
    trainer, tokenizer, _ = sft.make_trainer(*parse(tiny_args(tiny_model, sft_folder, tmp_path / "out")))
    assert trainer.args.completion_only_loss is True
    # Outcome, id and split columns never reach tokenization or collation.
    assert set(trainer.train_dataset.column_names) == {"prompt", "completion", "input_ids", "labels"}

    raw = load_dataset(str(sft_folder), "sft")["train"]
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(2)])
    assert set(batch) == {"input_ids", "attention_mask", "labels"}
    for i in range(2):
        prompt_len = len(tokenizer.apply_chat_template(raw[i]["prompt"], add_generation_prompt=True, tokenize=True,
                                                       return_dict=True)["input_ids"])
        labels, ids, mask = batch["labels"][i], batch["input_ids"][i], batch["attention_mask"][i].bool()
        assert (labels[:prompt_len] == -100).all()  # no loss on the system + user prompt
        trained = labels[labels != -100]
        assert torch.equal(trained, ids[prompt_len:][mask[prompt_len:]])  # every completion token is trained
        assert (labels[~mask] == -100).all()  # nor on padding
        # The JSON action and the end of the assistant turn, so the model learns to stop.
        assert tokenizer.decode(trained) == raw[i]["completion"][0]["content"] + IM_END + "\n"


# --- training, saving, resuming ---------------------------------------------------


@pytest.mark.slow
def test_training_loss_is_finite(resumed_run):
    _, second = resumed_run
    losses = [entry["loss"] for entry in second.log_history if "loss" in entry]
    assert losses and all(math.isfinite(x) for x in losses)
    assert math.isfinite(second.training_loss)
    results = json.loads((second.output_dir / "train_results.json").read_text())
    assert results["train_rows"] == results["train_rows_kept"] == 12


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
    # The loop reads examples off the checkpoints without unpickling training_args.bin.
    from poolbench_data.report.pilot import examples_seen

    per_step = json.loads((second.output_dir / "poolbench_batch.json").read_text())["examples_per_step"]
    assert examples_seen(second.output_dir / "checkpoint-2") == 2 * per_step
    assert examples_seen(second.output_dir) == 4 * per_step


@pytest.mark.slow
def test_lora_adapter_is_saved_and_trained(resumed_run):
    _, second = resumed_run
    weights = load_file(second.adapter_dir / "adapter_model.safetensors")
    lora_b = {k: v for k, v in weights.items() if "lora_B" in k}
    assert lora_b, f"no LoRA B matrices in {sorted(weights)[:5]}"
    # PEFT initialises B to zero, so any non-zero B is training; and it stays fp32 over the bf16 base.
    assert any(v.abs().max() > 0 for v in lora_b.values())
    assert all(v.dtype == torch.float32 for v in lora_b.values())
    assert json.loads((second.adapter_dir / "adapter_config.json").read_text())["peft_type"] == "LORA"


@pytest.mark.slow
def test_merged_model_keeps_the_update_loads_and_generates(resumed_run, tiny_model):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _, second = resumed_run
    # The dtype it trained in: the recipe's bf16, or float32 on a CPU without native bf16 (cpu_fp32_fallback).
    trained_in = second.metrics["train_dtype"]
    from poolbench_data.llm.model import cpu_has_native_bf16

    assert trained_in == ("bfloat16" if cpu_has_native_bf16() else "float32")
    base = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=getattr(torch, trained_in))
    merged = AutoModelForCausalLM.from_pretrained(second.merged_dir)
    # The recipe's merged_dtype: float32, so the update is not rounded to the bf16 grid.
    assert merged.dtype == torch.float32
    assert not any("lora" in name for name in merged.state_dict())
    assert merged.config.use_cache  # training switches it off; the saved model must not inherit that

    adapter = load_file(second.adapter_dir / "adapter_model.safetensors")
    config = json.loads((second.adapter_dir / "adapter_config.json").read_text())
    base_weights, merged_weights = base.state_dict(), merged.state_dict()
    checked = 0
    for key, lora_a in adapter.items():
        if "lora_A" not in key:
            continue
        lora_b = adapter[key.replace("lora_A", "lora_B")]
        name = key.removeprefix("base_model.model.").replace(".lora_A.weight", ".weight")
        update = lora_b.float() @ lora_a.float() * (config["lora_alpha"] / config["r"])
        got = merged_weights[name] - base_weights[name].float()
        assert update.abs().max() > 0
        assert torch.allclose(got, update, rtol=1e-4, atol=1e-6), name
        checked += 1
    assert checked and any("q_proj" in k for k in adapter)

    tokenizer = AutoTokenizer.from_pretrained(second.merged_dir)
    messages = make_sft_rows(1)[0]["prompt"]
    inputs = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    out = merged.generate(**inputs, max_new_tokens=8, do_sample=False)
    assert out.shape[1] > inputs["input_ids"].shape[1]


def test_full_fine_tuning_saves_the_model_only(tiny_model, sft_folder, tmp_path):
    result = sft.main(tiny_args(tiny_model, sft_folder, tmp_path / "full", max_steps=1, use_peft="false",
                                dtype="float32"))
    assert result.adapter_dir is None
    assert (result.merged_dir / "model.safetensors").is_file()
    assert math.isfinite(result.training_loss)


def test_a_checkpoint_at_max_steps_is_the_run_not_one_more_step(tiny_model, sft_folder, tmp_path, capsys,
                                                                 monkeypatch):
    """transformers checks max_steps only after a step: a run resumed from its last checkpoint (interrupted
    before merged/) must not train a step past its recipe (step 21 of 20)."""
    full = {"use_peft": "false", "dtype": "float32"}
    first = sft.main(tiny_args(tiny_model, sft_folder, tmp_path / "first", max_steps=2, **full))
    out = tmp_path / "interrupted"
    shutil.copytree(first.output_dir / "checkpoint-2", out / "checkpoint-2")
    again = sft.main(tiny_args(tiny_model, sft_folder, out, max_steps=2, **full))
    assert Path(again.resumed_from).name == "checkpoint-2" and again.global_step == 2
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-2"]
    saved = load_file(out / "checkpoint-2" / "model.safetensors")
    merged = load_file(again.merged_dir / "model.safetensors")
    assert saved.keys() == merged.keys() and all(torch.equal(saved[k], merged[k]) for k in saved)
    assert [e["step"] for e in again.log_history if "loss" in e] == [1, 2] and math.isfinite(again.training_loss)
    # A checkpoint past the command's max_steps is a mistake, said in one line before the model loads.
    def load(*args, **kwargs):
        raise AssertionError("the model loaded before the checkpoint was checked")

    monkeypatch.setattr(PreTrainedModel, "from_pretrained", classmethod(load))
    assert command_line(lambda: sft.main(tiny_args(tiny_model, sft_folder, out, max_steps=1, **full))) == 2
    err = capsys.readouterr().err
    assert "checkpoint-2 is at step 2, past max_steps=1. Fix: --max_steps 2 or more" in err
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-2"]


# --- recipes -------------------------------------------------------------------------



def test_bad_merged_dtype_in_a_recipe_is_an_error(tmp_path):
    recipe = tmp_path / "bad.yaml"
    recipe.write_text(CPU_RECIPE.read_text().replace("merged_dtype: float32", "merged_dtype: fp32"))
    with pytest.raises(ValueError, match="merged_dtype='fp32' is not a dtype"):
        parse(["--config", str(recipe)])


def test_max_dropped_share_must_be_a_share():
    with pytest.raises(ValueError, match=r"max_dropped_share=1.5 is not a share"):
        parse(["--config", str(CPU_RECIPE), "--max_dropped_share", "1.5"])

