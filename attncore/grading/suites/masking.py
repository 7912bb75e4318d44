"""03-masking: written by the assignment author (in progress)."""
ASSIGNMENT = "03-masking"
SPECS = []
