"""Chat templates for tool-use conversations: SFT's must mark the model's turns ({% generation %}) so the loss
stays off the prompt and the tool's answers; GRPO's must render tool calls and their answers, parsed as Hermes
<tool_call> blocks."""

from __future__ import annotations

from pathlib import Path


def check_tool_template(training_args) -> None:
    """Tool conversations hold the prompt and the tool's answers between the model's turns: only a chat
    template that marks those turns ({% generation %}) keeps the loss off the rest."""
    from trl.chat_template_utils import has_generation_markers

    if not training_args.assistant_only_loss:
        raise ValueError(
            "these rows are tool-use conversations (`messages`) and assistant_only_loss is false: the loss would "
            "fall on the prompt and the tool's answers. Fix: set assistant_only_loss: true and chat_template_path "
            "(training/recipes/sft-tools-smollm2-135m-cpu.yaml does)."
        )
    path = training_args.chat_template_path
    if path is not None and Path(path).suffix in (".jinja", ".j2"):
        if not Path(path).is_file():
            raise FileNotFoundError(f"chat_template_path {path!r} does not exist. Fix: give the template file's "
                                    "path (training/templates/smollm2-chatml-tools.jinja for SmolLM2).")
        if not has_generation_markers(Path(path).read_text()):
            raise ValueError(f"chat_template_path {path!r} has no {{% generation %}} markers, so no turn would be "
                             "trained. Fix: mark the model's turns (see training/templates/).")


def use_tool_template(tokenizer, path: str | None) -> None:
    """Give the tokenizer a chat template that renders tool calls, and the parser of its <tool_call> turns."""
    if path is None:
        return  # the model's own template; TRL checks it and knows its parser, or says it does not
    from trl.chat_template_utils import qwen3_template, supports_tool_calling

    if Path(path).suffix not in (".jinja", ".j2") or not Path(path).is_file():
        raise FileNotFoundError(f"tool_chat_template {path!r} is not a .jinja file. Fix: give the template's path "
                                "(training/templates/smollm2-chatml-tools.jinja for SmolLM2).")
    tokenizer.chat_template = Path(path).read_text()
    if not supports_tool_calling(tokenizer):
        raise ValueError(f"tool_chat_template {path!r} does not render a tool call and its answer. Fix: render "
                         "assistant tool_calls and tool messages (see training/templates/smollm2-chatml-tools.jinja).")
    # Qwen's parser: ChatML turns with Hermes <tool_call>{json}</tool_call> blocks, the form the template writes.
    tokenizer.response_template = qwen3_template
