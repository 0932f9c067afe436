"""Inference adapters: embedding models (and, in `pydantic_ai`, remote generation).

Importing this package loads no model and no provider SDK; adapters import their heavy
dependencies on first use.
"""
