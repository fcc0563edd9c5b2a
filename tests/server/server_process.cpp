// Child-process control for the server tests: fork/exec, port discovery from stderr, SIGTERM on teardown.
#include "server_process.hpp"

#include "../cli/process.hpp"
#include "../cli/scratch.hpp"
#include "runtime/gguf/model_files.hpp"
#include "runtime/gguf/writer.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <regex>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace sluice::test {

const std::string& sluice_exe() {
    static const std::string exe = SLUICE_EXE;
    return exe;
}

std::filesystem::path tiny_model() {
    static const std::filesystem::path path = [] {
        auto p = scratch_dir() / "tiny-qwen3moe.gguf";
        const auto r = run_process(sluice_exe() + " mkmodel -q -o " + shell_quote(p.string()) +
                                   " --preset tiny-qwen3moe --type q8_0 --seed 1");
        EXPECT_EQ(r.status, 0) << r.err;
        return p;
    }();
    return path;
}

std::filesystem::path tiny_model_with_template(const std::string& name, std::string_view chat_template,
                                               const std::vector<std::string>& control_tokens) {
    const std::string tag = control_tokens.empty() ? name : name + "-markers";
    const auto path = scratch_dir() / ("tiny-qwen3moe-" + tag + ".gguf");
    if (std::filesystem::exists(path)) {
        return path;
    }
    const auto tokenizer = scratch_dir() / (tag + "-tokenizer.gguf");
    auto files = gguf::model_files::open(tiny_model());
    EXPECT_TRUE(files) << files.error().message;
    gguf::writer w(tokenizer);
    for (const auto& e : files->kv().entries()) {
        if (e.key.starts_with("tokenizer.")) {
            w.kv().set(e.key, e.value);
        }
    }
    if (!control_tokens.empty()) {
        auto texts = files->kv().get_array_of_strings(gguf::keys::tokenizer_tokens);
        auto types = files->kv().get_array_of_i32(gguf::keys::tokenizer_token_type);
        EXPECT_TRUE(texts && types);
        std::vector<std::string> t(texts->begin(), texts->end());
        std::vector<std::int32_t> k(types->begin(), types->end());
        for (const auto& c : control_tokens) {
            t.push_back(c);
            k.push_back(3); // control
        }
        w.kv().set_array(gguf::keys::tokenizer_tokens, std::move(t));
        w.kv().set_array(gguf::keys::tokenizer_token_type, std::move(k));
    }
    w.kv().set_string(gguf::keys::chat_template, std::string(chat_template));
    const auto done = w.finish();
    EXPECT_TRUE(done) << done.error().message;
    const auto r = run_process(sluice_exe() + " mkmodel -q -o " + shell_quote(path.string()) +
                               " --preset tiny-qwen3moe --type q8_0 --seed 1 --tokenizer-from " +
                               shell_quote(tokenizer.string()));
    EXPECT_EQ(r.status, 0) << r.err;
    return path;
}

std::uint64_t streaming_budget(const std::vector<std::string>& plan_args, std::uint64_t slots) {
    std::string cmd = sluice_exe() + " inspect " + shell_quote(tiny_model().string()) +
                      " --plan --memory-budget 1TiB --disk-bandwidth 1 --threads 2";
    for (const auto& a : plan_args) {
        cmd += ' ';
        cmd += shell_quote(a);
    }
    const auto r = run_process(cmd);
    EXPECT_EQ(r.status, 0) << cmd << "\n" << r.err;
    const auto plan = boost::json::parse(r.out).as_object();
    const auto bytes = [&](const char* key) { return static_cast<std::uint64_t>(plan.at(key).to_number<double>()); };
    const auto slot = bytes("slot_bytes");
    return bytes("dense_bytes") + bytes("kv_bytes") + bytes("compute_bytes") + slots * slot + slot / 2;
}

server_process::server_process(const std::vector<std::string>& args, const std::filesystem::path& model) {
    static int counter = 0;
    log_path_ = scratch_dir() / ("serve-" + std::to_string(counter++) + ".log");
    std::vector<std::string> argv_s{sluice_exe(), "serve", "-m",        (model.empty() ? tiny_model() : model).string(),
                                    "--port",     "0",     "--threads", "2"};
    if (std::find(args.begin(), args.end(), "--shutdown-grace") == args.end()) {
        // Tests that end with a generation running should not wait the default 5 s for it.
        argv_s.insert(argv_s.end(), {"--shutdown-grace", "1s"});
    }
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
        const int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(fd, STDERR_FILENO);
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, STDOUT_FILENO);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    if (pid_ <= 0) {
        ADD_FAILURE() << "fork failed";
        return;
    }
    const std::regex listening(R"(listening on http://127\.0\.0\.1:(\d+))");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
        const std::string text = log();
        std::smatch m;
        if (std::regex_search(text, m, listening) && text.find(" loaded in ") != std::string::npos) {
            port_ = static_cast<unsigned short>(std::stoi(m[1].str()));
            return;
        }
        if (!running()) {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "the server did not start; its stderr:\n" << log();
}

server_process::~server_process() {
    if (pid_ > 0) {
        stop();
    }
}

std::string server_process::log() const {
    std::ifstream in(log_path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

bool server_process::running() {
    if (pid_ <= 0) {
        return false;
    }
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
    }
    return true;
}

int server_process::stop() {
    terminate();
    return wait_exit();
}

void server_process::terminate() {
    if (pid_ > 0) {
        ::kill(pid_, SIGTERM);
    }
}

int server_process::wait_exit(std::chrono::milliseconds limit) {
    if (pid_ <= 0) {
        return -1;
    }
    int status = 0;
    for (auto waited = std::chrono::milliseconds(0); waited < limit; waited += std::chrono::milliseconds(20)) {
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return -1;
}

} // namespace sluice::test
