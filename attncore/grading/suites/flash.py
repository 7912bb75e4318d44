"""05-flash: written by the assignment author (in progress)."""
ASSIGNMENT = "05-flash"
SPECS = []
