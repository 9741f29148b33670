"""
This script demonstrates how to use Polygraphy in conjunction with APIs
provided by a backend. Specifically, in this case, we use the built-in runtime's APIs
to print the network name and list the session's inputs.
"""
import numpy as np
from polygraphy import func
from polygraphy.backend.onnx import OnnxFromPath
from polygraphy.backend.ref import RefRunner, SessionFromOnnx


# TIP: The immediately evaluated functional API makes it very easy to interoperate
# with backends like the built-in runtime. For details, see example 06 (`examples/api/06_immediate_eval_api`).

# We can use the `extend` decorator to easily extend lazy loaders provided by Polygraphy
# The parameters our decorated function takes should match the return values of the loader we are extending.

# For `OnnxFromPath`, we can see from the API documentation that it returns an ONNX model.
# That is what our function will receive.
@func.extend(OnnxFromPath("identity.onnx"))
def load_network(network):
    # Here we can modify the network. For this example, we'll just set the network name.
    network.graph_name = "MyIdentity"
    print(f"Network name: {network.graph_name}")

    # Notice that we don't need to return anything - `extend()` takes care of that for us!


# In case a session option is missing from Polygraphy, we can easily use the built-in runtime's APIs.
# Our function will receive a built-in runtime session since that's what `SessionFromOnnx` returns.
@func.extend(SessionFromOnnx(load_network))
def load_session(session):
    # The built-in runtime has no flags to set; we can still look at what the session prepared:
    print(f"Session inputs: {session.input_metadata}")


def main():
    # Since we have no further need of the built-in runtime's APIs, we can come back to regular Polygraphy.
    #
    # NOTE: Since we're using lazy loaders, we provide the functions as arguments - we do *not* call them ourselves.
    with RefRunner(load_session) as runner:
        inp_data = np.ones(shape=(1, 1, 2, 2), dtype=np.float32)

        # NOTE: The runner owns the output buffers and is free to reuse them between `infer()` calls.
        # Thus, if you want to store results from multiple inferences, you should use `copy.deepcopy()`.
        outputs = runner.infer({"x": inp_data})

        assert np.array_equal(outputs["y"], inp_data)  # It's an identity model!

        print("Inference succeeded!")


if __name__ == "__main__":
    main()
