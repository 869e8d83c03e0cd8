"""train: the application layer: self-play, evaluation, export and the ``nardy`` command."""
