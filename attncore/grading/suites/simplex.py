"""02-simplex: written by the assignment author (in progress)."""
ASSIGNMENT = "02-simplex"
SPECS = []
