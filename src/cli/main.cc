// Entry point of the `weft` binary: wires the command line to the on-disk LocalVolume.
#include <unistd.h>

#include <cstdio>

#include "cli/app.h"
#include "vfs/local_volume.h"

int main(int argc, char** argv) {
  weft::cli::VolumeOpener opener = [](const std::string& data_dir) {
    return weft::OpenLocalVolume(data_dir);
  };
  return weft::cli::RunWeft(argc, argv, opener, STDIN_FILENO, stdout, stderr,
                            ::isatty(STDERR_FILENO) == 1);
}
