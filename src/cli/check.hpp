// `ksz check`: quality assessment of a reconstruction against its original
// (cuZ-Checker's metrics, src/api/quality.hpp): table, JSON, SVG plots.
#pragma once
#include <CLI/CLI.hpp>
#include <memory>

#include "src/core/backends.hpp"

namespace ksz::cli {

struct CheckState;

class CheckCommand {
 public:
  bool active() const;        // the user asked for `check`
  int run(Backend b) const;   // after Kokkos is initialised; returns the exit status
  std::shared_ptr<CheckState> m_state;
};

// Adds the `check` subcommand to `app`.
CheckCommand register_check(CLI::App& app);

}  // namespace ksz::cli
