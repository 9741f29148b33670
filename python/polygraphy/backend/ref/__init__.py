"""The built-in CPU runtime: SessionFromOnnx prepares a model; RefRunner runs it."""
from polygraphy._core import RefRunner
from polygraphy._core import RefSessionFromOnnx as SessionFromOnnx

__all__ = ["RefRunner", "SessionFromOnnx"]
