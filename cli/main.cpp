// Entry point of the `sluice` executable: parses the command line and runs one subcommand.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
    CLI::App app{"Sluice: run Mixture-of-Experts models larger than memory"};
    app.set_version_flag("--version", "sluice " SLUICE_VERSION);
    app.require_subcommand(1);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    return 0;
}
