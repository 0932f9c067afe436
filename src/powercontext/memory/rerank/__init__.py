"""Rerank policies of Memory search. Pure domain: no inference library is imported here."""

from powercontext.memory.rerank.listwise import (
    LISTWISE_INSTRUCTIONS,
    OUTPUT_TOOL_NAME,
    POLICY_ID,
    ListwisePrompt,
    build_listwise_prompt,
)

__all__ = [
    "LISTWISE_INSTRUCTIONS",
    "OUTPUT_TOOL_NAME",
    "POLICY_ID",
    "ListwisePrompt",
    "build_listwise_prompt",
]
