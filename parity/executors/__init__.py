"""Executors: run a Launch on some platform and hand back the output buffers."""
