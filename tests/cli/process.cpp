// Child-process runner for tests: stdout through a pipe, stderr through a temporary file.
#include "process.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace sluice::test {

std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) {
        if (c == '\'') {
            q += "'\\''";
        } else {
            q += c;
        }
    }
    return q + "'";
}

process_result run_process(const std::string& command) {
    char err_path[] = "/tmp/sluice-test-stderr-XXXXXX";
    const int fd = mkstemp(err_path);
    if (fd >= 0) {
        close(fd);
    }
    process_result r;
    FILE* pipe = popen((command + " 2>" + shell_quote(err_path)).c_str(), "r");
    if (pipe == nullptr) {
        return r;
    }
    char buf[65536];
    std::size_t n = 0;
    while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) {
        r.out.append(buf, n);
    }
    const int status = pclose(pipe);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream err(err_path);
    std::stringstream ss;
    ss << err.rdbuf();
    r.err = ss.str();
    std::remove(err_path);
    return r;
}

} // namespace sluice::test
