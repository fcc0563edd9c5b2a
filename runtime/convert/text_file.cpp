// Whole-file reads of the small JSON and template files of a checkpoint folder.
#include "runtime/convert/text_file.hpp"

#include <cerrno>
#include <fstream>
#include <sstream>

namespace sluice::convert {

result<std::string> read_text_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return make_errno_error(errno ? errno : ENOENT, path.string() + ": cannot open");
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) {
        return make_errno_error(errno ? errno : EIO, path.string() + ": read failed");
    }
    return std::move(text).str();
}

} // namespace sluice::convert
