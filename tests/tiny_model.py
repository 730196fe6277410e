"""A tiny, randomly initialised chat model for tests: nothing is downloaded.

`build_tiny_model(path)` writes a Hugging Face folder (config, weights,
tokenizer, ChatML chat template) that loads with `AutoModelForCausalLM` /
`AutoTokenizer`, trains with TRL in seconds on a CPU and, by its shape, also
loads in vLLM: a `LlamaForCausalLM` with head_dim 64 (vLLM's CPU attention
rejects small head dims such as 16).

The tokenizer is a byte-level BPE trained here with the `tokenizers` library
on a small built-in corpus (JSON shot actions, numbers, English pool words), so
it can encode any text; the weights are random, so the model's outputs are
noise. Both are deterministic for a given `seed`.
"""

from __future__ import annotations

import random
from pathlib import Path

# ChatML, the format of SmolLM2-Instruct (the embedded default model), so the
# tiny model renders prompts the same way the real one does.
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
ENDOFTEXT = "<|endoftext|>"
PAD = "<|pad|>"
SPECIAL_TOKENS = [ENDOFTEXT, IM_START, IM_END, PAD]

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

_WORDS = """
You are an expert eight-ball pool player. Choose one shot and respond with ONLY
JSON. The table has width 1.0668 m and length 2.1336 m. Ball radius 0.02858 m,
ball diameter 0.05715 m. Cue ball C at x y. Your group: SOLIDS (balls 1-7) or
STRIPES (balls 9-15). You MUST hit one of these first and ideally pot it. Do
not hit the 8-ball first. Opponent balls are blocked. Pockets at the corners
and the sides. The ghost ball sits one diameter behind the object ball on the
line from the pocket through the ball centre. Aim the cue ball at the ghost
ball. Prefer a small cut angle, a short path and a clear line of sight. The
distance from the cue is given in metres. target ball, target pocket, aim angle
in degrees, cue speed in metres per second. The shot was legal; the ball was
potted; a foul: scratch, wrong first contact, no contact. Sure! Let me think
through this step by step. First, I need to pick the best ball.
""".split()

_KEYS = ["target_ball", "target_pocket", "aim_angle_deg", "cue_speed"]


def _corpus() -> list[str]:
    """Text the BPE is trained on: fixed, so the tokenizer never depends on the seed."""
    rng = random.Random(0)
    lines = [" ".join(_WORDS), "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15"]
    for _ in range(400):
        ball = rng.randint(1, 15)
        pocket = [round(rng.choice([-0.0295, 1.0963, -0.0685, 1.1353]), 4), round(rng.uniform(0, 2.2), 4)]
        lines.append(
            '{"%s": "%d", "%s": [%s, %s], "%s": %.1f, "%s": %.1f}'
            % (_KEYS[0], ball, _KEYS[1], pocket[0], pocket[1], _KEYS[2], rng.uniform(0, 360), _KEYS[3], rng.uniform(0.5, 9))
        )
        lines.append(
            "Ball %d: x=%.4f, y=%.4f (distance from cue = %.3fm)"
            % (ball, rng.uniform(0, 1.0668), rng.uniform(0, 2.1336), rng.uniform(0, 2.4))
        )
        lines.append(" ".join(rng.sample(_WORDS, 12)))
    return lines


def build_tokenizer(vocab_size: int = 1024):
    """Byte-level BPE with ChatML special tokens, as a `PreTrainedTokenizerFast`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        # Every byte gets a token, so no text is ever unknown.
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=ENDOFTEXT,
        eos_token=IM_END,  # a chat model stops at the end of its turn
        unk_token=ENDOFTEXT,
        pad_token=PAD,  # distinct from eos so padding never reads as a stop
        chat_template=CHATML_TEMPLATE,
        model_max_length=2048,
    )


def build_tiny_model(
    path: str | Path,
    seed: int = 0,
    vocab_size: int = 1024,
    hidden_size: int = 128,
    layers: int = 2,
    heads: int = 2,
    max_position_embeddings: int = 2048,
) -> Path:
    """Write a random tiny `LlamaForCausalLM` + ChatML tokenizer to `path`.

    `vocab_size` is the BPE target; the model's embedding matches the trained
    tokenizer exactly (`len(tokenizer)`), so no id is ever generated that the
    tokenizer cannot decode. Returns `path`.
    """
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    if hidden_size % heads:
        raise ValueError(f"hidden_size={hidden_size} must be a multiple of heads={heads}")
    head_dim = hidden_size // heads
    if head_dim < 32:
        raise ValueError(
            f"head_dim={head_dim} (hidden_size/heads) is too small for vLLM's CPU attention; "
            "use head_dim 64, e.g. hidden_size=128, heads=2"
        )

    path = Path(path)
    tokenizer = build_tokenizer(vocab_size)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        head_dim=head_dim,
        max_position_embeddings=max_position_embeddings,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    # A private RNG scope: the caller's global torch RNG state is left as it was.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
