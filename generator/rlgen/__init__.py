"""rlgen: generate and evolve a GitOps repository for VeRL RL jobs on ACK."""

# Written by setuptools-scm from the Git tag whenever rlgen is built or installed (pyproject.toml).
from rlgen._version import __version__

__all__ = ["__version__"]
