"""Four difficulty levels of the shipped player, as players any nardy command can name:

    nardy play --against examples/levels.py:easy
    nardy ladder random race heuristic examples/levels.py:medium default --games 400

``agents.levels`` makes them (docs/agents.md, "Difficulty levels"): the shipped network picks
each play at random by its equity, more loosely the easier the level.
"""

from agents.levels import level

easy = level("easy")
medium = level("medium")
hard = level("hard")
expert = level("expert")
