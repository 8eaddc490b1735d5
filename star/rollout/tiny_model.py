"""A tiny random Qwen2 policy with its own byte-level BPE tokenizer, built offline in a second.

For tests and the rollout benchmark: real transformers model and tokenizer classes, a ChatML
chat template, no hub access. (The training package builds the `smoke` profile for training.)
"""

from __future__ import annotations

from pathlib import Path

from star.agent.prompt import system_prompt
from star.sandbox.tools import TOOL_SPECS

CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def _corpus() -> list[str]:
    texts = [system_prompt("compact"), system_prompt("official")]
    texts += [f'<think>I search.</think><tool_call>{{"name": "{s["name"]}", "arguments": {{}}}}</tool_call>'
              for s in TOOL_SPECS]
    texts += ["<tool_response>Error: Current tool SearchFlight is not available.</tool_response>",
              "<answer>Day 1:\nCurrent City: from A to B\n</answer>"]
    return texts


def build_tokenizer(vocab_size: int = 512):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(_corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   bos_token=None, unk_token=None)
    fast.chat_template = CHATML_TEMPLATE
    return fast


def build_tiny_model(out_dir: str | Path | None = None, hidden: int = 64, layers: int = 2, vocab_size: int = 512,
                     seed: int = 0):
    """(model, tokenizer); saved to `out_dir` (loadable with from_pretrained) when given."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tokenizer = build_tokenizer(vocab_size)
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=hidden * 2,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=32768, tie_word_embeddings=True,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=None)
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config).eval()
    if out_dir is not None:
        out_dir = Path(out_dir)
        model.save_pretrained(out_dir)
        tokenizer.save_pretrained(out_dir)
    return model, tokenizer
