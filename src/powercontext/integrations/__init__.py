"""Adapters from PowerContext to agent frameworks, each over the SDK (so they work against any
server) and each behind its own optional extra."""
