// The `weft` command line: parses argv with CLI11 and dispatches to the commands in
// commands.h. CLI11 reports parse errors by throwing; RunWeft catches them (and anything else)
// here at the edge, so no exception leaves it. Not thread-safe: call once per process.
#pragma once

#include <cstdio>

#include "cli/commands.h"

namespace weft::cli {

// Runs one invocation and returns its exit code (0 ok, 1 operation failed, 2 usage error).
// `opener` opens the volume named by --data; main() passes OpenLocalVolume.
int RunWeft(int argc, char** argv, const VolumeOpener& opener, int in_fd, FILE* out, FILE* err,
            bool err_is_tty);

}  // namespace weft::cli
