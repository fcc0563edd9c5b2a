// Runs `sluice serve` on a tiny model as a child process on 127.0.0.1 with --port 0 and reads the chosen port
// from its stderr (tests only).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::test {

/// Path of the `sluice` executable under test.
const std::string& sluice_exe();

/// A tiny-qwen3moe q8_0 model made once per test process with `sluice mkmodel`.
std::filesystem::path tiny_model();

/// The tiny model with `chat_template` as its chat template, made once per `name`: the tiny model's tokenizer
/// keys go into a tensor-less GGUF with the template replaced, and `mkmodel --tokenizer-from` takes them.
/// `control_tokens`: texts added to the vocabulary as control tokens (mkmodel grows the model to fit), as a model
/// of that family has its format's markers.
std::filesystem::path tiny_model_with_template(const std::string& name, std::string_view chat_template,
                                               const std::vector<std::string>& control_tokens = {});

/// A --memory-budget (bytes) that makes `sluice serve <plan_args>` stream the tiny model's experts through
/// `slots` cache slots: what `sluice inspect --plan` says everything else takes, plus the slots. `plan_args` are
/// the serve flags the plan depends on besides --threads 2 (--ctx, --parallel).
std::uint64_t streaming_budget(const std::vector<std::string>& plan_args, std::uint64_t slots);

/// A running server. Starting waits until it listens and has loaded the model; destruction sends SIGTERM
/// and waits for the exit.
class server_process {
public:
    /// Starts `sluice serve -m <model> --port 0 --threads 2 <args...>` (the tiny model when `model` is empty);
    /// fails the test on error.
    explicit server_process(const std::vector<std::string>& args = {}, const std::filesystem::path& model = {});
    ~server_process();
    server_process(const server_process&) = delete;
    server_process& operator=(const server_process&) = delete;

    [[nodiscard]] unsigned short port() const noexcept { return port_; }
    [[nodiscard]] std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    /// Everything the server wrote to stderr so far.
    [[nodiscard]] std::string log() const;
    /// True while the child has not exited.
    [[nodiscard]] bool running();
    /// Sends SIGTERM and returns the exit status (-1 if it had to be killed or died from a signal).
    int stop();
    /// Sends SIGTERM without waiting.
    void terminate();
    /// Waits up to `limit` for the exit: its status, or -1 after killing it (or when a signal ended it).
    int wait_exit(std::chrono::milliseconds limit = std::chrono::seconds(10));

private:
    pid_t pid_ = -1;
    unsigned short port_ = 0;
    std::filesystem::path log_path_;
};

} // namespace sluice::test
