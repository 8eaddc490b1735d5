"""A CLI offers exactly the values its config takes: the choices come from the config's Literal fields.

A teacher CLI that typed its own list refused `--think route`, which the config had just gained, and
failed a run after its data stages (f1a811a); each row below would fail the same way on a copied list.
"""

from __future__ import annotations

import argparse
import typing

import pytest

from star.agent.config import AgentConfig
from star.cli import build_parser
from star.cli_args import literal_choices, optional_int
from star.evaluation.config import EvaluationConfig
from star.policy_eval.config import EvalConfig
from star.qa.config import RetrievalConfig
from star.sandbox.config import SandboxConfig
from star.teachers.config import BuiltinTeacherConfig, TeacherConfig
from star.training.rl_config import GRPOConfig

# (command, flag, config model, field)
FLAGS = [
    ("tools", "--style", SandboxConfig, "style"),
    ("evaluate", "--mode", EvaluationConfig, "mode"),
    ("evaluate", "--split", EvaluationConfig, "split"),
    ("teacher", "--teacher", TeacherConfig, "kind"),
    ("teacher", "--think", BuiltinTeacherConfig, "think"),
    ("teacher", "--style", AgentConfig, "style"),
    ("teacher", "--prompt", AgentConfig, "prompt"),
    ("teacher", "--eval-mode", AgentConfig, "eval_mode"),
    ("eval-agent", "--mode", EvalConfig, "mode"),
    ("eval-agent", "--prompt", EvalConfig, "prompt"),
    ("eval-agent", "--backend", EvalConfig, "backend"),
    ("grpo", "--algorithm", GRPOConfig, "algorithm"),
    ("qa-index", "--retriever", RetrievalConfig, "method"),
    ("eval-qa", "--retriever", RetrievalConfig, "method"),
]


def _action(command: str, flag: str) -> argparse.Action:
    parser = build_parser(only=command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    return next(a for a in sub._actions if flag in a.option_strings)


@pytest.mark.parametrize(("command", "flag", "model", "field"), FLAGS, ids=[f"{c} {f}" for c, f, _, _ in FLAGS])
def test_a_flag_offers_every_value_its_config_field_takes(command, flag, model, field):
    expected = set(typing.get_args(model.model_fields[field].annotation))
    assert expected, f"{model.__name__}.{field} is no Literal"
    assert set(_action(command, flag).choices) == expected


def test_literal_choices_reads_a_model_class_or_instance_and_refuses_a_field_that_is_no_literal():
    assert literal_choices(SandboxConfig, "style") == literal_choices(SandboxConfig(), "style")
    with pytest.raises(TypeError, match="seed"):
        literal_choices(SandboxConfig, "seed")


def test_optional_int_reads_none_as_dvc_renders_a_null_and_names_a_bad_value():
    assert [optional_int(t) for t in ("3", "None", "null", "")] == [3, None, None, None]
    with pytest.raises(argparse.ArgumentTypeError, match="'three'"):
        optional_int("three")
