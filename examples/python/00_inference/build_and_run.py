"""
This script builds and runs a session of the built-in runtime
starting from an ONNX identity model.
"""
import numpy as np
from polygraphy.backend.onnx import OnnxFromPath, SaveOnnx
from polygraphy.backend.ref import RefRunner, SessionFromOnnx


def main():
    # We can compose multiple lazy loaders together to get the desired conversion.
    # In this case, we want ONNX -> built-in runtime session.
    #
    # NOTE: `build_session` is a *callable* that returns a session, not the session itself.
    #   To get the model directly, you can use the immediately evaluated functional API.
    build_session = OnnxFromPath("identity.onnx")

    # To reuse the model elsewhere, we can save it to a file.
    # The `SaveOnnx` lazy loader will return the model when called,
    # which allows us to chain it together with other loaders.
    build_session = SessionFromOnnx(SaveOnnx(build_session, path="identity_copy.onnx"))

    # Once our loader is ready, inference is simply a matter of constructing a runner,
    # activating it with a context manager (i.e. `with RefRunner(...)`) and calling `infer()`.
    #
    # NOTE: You can use the activate() function instead of a context manager, but you will need to make sure to
    # deactivate() to avoid a memory leak. For that reason, a context manager is the safer option.
    with RefRunner(build_session) as runner:
        inp_data = np.ones(shape=(1, 1, 2, 2), dtype=np.float32)

        # NOTE: The runner owns the output buffers and is free to reuse them between `infer()` calls.
        # Thus, if you want to store results from multiple inferences, you should use `copy.deepcopy()`.
        outputs = runner.infer(feed_dict={"x": inp_data})

        assert np.array_equal(outputs["y"], inp_data)  # It's an identity model!

        print("Inference succeeded!")


if __name__ == "__main__":
    main()
