// Typed exceptions thrown by the library. Tools turn them into one-line `[!]` messages.
#pragma once

#include <stdexcept>
#include <string>

namespace polygraphy {

/// A user-facing failure: bad input, a bad model, an unsupported feature. The message is one line
/// stating the failure, optionally followed by "\nNote: ..." lines with the given and allowed values.
/// Tools print it as `[!] <message>` and exit with status 1 (Polygraphy's `G_LOGGER.critical`).
class PolygraphyException : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A file or payload that cannot be parsed (ONNX, JSON, base64, .npy, TensorProto).
class FormatError : public PolygraphyException {
public:
    using PolygraphyException::PolygraphyException;
};

/// A model that is structurally invalid (cycle, dangling input, bad attribute) or that a backend refuses.
class ModelError : public PolygraphyException {
public:
    using PolygraphyException::PolygraphyException;
};

/// A feature, operator or data type that this build cannot handle (for example TensorRT options).
class UnsupportedError : public PolygraphyException {
public:
    using PolygraphyException::PolygraphyException;
};

/// Inference inputs that do not match what a runner expects (missing, extra, wrong dtype or shape).
class InputError : public PolygraphyException {
public:
    using PolygraphyException::PolygraphyException;
};

/// A malformed command-line value (tolerance, shape, range...). Tools exit with status 2 for it
/// when it comes from argument parsing itself, 1 otherwise.
class UsageError : public PolygraphyException {
public:
    using PolygraphyException::PolygraphyException;
};

/// A broken invariant inside polygraphy: a bug, not a user error. Deliberately not a PolygraphyException.
class InternalError : public std::logic_error {
public:
    /// `what` is prefixed with "Polygraphy internal error: ".
    explicit InternalError(const std::string& what) : std::logic_error("Polygraphy internal error: " + what) {}
};

}  // namespace polygraphy
