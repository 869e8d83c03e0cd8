"""train: the application layer: self-play, evaluation, export and the ``nardy`` command.

``train.evaluate`` (paired-dice matches and ladders), ``train.config`` and ``train.trainer``
(self-play TD training on Ray), ``train.export`` (ONNX), ``train.hint`` and ``train.moves``
(ranked and legal plays), ``train.cli`` (the command). See docs/training.md and docs/agents.md.
"""
