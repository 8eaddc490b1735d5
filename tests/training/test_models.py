import json

from star.training.models import load_model, load_tokenizer, read_profile
from star.training.tokenizer import PROTOCOL_TAGS


def test_smoke_profile_is_a_tiny_qwen2_saved_by_path(smoke_dir):
    model = load_model(smoke_dir)
    n = sum(p.numel() for p in model.parameters())
    assert model.config.model_type == "qwen2"
    assert (model.config.hidden_size, model.config.num_hidden_layers) == (128, 4)
    assert (model.config.num_attention_heads, model.config.num_key_value_heads) == (4, 2)
    assert 0.8e6 < n < 1.5e6
    assert read_profile(smoke_dir) == "smoke"
    assert json.loads((smoke_dir / "star_profile.json").read_text())["parameters"] == n


def test_own_tokenizer_has_chatml_and_protocol_tags_as_single_tokens(smoke_tokenizer):
    tok = smoke_tokenizer
    assert 1500 < len(tok) <= 2048
    for tag in ["<|im_start|>", "<|im_end|>", *PROTOCOL_TAGS]:
        assert len(tok(tag, add_special_tokens=False)["input_ids"]) == 1, tag
    assert tok.eos_token == "<|im_end|>"
    text = '<think>ok</think>\n<tool_call>{"name": "SearchCity", "arguments": {"state": "Texas"}}</tool_call>'
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == text  # byte-level: lossless round trip
    assert len(ids) < len(text) / 2  # and it actually merges travel/protocol text


def test_tokenizer_reloads_identically(smoke_dir, smoke_tokenizer):
    again = load_tokenizer(smoke_dir)
    text = "Please plan a trip from Austin to Denver on 2022-03-16."
    assert again(text)["input_ids"] == smoke_tokenizer(text)["input_ids"]


def test_build_model_takes_the_smoke_shape_and_tokenizer_world_from_params(tmp_path):
    import yaml

    from star.cli import main
    from star.sandbox.database import load_database
    from star.training.tokenizer import build_tokenizer

    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"model": {"profile": "smoke", "smoke": {
        "hidden_size": 64, "intermediate_size": 192, "num_hidden_layers": 2, "vocab_size": 1024,
        "tokenizer_docs": 200, "tokenizer_world": "sandbox"}}}))
    sandbox = tmp_path / "sandbox"
    assert main(["sandbox", "--db", "generated:3", "--out", str(sandbox)]) == 0
    out = tmp_path / "base"
    assert main(["build-model", "--profile", "smoke", "--config", str(params), "--db", str(sandbox),
                 "--out", str(out)]) == 0
    model = load_model(out)
    assert (model.config.hidden_size, model.config.num_hidden_layers, model.config.intermediate_size) == (64, 2, 192)
    # the tokenizer learned the sandbox's text, not the default generated world's (BPE's merge ties make two
    # trainings on one text differ in a token or two, so: nearer the sandbox's vocabulary than the default's)
    got = set(load_tokenizer(out).get_vocab())
    sandbox_vocab = set(build_tokenizer(load_database(str(sandbox)), vocab_size=1024, n_docs=200).get_vocab())
    default_vocab = set(build_tokenizer(None, vocab_size=1024, n_docs=200).get_vocab())
    assert len(got ^ sandbox_vocab) < len(got ^ default_vocab) / 4
    # a sandbox tokenizer with no sandbox given is an error naming the setting, and writes nothing
    assert main(["build-model", "--profile", "smoke", "--config", str(params), "--out", str(tmp_path / "b2")]) == 2
    assert not (tmp_path / "b2").exists()
