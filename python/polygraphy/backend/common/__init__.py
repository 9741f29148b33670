"""Loaders shared by backends."""
from polygraphy._core import BytesFromPath, bytes_from_path

__all__ = ["BytesFromPath", "bytes_from_path"]
