// Entry point of the `sluice` executable: parses the command line and runs one subcommand.
#include "cli/bench_command.hpp"
#include "cli/common_flags.hpp"
#include "cli/convert_command.hpp"
#include "cli/inspect_command.hpp"
#include "cli/mkmodel_command.hpp"
#include "cli/perplexity_command.hpp"
#include "cli/routing_stats_command.hpp"
#include "cli/run_command.hpp"
#include "cli/serve_command.hpp"
#include "cli/template_command.hpp"
#include "cli/tokenize_command.hpp"

#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>
#include <string>

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
    sluice::cli::add_routing_stats_command(app);

    // A first word that is no subcommand: name the nearest one instead of CLI11's "A subcommand is required".
    const std::string nearest = argc > 1 ? sluice::cli::nearest_subcommand(app, argv[1]) : std::string();
    if (argc > 1 && argv[1][0] != '-' && nearest != argv[1]) {
        std::cerr << "sluice: unknown command '" << argv[1] << "'";
        if (!nearest.empty())
            std::cerr << "; did you mean '" << nearest << "'?";
        std::cerr << " (sluice --help lists the commands)\n";
        return 2;
    }
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
