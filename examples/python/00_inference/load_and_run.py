"""
This script loads the ONNX model saved by `build_and_run.py` and runs inference.
"""
import numpy as np
from polygraphy.backend.common import BytesFromPath
from polygraphy.backend.onnx import OnnxFromBytes
from polygraphy.backend.ref import RefRunner, SessionFromOnnx


def main():
    # Just as we did when building, we can compose multiple loaders together
    # to achieve the behavior we want. Specifically, we want to load a serialized
    # model from a file, then parse it and prepare a session of the built-in runtime.
    load_session = SessionFromOnnx(OnnxFromBytes(BytesFromPath("identity_copy.onnx")))

    # Inference remains virtually exactly the same as before:
    with RefRunner(load_session) as runner:
        inp_data = np.ones(shape=(1, 1, 2, 2), dtype=np.float32)

        # NOTE: The runner owns the output buffers and is free to reuse them between `infer()` calls.
        # Thus, if you want to store results from multiple inferences, you should use `copy.deepcopy()`.
        outputs = runner.infer(feed_dict={"x": inp_data})

        assert np.array_equal(outputs["y"], inp_data)  # It's an identity model!

        print("Inference succeeded!")


if __name__ == "__main__":
    main()
