"""Templates rendered with cookiecutter (the skeleton of every generated repository)."""
