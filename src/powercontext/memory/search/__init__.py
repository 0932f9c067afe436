"""Query time: the search pipeline, one pure stage a module.

analyze -> modes -> channels (storage) -> admission -> fusion -> participants -> rerank_trace
-> ranks; `pipeline.SearchPipeline` wires them. Write time lives in `memory/indexing/`.
"""
