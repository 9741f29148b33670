"""The runner interface; subclass BaseRunner to add a backend in Python."""
from polygraphy._core import BaseRunner

__all__ = ["BaseRunner"]
