"""envcheck: why is GPU training slow here, and what fix buys the most."""

__version__ = "0.1.0"
