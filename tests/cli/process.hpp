// Runs a command line as a child process and captures its exit status, stdout and stderr (tests only).
#pragma once

#include <string>

namespace sluice::test {

struct process_result {
    int status = -1; ///< exit status, or -1 when the process did not exit normally
    std::string out;
    std::string err;
};

/// Runs `command` through /bin/sh with stdout and stderr captured separately.
process_result run_process(const std::string& command);

/// Quotes `s` for /bin/sh.
std::string shell_quote(const std::string& s);

} // namespace sluice::test
