"""A BaseRunner subclass written in Python takes part in Comparator.run like built-in runners (issue 20)."""
import unittest

import numpy as np

from polygraphy_test_support import IDENTITY, require_models

require_models()

from polygraphy.backend.base import BaseRunner  # noqa: E402
from polygraphy.backend.ref import RefRunner, SessionFromOnnx  # noqa: E402
from polygraphy.common import TensorMetadata  # noqa: E402
from polygraphy.comparator import Comparator, DataLoader  # noqa: E402
from polygraphy.exception import PolygraphyException, PolygraphyInputError  # noqa: E402


class NumpyIdentityRunner(BaseRunner):
    """The identity model in numpy, with an optional bias to make it disagree."""

    def __init__(self, bias=0.0):
        super().__init__(prefix="numpy-identity")
        self.bias = bias
        self.activations = 0
        self.deactivations = 0

    def activate_impl(self):
        self.activations += 1

    def deactivate_impl(self):
        self.deactivations += 1

    def get_input_metadata_impl(self):
        return TensorMetadata().add("x", np.float32, (1, 1, 2, 2))

    def infer_impl(self, feed_dict):
        return {"y": feed_dict["x"] + np.float32(self.bias)}


class CustomRunnerTest(unittest.TestCase):
    def test_direct_use(self):
        runner = NumpyIdentityRunner()
        self.assertTrue(runner.name.startswith("numpy-identity"))
        with runner:
            outputs = runner.infer({"x": np.full((1, 1, 2, 2), 3, np.float32)})
            self.assertTrue(np.array_equal(outputs["y"], np.full((1, 1, 2, 2), 3, np.float32)))
            # The base class still checks the feed against get_input_metadata_impl().
            with self.assertRaises(PolygraphyInputError):
                runner.infer({"x": np.ones((1, 1, 2, 2), np.float64)})
        self.assertEqual((runner.activations, runner.deactivations), (1, 1))

    def test_in_comparator(self):
        custom = NumpyIdentityRunner()
        reference = RefRunner(SessionFromOnnx(IDENTITY))
        results = Comparator.run([custom, reference], data_loader=DataLoader(iterations=2))
        self.assertEqual(results.keys(), [custom.name, reference.name])
        self.assertEqual(custom.activations, 1)
        self.assertTrue(bool(Comparator.compare_accuracy(results)))

        wrong = NumpyIdentityRunner(bias=1.0)
        results = Comparator.run([wrong, RefRunner(SessionFromOnnx(IDENTITY))])
        self.assertFalse(bool(Comparator.compare_accuracy(results)))

    def test_arrays_cross_without_copies(self):
        seen = {}

        class Echo(NumpyIdentityRunner):
            def infer_impl(self, feed_dict):
                seen["x"] = feed_dict["x"]
                return {"y": feed_dict["x"]}

        data = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
        with Echo() as runner:
            outputs = runner.infer({"x": data})
            # The C-contiguous input reaches infer_impl as the caller's memory, and the output comes back so.
            self.assertTrue(np.shares_memory(seen["x"], data))
            self.assertTrue(np.shares_memory(outputs["y"], data))
            # A non-contiguous view is copied into a contiguous array first.
            wide = np.zeros((1, 1, 2, 4), np.float32)
            outputs = runner.infer({"x": wide[..., ::2]})
            self.assertFalse(np.shares_memory(seen["x"], wide))
            self.assertTrue(np.array_equal(outputs["y"], wide[..., ::2]))
        # The arrays keep their buffers alive after the runner, the feed and the input are gone.
        del runner, data, seen
        self.assertTrue(np.array_equal(outputs["y"], np.zeros((1, 1, 2, 2), np.float32)))

    def test_errors_in_python_methods(self):
        class Broken(NumpyIdentityRunner):
            def infer_impl(self, feed_dict):
                raise RuntimeError("backend exploded")

        class BadOutputs(NumpyIdentityRunner):
            def infer_impl(self, feed_dict):
                return [1, 2]

        class NoMetadata(BaseRunner):
            def infer_impl(self, feed_dict):
                return {}

        with Broken() as runner:
            with self.assertRaises(RuntimeError) as error:
                runner.infer({"x": np.ones((1, 1, 2, 2), np.float32)})
            self.assertIn("backend exploded", str(error.exception))
        with BadOutputs() as runner:
            with self.assertRaises(PolygraphyInputError):
                runner.infer({"x": np.ones((1, 1, 2, 2), np.float32)})
        with NoMetadata() as runner:
            with self.assertRaises(RuntimeError):
                runner.get_input_metadata()


if __name__ == "__main__":
    unittest.main()
