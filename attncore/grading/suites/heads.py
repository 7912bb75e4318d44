"""04-heads: written by the assignment author (in progress)."""
ASSIGNMENT = "04-heads"
SPECS = []
