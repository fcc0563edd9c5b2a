// Entry point of the `sluice` executable: parses the command line and runs one subcommand.
#include "cli/bench_command.hpp"
#include "cli/convert_command.hpp"
#include "cli/inspect_command.hpp"
#include "cli/mkmodel_command.hpp"
#include "cli/perplexity_command.hpp"
#include "cli/run_command.hpp"
#include "cli/serve_command.hpp"
#include "cli/template_command.hpp"
#include "cli/tokenize_command.hpp"

#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>

int main(int argc, char** argv) {
    CLI::App app{"Sluice: run Mixture-of-Experts models larger than memory"};
    app.set_version_flag("--version", "sluice " SLUICE_VERSION);
    app.require_subcommand(1);

    // One registration per subcommand; each lives in its own file.
    sluice::cli::add_inspect_command(app);
    sluice::cli::add_tokenize_commands(app);
    sluice::cli::add_template_command(app);
    sluice::cli::add_mkmodel_command(app);
    sluice::cli::add_convert_command(app);
    sluice::cli::add_run_command(app);
    sluice::cli::add_bench_command(app);
    sluice::cli::add_serve_command(app);
    sluice::cli::add_perplexity_command(app);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const std::exception& e) {
        std::cerr << "sluice: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
