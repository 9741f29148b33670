"""ONNX-Runtime: SessionFromOnnx builds a session from a path, bytes or a model loader; OnnxrtRunner runs it."""
from polygraphy._core import OnnxrtRunner
from polygraphy._core import OnnxrtSessionFromOnnx as SessionFromOnnx

__all__ = ["OnnxrtRunner", "SessionFromOnnx"]
