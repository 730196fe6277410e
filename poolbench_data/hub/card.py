"""Render the dataset card (card_template.md, shipped inside the package) with
the YAML `datasets` reads, and the benchmark's eval.yaml beside it (the Hub's
way to declare a dataset a benchmark: report.eval_results)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from poolbench_data.hub.features import features
from poolbench_data.hub.folder import layout, read_provenance

CARD_TEMPLATE = "card_template.md"  # package data of poolbench_data.hub
EVAL_YAML = "eval.yaml"  # the benchmark's leaderboards, read by the Hub at the repo root


def card_yaml(root: Path) -> str:
    import pyarrow.parquet as pq
    from datasets import DatasetInfo, SplitDict, SplitInfo
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCardData

    data = DatasetCardData(
        license="apache-2.0", pretty_name="PoolBench", language=["en"],
        task_categories=["text-generation", "reinforcement-learning"],
        tags=["physics", "billiards", "pooltool", "benchmark", "preference", "dpo", "llm-evaluation"],
    )
    configs, infos = {}, {}
    for config, splits in layout(root).items():
        configs[config] = {"data_files": [{"split": s, "path": f"data/{config}/{s}-*.parquet"} for s in splits]}
        split_dict = SplitDict()
        for s, paths in splits.items():
            n = sum(pq.ParquetFile(Path(root) / p).metadata.num_rows for p in paths)
            split_dict.add(SplitInfo(name=s, num_examples=n))
        infos[config] = DatasetInfo(features=features(config), splits=split_dict)
    DatasetInfosDict(infos).to_dataset_card_data(data)
    MetadataConfigs(configs).to_dataset_card_data(data)
    return data.to_yaml()


def _counts_table(root: Path) -> str:
    import pyarrow.parquet as pq

    lines = ["| config | split | rows |", "|---|---|---|"]
    for config, splits in layout(root).items():
        for s, paths in splits.items():
            n = sum(pq.ParquetFile(Path(root) / p).metadata.num_rows for p in paths)
            lines.append(f"| `{config}` | `{s}` | {n} |")
    return "\n".join(lines)


def render_card(root: Path) -> str:
    body = resources.files("poolbench_data.hub").joinpath(CARD_TEMPLATE).read_text(encoding="utf-8")
    prov = read_provenance(root)
    body = body.replace("{{counts}}", _counts_table(root))
    body = body.replace("{{provenance}}", json.dumps(prov, indent=2, sort_keys=True))
    body = body.replace("{{results}}", prov.get("results_table", "(not built)"))
    return f"---\n{card_yaml(root)}\n---\n\n{body}"


def render_eval_yaml() -> str:
    import yaml

    from poolbench_data.report.eval_results import benchmark, check_benchmark

    return yaml.safe_dump(check_benchmark(benchmark()), sort_keys=False, allow_unicode=True, width=120)


def write_card(root: Path) -> Path:
    """README.md (the card) and eval.yaml at the folder's root."""
    path = Path(root) / "README.md"
    path.write_text(render_card(root))
    (Path(root) / EVAL_YAML).write_text(render_eval_yaml())
    return path
