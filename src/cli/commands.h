// The `weft` subcommands as plain functions over a Volume, separate from argument parsing
// (app.h) so they read as the operations they are. Each returns the process exit code:
// 0 success, 1 an operation failed (one line on stderr says what and why), 2 a usage error.
// Not thread-safe: one command runs at a time in a process.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "vfs/volume.h"

namespace weft::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

// Files move through the CLI in pieces of this size, so no file ever sits in memory whole.
inline constexpr size_t kPieceSize = 1 << 20;
// `weft put` gives larger files a chunk ETag, not their MD5 (see WriteOptions::md5_etag_limit).
inline constexpr uint64_t kMd5EtagLimit = 8 << 20;

using VolumeOpener = std::function<Result<std::unique_ptr<Volume>>(const std::string& data_dir)>;

struct GlobalOptions {
  std::string data_dir = "./weft-data";
  bool json = false;
  bool quiet = false;
};

// What a command runs against: the volume (opened on first use, so `--help` and usage errors
// never touch the data directory), its standard streams and the caller's identity.
class CommandEnv {
 public:
  CommandEnv(GlobalOptions options, VolumeOpener opener, int in_fd, FILE* out, FILE* err,
             bool progress_allowed);

  const GlobalOptions& options() const { return options_; }
  const RequestContext& ctx() const { return ctx_; }
  int in_fd() const { return in_fd_; }
  FILE* out() const { return out_; }
  FILE* err() const { return err_; }
  // A progress bar may be drawn on err(): it is a terminal and --quiet is off.
  bool progress_allowed() const { return progress_allowed_; }

  // The volume, opened on the first call (the error names no context; callers add it).
  Result<Volume*> volume();

  // Prints "weft: <what>: <status>" on stderr and returns kExitError.
  int Fail(std::string_view what, const Status& status);
  // Prints "weft: <message> (see 'weft <command> --help')" and returns kExitUsage.
  int UsageError(std::string_view command, std::string_view message);
  // One line on stderr unless --quiet.
  void Warn(std::string_view message);

 private:
  GlobalOptions options_;
  VolumeOpener opener_;
  int in_fd_;
  FILE* out_;
  FILE* err_;
  bool progress_allowed_;
  RequestContext ctx_;
  std::unique_ptr<Volume> volume_;
};

struct PutArgs {
  std::vector<std::string> paths;  // SRC... DEST
  bool verbose = false;
  bool md5_etag = false;  // every file's ETag is its MD5, however large
  size_t jobs = 1;        // files put at once
};
struct GetArgs {
  std::string src;
  std::string dest;
  std::optional<std::string> snapshot;
};
struct CatArgs {
  std::string path;
  std::optional<std::string> snapshot;
  std::optional<std::string> version;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
};
struct LsArgs {
  std::string path = "/";
  bool long_format = false;
  std::optional<std::string> snapshot;
};
struct StatArgs {
  std::string path;
  std::optional<std::string> snapshot;
};
struct RmArgs {
  std::vector<std::string> paths;
  bool recursive = false;
};
struct MvArgs {
  std::string src;
  std::string dest;
};
struct MkdirArgs {
  std::vector<std::string> paths;
  bool parents = false;
};
struct SnapshotCreateArgs {
  std::string name;
  std::string path = "/";
};
struct GcArgs {
  std::string keep_noncurrent = "24h";
};
struct ChangesArgs {
  uint64_t after = 0;
  uint64_t limit = 0;  // 0 = all
};

int RunPut(CommandEnv& env, const PutArgs& args);
int RunGet(CommandEnv& env, const GetArgs& args);
int RunCat(CommandEnv& env, const CatArgs& args);
int RunLs(CommandEnv& env, const LsArgs& args);
int RunStat(CommandEnv& env, const StatArgs& args);
int RunRm(CommandEnv& env, const RmArgs& args);
int RunMv(CommandEnv& env, const MvArgs& args);
int RunMkdir(CommandEnv& env, const MkdirArgs& args);
int RunSnapshotCreate(CommandEnv& env, const SnapshotCreateArgs& args);
int RunSnapshotList(CommandEnv& env);
int RunSnapshotDelete(CommandEnv& env, const std::string& name);
int RunLog(CommandEnv& env, const std::string& path);
int RunDu(CommandEnv& env);
int RunGc(CommandEnv& env, const GcArgs& args);
int RunFsck(CommandEnv& env);
// `weft audit verify [FILE]`: checks the audit log's hash chain (FILE, or DATA/audit.log);
// exit 1 naming the first line that does not hold.
int RunAuditVerify(CommandEnv& env, const std::string& file);
int RunChanges(CommandEnv& env, const ChangesArgs& args);

}  // namespace weft::cli
