"""The search pipeline, one pure stage a module.

analyze -> modes -> admission -> fusion -> ranks; `memory/searching.py` wires them.
"""
