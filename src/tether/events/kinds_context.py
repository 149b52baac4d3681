"""Event kinds of the model's context: its compactions (the sections put into it, ``context.section``, are in
``kinds_kernel``).

- ``context.compacted``  older turns replaced by a summary (made by the model or a deterministic digest),
  with the invariant block (plan tasks, beliefs, failures, diff …) as it stood, so that the context is
  rebuilt from the log alone and never summarised again on resume or replay (docs/context.md).
"""

from typing import Literal

from tether.plain import Field

from .payload import Payload, new_list, register

CompactionMethod = Literal["model", "digest"]


@register("context.compacted")
class ContextCompacted(Payload):
    turn: int = Field(description="The turn whose model call the compaction made room for.")
    first_seq: int = Field(ge=0, description="The first event whose messages the summary replaces.")
    last_seq: int = Field(ge=0, description="The last event whose messages the summary replaces.")
    method: CompactionMethod
    summary: str = Field(description="What replaced the older turns (the model's words or the digest).")
    invariants: str = Field(description="The invariant block kept whole: tasks, beliefs, failures, diff.")
    before_tokens: int = Field(ge=0, description="The prompt's tokens before compaction (see counter).")
    after_tokens: int = Field(ge=0, description="The prompt's tokens after compaction.")
    counter: str = Field(description="What counted the tokens: a tokenizer's encoding or the estimate.")
    fallback: str = Field("", description="Why the digest was used instead of the model ('' for model summaries).")
    model: str = Field("", description="The model that wrote the summary ('' for a digest).")
    input_tokens: int = Field(0, ge=0, description="The summary call's input tokens (counted against budgets).")
    output_tokens: int = Field(0, ge=0, description="The summary call's output tokens.")
    cost_usd: float = Field(0.0, ge=0)
    untrusted: list[str] = Field(
        default_factory=new_list,
        description="Tools with untrusted output among the covered calls (the summary says so).",
    )
