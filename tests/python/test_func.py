"""polygraphy.func.extend: the decorated function receives the loader's results; None keeps them (issue 20)."""
import unittest

import numpy as np

from polygraphy_test_support import IDENTITY, require_models

require_models()

from polygraphy import func  # noqa: E402
from polygraphy.backend.onnx import OnnxFromPath  # noqa: E402
from polygraphy.backend.ref import RefRunner, SessionFromOnnx  # noqa: E402
from polygraphy.exception import PolygraphyUsageError  # noqa: E402


class ExtendTest(unittest.TestCase):
    def test_none_returns_the_extended_value(self):
        seen = []

        @func.extend(lambda: 3)
        def observe(value):
            seen.append(value)

        self.assertEqual(observe(), 3)
        self.assertEqual(seen, [3])

    def test_return_value_replaces_the_extended_value(self):
        @func.extend(lambda: 3)
        def double(value):
            return value * 2

        self.assertEqual(double(), 6)

    def test_tuple_is_unpacked(self):
        @func.extend(lambda: (1, 2))
        def add(first, second):
            return first + second

        self.assertEqual(add(), 3)

    def test_extended_function_returning_none_calls_a_function_without_parameters(self):
        calls = []

        @func.extend(lambda: None)
        def after():
            calls.append("after")

        self.assertIsNone(after())
        self.assertEqual(calls, ["after"])

    def test_arguments_are_forwarded_and_seen_before_the_results(self):
        @func.extend(lambda x, scale=1: x * scale)
        def check(x, scale, result):
            return (x, scale, result)

        self.assertEqual(check(5, scale=3), (5, 3, 15))

    def test_parameter_count_mismatch_is_a_usage_error(self):
        @func.extend(lambda: (1, 2))
        def takes_one(value):
            return value

        with self.assertRaisesRegex(PolygraphyUsageError, r"takes_one\(\) takes 1 parameter\(s\) but .* returned 2"):
            takes_one()

    def test_extended_model_loader_feeds_a_runner(self):
        @func.extend(OnnxFromPath(IDENTITY))
        def load_model(model):
            model.graph_name = "MyIdentity"

        model = load_model()
        self.assertEqual(model.graph_name, "MyIdentity")

        with RefRunner(SessionFromOnnx(load_model)) as runner:
            data = np.ones((1, 1, 2, 2), dtype=np.float32)
            self.assertTrue(np.array_equal(runner.infer({"x": data})["y"], data))

    def test_exception_in_the_decorated_function_propagates(self):
        @func.extend(OnnxFromPath(IDENTITY))
        def broken(model):
            raise ValueError("refused")

        with self.assertRaisesRegex(ValueError, "refused"):
            RefRunner(SessionFromOnnx(broken)).activate()


if __name__ == "__main__":
    unittest.main()
