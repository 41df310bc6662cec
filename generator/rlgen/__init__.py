"""rlgen: generate and evolve a GitOps repository for VeRL RL jobs on ACK."""

__version__ = "0.1.0"
