"""The checks every training set passes before a run spends time on a model: DPO pairs and GRPO boards
(`pairs`), SFT demonstrations (`demos`)."""
