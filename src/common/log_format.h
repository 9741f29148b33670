// Logger settings that only the tools set (Polygraphy's `--log-format`); library users have no use
// for them, so they stay out of the public logger.h.
#pragma once

namespace polygraphy {

/// `--log-format timestamp`: each message's prefix gains the local time as Python's
/// time.strftime('%X') prints it, `[I] (12:34:56) text`; continuation lines are indented past it.
/// Logger::reset() turns it off.
void set_log_timestamps(bool enabled);

/// `--log-format line-info`: each message's prefix gains the file and line that logged it, after the
/// time, `[I] [backend/onnx/loader.cpp:42] text` (logging_source_path() of the file).
/// Logger::reset() turns it off.
void set_log_line_info(bool enabled);

}  // namespace polygraphy
