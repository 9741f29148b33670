"""Structures shared by the whole API."""
from polygraphy._core import MetaData, TensorMetadata

__all__ = ["MetaData", "TensorMetadata"]
