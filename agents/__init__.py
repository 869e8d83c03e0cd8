"""agents: players of Long Nardy (TD network, search, baseline bots)."""
