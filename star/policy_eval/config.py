"""Policy evaluation's settings (`star eval-agent`), one place per default."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from star.agent.config import EvalMode
from star.rollout.config import BackendName, VLLMConfig
from star.sandbox.config import DEFAULTS as SANDBOX
from star.sandbox.config import Prompt


class EvalConfig(BaseModel):
    """`star eval-agent`: running a policy on a query set (recipe §5)."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    split: str = "validation"
    """Name of the query set evaluated (for reports)."""
    temperature: float = Field(0.6, ge=0.0)
    """Sampling temperature of the evaluated policy."""
    top_p: float = Field(0.95, gt=0.0, le=1.0)
    """Nucleus mass of the evaluated policy."""
    max_context: int = Field(32000, ge=16)
    """Context limit in tokens at inference."""
    tool_budget: int = Field(60, ge=1)
    """Tool-call budget per episode."""
    days: int | None = Field(None, ge=1)
    """Evaluate only the queries of this trip length in days (None = every length); before `limit`."""
    limit: int | None = None
    """Evaluate only the first N queries (None = all)."""
    samples: int = Field(1, ge=1)
    """Episodes per query; every rate and mean reward is over all of them (avg@k)."""
    mode: EvalMode = "official"
    """Evaluator mode of the reported numbers."""
    seed: int = 0
    """Base sampling seed."""
    prompt: Prompt = SANDBOX.prompt
    """System prompt of each episode; left unset in a params file, its `sandbox.prompt` (the one the policy trained with)."""
    max_new_tokens: int = Field(2048, ge=1)
    """Longest single assistant turn."""
    backend: BackendName = "transformers"
    """Generation backend of a local model: transformers, vllm, or auto (vLLM where it is installed)."""
    batch: int = Field(8, ge=1)
    """Episodes decoded together (vLLM's throughput on CPU grows with it: 42 tok/s at 8, 65 at 32)."""
    vllm: VLLMConfig = Field(default_factory=VLLMConfig)
    """vLLM engine options (backend vllm, or auto where vLLM is installed)."""
