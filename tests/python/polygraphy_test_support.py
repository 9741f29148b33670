"""Shared set-up of the Python tests: the example models' folder, and a skip when ONNX-Runtime is absent."""
import os
import sys
import unittest

MODELS = os.environ.get("POLYGRAPHY_EXAMPLE_MODELS", "")
IDENTITY = os.path.join(MODELS, "identity.onnx")
EXAMPLE_CNN = os.path.join(MODELS, "example_cnn.onnx")


def require_models():
    """Exits with 77 (CTest: skipped) when the example models were not generated."""
    if not os.path.isfile(IDENTITY):
        print(f"example models not found in '{MODELS}' (set POLYGRAPHY_EXAMPLE_MODELS): skipped")
        sys.exit(77)


def onnxrt_available():
    """Whether an ONNX-Runtime session can be created in this build."""
    from polygraphy.backend.onnxrt import SessionFromOnnx
    from polygraphy.exception import PolygraphyException

    try:
        SessionFromOnnx(IDENTITY)()
        return True
    except PolygraphyException:
        return False


def skip_without_onnxrt(test):
    """Decorator: skips a test when ONNX-Runtime cannot be loaded."""
    return unittest.skipUnless(onnxrt_available(), "ONNX-Runtime is not available")(test)
