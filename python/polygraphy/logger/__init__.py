"""The process-wide logger, G_LOGGER (INFO by default in Python, as in Polygraphy)."""
from polygraphy._core import G_LOGGER, Logger

__all__ = ["G_LOGGER", "Logger"]
