// The loading bar: percentage, bar and size on one stderr line.
#include "cli/progress_bar.hpp"

#include <cstdio>

#include <unistd.h>

namespace sluice::cli {

struct progress_bar::state {
    bool terminal = false;
    bool drawn = false;
    int last_pct = -1;
    std::uint64_t total = 0;

    void draw(int pct) {
        constexpr int width = 40;
        const int filled = pct * width / 100;
        std::fprintf(stderr, "\rloading [%.*s%*s] %3d%% of %.1f MiB", filled,
                     "########################################", width - filled, "", pct,
                     static_cast<double>(total) / (1024.0 * 1024.0));
        std::fflush(stderr);
        drawn = true;
        last_pct = pct;
    }
};

progress_bar::progress_bar() : state_(std::make_shared<state>()) {
    state_->terminal = ::isatty(STDERR_FILENO) != 0;
}

load_progress progress_bar::callback() {
    if (!state_->terminal)
        return {};
    return [s = state_](std::uint64_t done, std::uint64_t total) {
        s->total = total;
        const int pct = total > 0 ? static_cast<int>(done * 100 / total) : 100;
        if (pct != s->last_pct)
            s->draw(pct);
    };
}

void progress_bar::finish(bool complete) {
    if (!state_->drawn)
        return;
    if (complete && state_->last_pct != 100)
        state_->draw(100);
    std::fputs("\n", stderr);
    std::fflush(stderr);
    state_->drawn = false;
}

} // namespace sluice::cli
