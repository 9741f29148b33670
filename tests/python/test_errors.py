"""Library errors become Python exceptions with the library's one-line messages, never a crash (issue 20)."""
import os
import unittest

import numpy as np

from polygraphy_test_support import IDENTITY, require_models

require_models()

from polygraphy.backend.onnx import OnnxFromPath, onnx_from_path  # noqa: E402
from polygraphy.backend.ref import RefRunner, SessionFromOnnx  # noqa: E402
from polygraphy.comparator import Comparator, RunResults  # noqa: E402
from polygraphy.exception import (  # noqa: E402
    PolygraphyException,
    PolygraphyFormatError,
    PolygraphyInputError,
)
from polygraphy.logger import G_LOGGER  # noqa: E402


def identity_runner():
    return RefRunner(SessionFromOnnx(OnnxFromPath(IDENTITY)))


class ErrorTest(unittest.TestCase):
    def assert_one_line(self, error):
        message = str(error.exception)
        self.assertTrue(message)
        self.assertEqual(message.splitlines()[0].strip(), message.splitlines()[0])

    def test_wrong_dtype_in_feed(self):
        with identity_runner() as runner:
            with self.assertRaises(PolygraphyInputError) as error:
                runner.infer({"x": np.ones((1, 1, 2, 2), np.int64)})
        self.assertIn("x", str(error.exception))
        self.assertIn("int64", str(error.exception))
        self.assert_one_line(error)

    def test_wrong_shape_in_feed(self):
        with identity_runner() as runner:
            with self.assertRaises(PolygraphyInputError) as error:
                runner.infer({"x": np.ones((2, 3), np.float32)})
        self.assertIn("(2, 3)", str(error.exception))

    def test_missing_and_non_array_inputs(self):
        with identity_runner() as runner:
            with self.assertRaises(PolygraphyInputError):
                runner.infer({})
            with self.assertRaises(PolygraphyInputError) as error:
                runner.infer({"x": {"not": "an array"}})
            self.assertIn("Input 'x' must be a numpy array, got dict", str(error.exception))
            with self.assertRaises(PolygraphyInputError):
                runner.infer([1, 2, 3])

    def test_feed_with_a_non_string_name(self):
        with identity_runner() as runner:
            with self.assertRaises(PolygraphyInputError) as error:
                runner.infer({1: np.ones((1, 1, 2, 2), np.float32)})
        self.assertIn("Input names must be strings, got int", str(error.exception))

    def test_python_errors_inside_the_comparator_come_back_unchanged(self):
        def broken_loader():
            raise KeyError("no such model in the registry")

        with self.assertRaises(KeyError):
            Comparator.run([RefRunner(SessionFromOnnx(broken_loader))])

        from polygraphy.backend.base import BaseRunner
        from polygraphy.common import TensorMetadata

        class Exploding(BaseRunner):
            def get_input_metadata_impl(self):
                return TensorMetadata().add("x", np.float32, (1, 1, 2, 2))

            def infer_impl(self, feed_dict):
                raise ArithmeticError("backend exploded")

        runner = Exploding()
        with self.assertRaises(ArithmeticError):
            Comparator.run([runner, identity_runner()])
        self.assertFalse(runner.is_active)  # deactivated on the way out

    def test_compare_func_returning_a_non_bool(self):
        results = Comparator.run([identity_runner(), identity_runner()])
        with self.assertRaises(PolygraphyException) as error:
            Comparator.compare_accuracy(results, compare_func=lambda a, b: {"y": "yes"})
        self.assertEqual(str(error.exception), "compare_func returned a str for output 'y', expected a bool")
        with self.assertRaises(PolygraphyException):
            Comparator.compare_accuracy(results, compare_func=lambda a, b: True)
        with self.assertRaises(ZeroDivisionError):
            Comparator.compare_accuracy(results, compare_func=lambda a, b: 1 / 0)

    def test_inactive_runner(self):
        runner = identity_runner()
        with self.assertRaises(PolygraphyException) as error:
            runner.infer({"x": np.ones((1, 1, 2, 2), np.float32)})
        self.assertIn("Must be activated prior to calling infer()", str(error.exception))
        with self.assertRaises(PolygraphyException):
            runner.deactivate()
        with self.assertRaises(PolygraphyException):
            runner.get_input_metadata()
        runner.activate()
        with self.assertRaises(PolygraphyException):
            runner.activate()  # already active
        runner.deactivate()

    def test_data_loader_that_raises(self):
        def loader():
            yield {"x": np.ones((1, 1, 2, 2), np.float32)}
            raise ValueError("the dataset is broken")

        with self.assertRaises(ValueError) as error:
            Comparator.run([identity_runner()], data_loader=loader())
        self.assertIn("the dataset is broken", str(error.exception))

    def test_data_loader_yielding_non_dicts(self):
        with self.assertRaises(PolygraphyInputError):
            Comparator.run([identity_runner()], data_loader=[np.ones(4)])

    def test_model_path_that_does_not_exist(self):
        missing = os.path.join(os.path.dirname(IDENTITY), "no_such_model.onnx")
        with self.assertRaises(PolygraphyException) as error:
            onnx_from_path(missing)
        self.assertIn("no_such_model.onnx", str(error.exception))
        self.assert_one_line(error)
        runner = RefRunner(SessionFromOnnx(missing))
        with self.assertRaises(PolygraphyException):
            with runner:
                pass
        self.assertFalse(runner.is_active)

    def test_none_where_a_model_or_loader_is_expected(self):
        from polygraphy.backend.onnx import BytesFromOnnx, bytes_from_onnx, save_onnx
        from polygraphy.backend.onnxrt import OnnxrtRunner
        from polygraphy.exception import PolygraphyUsageError

        for make in (lambda: RefRunner(None), lambda: OnnxrtRunner(None), lambda: SessionFromOnnx(None)):
            with self.assertRaises(PolygraphyUsageError) as error:
                make()
            self.assertIn("got None", str(error.exception))
        with self.assertRaises(PolygraphyUsageError):
            save_onnx(None, os.path.join(os.path.dirname(IDENTITY), "never_written.onnx"))
        with self.assertRaises(TypeError):
            bytes_from_onnx(None)
        with self.assertRaises(PolygraphyUsageError):
            BytesFromOnnx(None)
        from polygraphy.backend.onnx import OnnxFromBytes

        with self.assertRaises(PolygraphyUsageError):
            OnnxFromBytes(None)
        with self.assertRaises(PolygraphyException) as error:
            with RefRunner(lambda: None):
                pass
        self.assertIn("returned no session", str(error.exception))

    def test_results_file_that_is_not_json(self):
        with self.assertRaises(PolygraphyFormatError):
            RunResults.load(IDENTITY)

    def test_loader_returning_the_wrong_type(self):
        with self.assertRaises(PolygraphyException) as error:
            with RefRunner(SessionFromOnnx(lambda: 42)):
                pass
        self.assertIn("expected an ONNX model", str(error.exception))

    def test_critical_raises(self):
        severity = G_LOGGER.severity
        G_LOGGER.severity = G_LOGGER.CRITICAL + 1  # keep the test's output quiet
        try:
            with self.assertRaises(PolygraphyException) as error:
                G_LOGGER.critical("something went wrong")
            self.assertEqual(str(error.exception), "something went wrong")
        finally:
            G_LOGGER.severity = severity


if __name__ == "__main__":
    unittest.main()
