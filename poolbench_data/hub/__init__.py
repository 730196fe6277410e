"""The Hugging Face dataset: features, per-row functions, the local folder in
Hub layout, its card, and the one-commit push."""
