"""The Agent Reputation Bureau service: witnessed evidence in, signed aggregates out."""

__version__ = "0.1.0"
