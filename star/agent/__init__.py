"""The agent protocol: prompt, turn parsing, the episode environment (gym-like) and the trajectory record."""
