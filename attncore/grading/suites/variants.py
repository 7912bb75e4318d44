"""06-variants: written by the assignment author (in progress)."""
ASSIGNMENT = "06-variants"
SPECS = []
