"""A2A 1.0 through a2a-sdk: agent cards, tasks as mail, and outside A2A agents."""
