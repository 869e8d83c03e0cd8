"""agents: players of Long Nardy (TD network, search, baseline bots).

``agents.bots`` (``random``'s companions ``race`` and ``heuristic``), ``agents.network`` (the TD
network), ``agents.search`` (0/1/2-ply ``SearchPlayer``), ``agents.td`` (checkpoints and the torch
evaluator), ``agents.onnx_policy`` (exported policies, numpy and onnxruntime only) and
``agents.registry`` (player names) and ``agents.levels`` (weaker levels of a network player). See docs/agents.md and docs/policy.md.
"""
