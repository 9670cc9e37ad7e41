#include "cli/app.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <exception>
#include <optional>
#include <string>
#include <thread>

#include "base/bytes.h"
#include "cli/admin.h"
#include "cli/cache_sim.h"
#include "cli/demo.h"
#include "meta/kv_store.h"
#include "server/hub.h"
#include "server/mount.h"

#ifndef WEFT_VERSION
#define WEFT_VERSION "unknown"
#endif

namespace weft::cli {

namespace {

// The subcommand path the user reached ("snapshot create"), for pointing at the right --help.
std::string CommandPath(const CLI::App& app) {
  std::string path;
  const CLI::App* cur = &app;
  for (;;) {
    auto subs = cur->get_subcommands();
    if (subs.empty()) break;
    cur = subs.front();
    if (!path.empty()) path += " ";
    path += cur->get_name();
  }
  return path;
}

// A size flag (K/M/G/T suffixes), its text and where its value goes; `min` is the least
// value allowed (0 turns the thing off).
struct SizeFlag {
  const char* flag;
  const std::string& text;
  uint64_t* bytes;
  uint64_t min = 1;
};

// Parses each of `flags` into its target; the first bad one's error.
Status ParseSizeFlags(std::initializer_list<SizeFlag> flags) {
  for (const SizeFlag& f : flags) {
    std::optional<uint64_t> bytes = ParseByteSize(f.text);
    if (!bytes || *bytes < f.min) {
      return InvalidArgument(
          std::string(f.flag) + " must be a size like 500G" + (f.min == 0 ? " (or 0)" : "") +
          (f.min > 1 ? " of at least " + std::to_string(f.min >> 20) + "M" : "") + ", not '" +
          f.text + "'");
    }
    *f.bytes = *bytes;
  }
  return OkStatus();
}

constexpr const char* kMetadataCacheHelp =
    "Memory for the metadata store's caches: blocks and hot keys (K/M/G; at least 8M)";

constexpr const char* kMemoryCacheHelp =
    "Recently read chunks kept in memory, verified (K/M/G; 0: none). The process\n"
    "holds about this plus 100 MB, more while busy (docs/ARCHITECTURE.md, Memory)";

CLI::App* AddCommand(CLI::App& parent, const std::string& name, const std::string& what,
                     const std::string& example) {
  CLI::App* sub = parent.add_subcommand(name, what);
  sub->footer("Example:\n  " + example);
  return sub;
}

// A command group of `weft user|key|rule`; its help also says where the commands act.
CLI::App* AddAdminGroup(CLI::App& app, const std::string& name, const std::string& what,
                        const std::string& example) {
  CLI::App* group = AddCommand(app, name, what, example);
  group->footer(
      "Without --server the commands act on the identity store in --data, which works only\n"
      "while no hub runs there. With --server URL (or WEFT_SERVER) they go through that hub's\n"
      "REST API, signing in with WEFT_ACCESS_KEY and WEFT_SECRET_KEY (else\n"
      "WEFT_ROOT_ACCESS_KEY and WEFT_ROOT_SECRET_KEY); --ca-file trusts a private CA.\n\n"
      "Example:\n  " +
      example);
  group->require_subcommand(1);
  return group;
}

// Arguments of the admin commands; one command runs per invocation, so they share fields.
struct AdminArgs {
  std::string name;  // user
  std::string id;    // access key or rule
  std::string subject, prefix, permissions;
  std::vector<std::string> groups;
  std::string overlap = "24h";  // key rotate
};

// `weft user|key|rule ...`. `target`, `args` and `action` must outlive the parse: the
// callbacks fill them in.
void AddAdminCommands(CLI::App& app, const AdminTarget& target, AdminArgs& args,
                      std::function<int(CommandEnv&)>& action) {
  std::string& name = args.name;
  std::string& id = args.id;
  std::vector<std::string>& groups = args.groups;

  CLI::App* user = AddAdminGroup(app, "user", "Manage users (root is built in).",
                                 "weft --server http://hub:9000 user create alice --group eng");
  CLI::App* cmd = AddCommand(*user, "create", "Create a user, optionally in groups.",
                             "weft user create alice --group eng --group ops");
  cmd->add_option("name", name, "User name: [a-z0-9][a-z0-9._-]{0,63}")->required();
  cmd->add_option("-g,--group", groups, "A group to put the user in (repeatable)")
      ->allow_extra_args(false);
  cmd->callback(
      [&] { action = [&](CommandEnv& env) { return RunUserCreate(env, target, name, groups); }; });
  cmd = AddCommand(*user, "list", "List users.", "weft --json user list");
  cmd->callback([&] { action = [&](CommandEnv& env) { return RunUserList(env, target); }; });
  cmd = AddCommand(*user, "show", "Show a user and its groups.", "weft user show alice");
  cmd->add_option("name", name, "User name")->required();
  cmd->callback([&] { action = [&](CommandEnv& env) { return RunUserShow(env, target, name); }; });
  cmd = AddCommand(*user, "delete", "Delete a user with its access keys and its user: rules.",
                   "weft user delete alice");
  cmd->add_option("name", name, "User name")->required();
  cmd->callback(
      [&] { action = [&](CommandEnv& env) { return RunUserDelete(env, target, name); }; });
  cmd = AddCommand(*user, "groups", "Replace a user's groups (none given: no groups).",
                   "weft user groups alice eng ops");
  cmd->add_option("name", name, "User name")->required();
  cmd->add_option("groups", groups, "Groups");
  cmd->callback(
      [&] { action = [&](CommandEnv& env) { return RunUserGroups(env, target, name, groups); }; });

  CLI::App* key = AddAdminGroup(app, "key", "Manage access keys (for S3 and the REST API).",
                                "weft --server http://hub:9000 key create alice");
  cmd = AddCommand(*key, "create",
                   "Create an access key for USER and print its id and secret; the secret is\n"
                   "shown only this once (--json: both as one object).",
                   "weft --json key create alice");
  cmd->add_option("user", name, "User name")->required();
  cmd->callback([&] { action = [&](CommandEnv& env) { return RunKeyCreate(env, target, name); }; });
  cmd = AddCommand(*key, "list", "List a user's access keys (never the secrets).",
                   "weft key list alice");
  cmd->add_option("user", name, "User name")->required();
  cmd->callback([&] { action = [&](CommandEnv& env) { return RunKeyList(env, target, name); }; });
  std::string& overlap = args.overlap;
  cmd = AddCommand(*key, "rotate",
                   "Give USER a new access key and retire the others: they keep working for\n"
                   "--overlap (default 24h, enough to roll the new key out to every job), then\n"
                   "stop; --overlap 0 stops them now. The new secret is shown only this once.\n"
                   "A user may rotate their own keys; root's key from WEFT_ROOT_ACCESS_KEY is\n"
                   "rotated by putting the new one in the environment before the overlap ends.",
                   "weft --server http://hub:9000 key rotate alice --overlap 2h");
  cmd->add_option("user", name, "User name")->required();
  cmd->add_option("--overlap", overlap, "How long the old keys keep working (e.g. 2h, 7d, 0)");
  cmd->callback(
      [&] { action = [&](CommandEnv& env) { return RunKeyRotate(env, target, name, overlap); }; });
  cmd = AddCommand(*key, "delete", "Delete an access key; requests signed with it then fail.",
                   "weft key delete WK0123456789ABCDEFGH");
  cmd->add_option("keyid", id, "Access key id")->required();
  cmd->callback([&] { action = [&](CommandEnv& env) { return RunKeyDelete(env, target, id); }; });

  CLI::App* rule = AddAdminGroup(
      app, "rule",
      "Manage access rules: each grants SUBJECT (user:NAME, group:NAME, authenticated or\n"
      "'*') PERMS on every path starting with PREFIX. Nothing is allowed without a rule,\n"
      "except to root.",
      "weft rule add user:alice /datasets/alice/ read,write,list");
  cmd = AddCommand(*rule, "add",
                   "Add a rule. PERMS is a comma-separated subset of read,write,list,admin;\n"
                   "end PREFIX with '/' to mean a directory ('/b/' is bucket b).",
                   "weft rule add group:eng /datasets/ read,list");
  cmd->add_option("subject", args.subject, "user:NAME, group:NAME, authenticated or *")->required();
  cmd->add_option("prefix", args.prefix, "Absolute path prefix")->required();
  cmd->add_option("perms", args.permissions, "read,write,list,admin")->required();
  cmd->callback([&] {
    action = [&](CommandEnv& env) {
      return RunRuleAdd(env, target, args.subject, args.prefix, args.permissions);
    };
  });
  cmd = AddCommand(*rule, "list", "List rules with their ids.", "weft --json rule list");
  cmd->callback([&] { action = [&](CommandEnv& env) { return RunRuleList(env, target); }; });
  cmd = AddCommand(*rule, "delete", "Delete a rule by id (see 'weft rule list').",
                   "weft rule delete r3");
  cmd->add_option("id", id, "Rule id")->required();
  cmd->callback([&] { action = [&](CommandEnv& env) { return RunRuleDelete(env, target, id); }; });
}

}  // namespace

int RunWeft(int argc, char** argv, const VolumeOpener& opener, int in_fd, FILE* out, FILE* err,
            bool err_is_tty) {
  try {
    GlobalOptions global;
    CLI::App app{
        "weft: a deduplicating, versioned data store for training data (single-node engine).\n"
        "Paths inside Weft are absolute ('/datasets/x'); a missing leading '/' is added.",
        "weft"};
    app.set_version_flag("--version", "weft " WEFT_VERSION);
    app.require_subcommand(1);
    app.fallthrough();  // global options may follow the subcommand too
    app.add_option("--data", global.data_dir, "Data directory of the volume")
        ->capture_default_str();
    AdminTarget admin;
    app.add_option("--server", admin.server,
                   "Hub URL for the user/key/rule commands (default: act on --data directly)")
        ->envname("WEFT_SERVER");
    app.add_option("--ca-file", admin.ca_file, "PEM CA certificates for an https:// --server");
    app.add_flag("--json", global.json, "Machine-readable JSON output (listing commands)");
    app.add_flag("-q,--quiet", global.quiet, "No progress bar, warnings or chatter");
    app.footer(
        "Example:\n  weft --data ./weft-data put ./images /datasets/images\n"
        "Run 'weft COMMAND --help' for each command's options and an example.");

    int code = kExitOk;
    // Each subcommand's callback runs after a successful parse and sets the exit code.
    std::function<int(CommandEnv&)> action;

    PutArgs put;
    CLI::App* put_cmd = AddCommand(
        app, "put",
        "Store local files or directory trees (or '-' for stdin) in Weft.\n"
        "Semantics follow 'cp -r': if DEST is an existing directory (or there are several\n"
        "SRCs) each SRC lands inside it as DEST/<basename>; otherwise a file SRC becomes DEST\n"
        "and a directory SRC's contents become DEST. 'put FILE /dir/' (trailing '/') puts the\n"
        "file into /dir, creating it. Missing parents are created. Symlinks inside a tree are\n"
        "stored as symlinks; sockets and devices are skipped. Each file is streamed in 1 MiB\n"
        "pieces and becomes visible atomically, never partly written. Small files are\n"
        "committed in groups (up to 256 files / 64 MiB per transaction, one sync each), so a\n"
        "tree of small files stores fast; files of 16 MiB and more commit one by one.\n"
        "--jobs files are read and stored at once, so -v lines come in no fixed order.",
        "weft put ./imagenet /datasets/imagenet     # -> /datasets/imagenet/...\n"
        "  tar c shard | weft put - /shards/000.tar\n"
        "  weft put -v a.bin b.bin /in/               # prints 'committed PATH SIZE ETAG'");
    put_cmd->add_option("paths", put.paths, "SRC... DEST")->required();
    put_cmd->add_flag("-v,--verbose", put.verbose,
                      "Print 'committed <path> <size> <etag>' once each file is durable");
    put_cmd->add_flag("--md5-etag", put.md5_etag,
                      "Give every file its MD5 as ETag. By default a file over 8 MiB gets an\n"
                      "ETag made from its chunks ('<hex>-<chunks>', as S3 gives objects\n"
                      "uploaded in parts, which clients do not check as an MD5): computing\n"
                      "the MD5 is a second pass over every byte and slows large ingest");
    put.jobs = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
    put_cmd
        ->add_option("-j,--jobs", put.jobs,
                     "Files to read and store at once (default: the CPU cores, at most 8).\n"
                     "Each file's chunking and hashing is sequential, so a tree of many\n"
                     "files stores faster with a thread per core; a large file also uses a\n"
                     "second thread of its own")
        ->check(CLI::Range(1, 64))
        ->capture_default_str();
    put_cmd->callback([&] { action = [&](CommandEnv& env) { return RunPut(env, put); }; });

    GetArgs get;
    CLI::App* get_cmd = AddCommand(
        app, "get",
        "Copy a file or tree out of Weft to the local file system ('cp -r' semantics:\n"
        "into DEST/<basename> when DEST is an existing directory). DEST '-' writes a file to\n"
        "stdout.",
        "weft get --snapshot v1 /datasets/imagenet ./restore");
    get_cmd->add_option("src", get.src, "Weft path")->required();
    get_cmd->add_option("dest", get.dest, "Local path")->required();
    get_cmd->add_option("--snapshot", get.snapshot, "Read as of this snapshot");
    get_cmd->callback([&] { action = [&](CommandEnv& env) { return RunGet(env, get); }; });

    CatArgs cat;
    CLI::App* cat_cmd =
        AddCommand(app, "cat", "Write a file (or a byte range of it) to stdout.",
                   "weft cat --offset 1048576 --length 4096 /ckpt/model.bin | xxd | head\n"
                   "  weft cat --version <ID from 'weft log'> /data/config.json");
    cat_cmd->add_option("path", cat.path, "Weft path")->required();
    cat_cmd->add_option("--snapshot", cat.snapshot, "Read as of this snapshot");
    cat_cmd->add_option("--version", cat.version, "Read this version (see 'weft log')");
    cat_cmd->add_option("--offset", cat.offset, "First byte to read");
    cat_cmd->add_option("--length", cat.length, "Bytes to read (default: to the end)");
    cat_cmd->callback([&] { action = [&](CommandEnv& env) { return RunCat(env, cat); }; });

    LsArgs ls;
    CLI::App* ls_cmd =
        AddCommand(app, "ls",
                   "List a directory (sorted by name; directories end in '/'), or show one file.\n"
                   "-l adds mode, size and mtime (UTC); --json prints an array of objects.",
                   "weft ls -l /datasets\n  weft --json ls --snapshot v1 /datasets");
    ls_cmd->add_option("path", ls.path, "Weft path")->capture_default_str();
    ls_cmd->add_flag("-l", ls.long_format, "Long format");
    ls_cmd->add_option("--snapshot", ls.snapshot, "List as of this snapshot");
    ls_cmd->callback([&] { action = [&](CommandEnv& env) { return RunLs(env, ls); }; });

    StatArgs stat;
    CLI::App* stat_cmd = AddCommand(app, "stat",
                                    "Show a path's metadata: type, size, mode, owner, times, "
                                    "ETag (MD5), version id, chunk count.",
                                    "weft stat --json /datasets/imagenet/train/0001.jpg");
    stat_cmd->add_option("path", stat.path, "Weft path")->required();
    stat_cmd->add_option("--snapshot", stat.snapshot, "As of this snapshot");
    stat_cmd->callback([&] { action = [&](CommandEnv& env) { return RunStat(env, stat); }; });

    RmArgs rm;
    CLI::App* rm_cmd = AddCommand(
        app, "rm",
        "Remove files (and with -r directory trees). Old versions stay readable through\n"
        "snapshots and 'weft log' until 'weft gc' prunes them.",
        "weft rm -r /scratch/run-17");
    rm_cmd->add_option("paths", rm.paths, "Weft paths")->required();
    rm_cmd->add_flag("-r,--recursive", rm.recursive, "Remove directories and their contents");
    rm_cmd->callback([&] { action = [&](CommandEnv& env) { return RunRm(env, rm); }; });

    MvArgs mv;
    CLI::App* mv_cmd = AddCommand(
        app, "mv",
        "Rename atomically. If DST is an existing directory, SRC moves into it; an existing\n"
        "file (or empty directory) at DST is replaced.",
        "weft mv /incoming/batch-7 /datasets/");
    mv_cmd->add_option("src", mv.src, "Weft path")->required();
    mv_cmd->add_option("dst", mv.dest, "Weft path")->required();
    mv_cmd->callback([&] { action = [&](CommandEnv& env) { return RunMv(env, mv); }; });

    MkdirArgs mkdir;
    CLI::App* mkdir_cmd =
        AddCommand(app, "mkdir", "Create directories.", "weft mkdir -p /datasets/imagenet/train");
    mkdir_cmd->add_option("paths", mkdir.paths, "Weft paths")->required();
    mkdir_cmd->add_flag("-p,--parents", mkdir.parents,
                        "Create missing parents; an existing directory is not an error");
    mkdir_cmd->callback([&] { action = [&](CommandEnv& env) { return RunMkdir(env, mkdir); }; });

    CLI::App* snap_cmd = AddCommand(
        app, "snapshot",
        "Manage snapshots: named, read-only views of a subtree at one commit. Read them\n"
        "with --snapshot NAME or as /.weft/snapshots/NAME/...",
        "weft snapshot create imagenet-v3 /datasets/imagenet");
    snap_cmd->require_subcommand(1);
    SnapshotCreateArgs snap_create;
    CLI::App* snap_create_cmd =
        AddCommand(*snap_cmd, "create", "Snapshot PATH (default '/') as NAME.",
                   "weft snapshot create imagenet-v3 /datasets/imagenet");
    snap_create_cmd->add_option("name", snap_create.name, "Snapshot name")->required();
    snap_create_cmd->add_option("path", snap_create.path, "Subtree")->capture_default_str();
    snap_create_cmd->callback(
        [&] { action = [&](CommandEnv& env) { return RunSnapshotCreate(env, snap_create); }; });
    CLI::App* snap_list_cmd =
        AddCommand(*snap_cmd, "list", "List snapshots.", "weft --json snapshot list");
    snap_list_cmd->callback(
        [&] { action = [&](CommandEnv& env) { return RunSnapshotList(env); }; });
    std::string snap_delete_name;
    CLI::App* snap_delete_cmd = AddCommand(
        *snap_cmd, "delete", "Delete a snapshot; 'weft gc' then reclaims what only it held.",
        "weft snapshot delete imagenet-v1");
    snap_delete_cmd->add_option("name", snap_delete_name, "Snapshot name")->required();
    snap_delete_cmd->callback([&] {
      action = [&](CommandEnv& env) { return RunSnapshotDelete(env, snap_delete_name); };
    });

    std::string log_path;
    CLI::App* log_cmd = AddCommand(
        app, "log", "List the versions of a file, newest first (ids for 'weft cat --version').",
        "weft log /ckpt/latest.pt");
    log_cmd->add_option("path", log_path, "Weft path")->required();
    log_cmd->callback([&] { action = [&](CommandEnv& env) { return RunLog(env, log_path); }; });

    CLI::App* du_cmd = AddCommand(
        app, "du",
        "Space use of the whole volume: logical bytes (live files), referenced bytes (all\n"
        "retained versions), unique and stored chunk bytes, dedup ratio (referenced /\n"
        "unique) and compression ratio (unique / stored).",
        "weft --json du");
    du_cmd->callback([&] { action = [&](CommandEnv& env) { return RunDu(env); }; });

    GcArgs gc;
    CLI::App* gc_cmd = AddCommand(
        app, "gc",
        "Collect garbage: prune non-current versions not held by a snapshot and older than\n"
        "--keep-noncurrent, remove chunks nothing reaches, compact packs; prints what was\n"
        "reclaimed.",
        "weft gc --keep-noncurrent 7d");
    gc_cmd
        ->add_option("--keep-noncurrent", gc.keep_noncurrent,
                     "Keep non-current versions this long (0s, 90m, 24h, 7d, 2w)")
        ->capture_default_str();
    gc_cmd->callback([&] { action = [&](CommandEnv& env) { return RunGc(env, gc); }; });

    CLI::App* fsck_cmd = AddCommand(
        app, "fsck",
        "Verify every pack, chunk (hash) and manifest; list each problem and exit 1 if any.",
        "weft fsck && echo clean");
    fsck_cmd->callback([&] { action = [&](CommandEnv& env) { return RunFsck(env); }; });

    CLI::App* audit_cmd = app.add_subcommand("audit", "Work with the audit log.");
    audit_cmd->require_subcommand(1);
    std::string audit_file;
    CLI::App* verify_cmd = AddCommand(
        *audit_cmd, "verify",
        "Check the audit log's hash chain: every record unedited, none removed, moved or cut\n"
        "off the end. Exit 1 naming the first line that does not hold. FILE defaults to\n"
        "DATA/audit.log (a spoke's is CACHE/audit.log).",
        "weft --data /srv/weft audit verify");
    verify_cmd->add_option("file", audit_file, "The audit log to check");
    verify_cmd->callback(
        [&] { action = [&](CommandEnv& env) { return RunAuditVerify(env, audit_file); }; });

    ChangesArgs changes;
    CLI::App* changes_cmd = AddCommand(
        app, "changes", "Print the change feed: every commit after --after, oldest first.",
        "weft changes --after 1200 --json");
    changes_cmd->add_option("--after", changes.after, "Only changes with a sequence above this");
    changes_cmd->add_option("--limit", changes.limit, "At most this many (0 = all)");
    changes_cmd->callback(
        [&] { action = [&](CommandEnv& env) { return RunChanges(env, changes); }; });

    AdminArgs admin_args;
    AddAdminCommands(app, admin, admin_args, action);
    CLI::App* spokes_cmd = AddCommand(
        app, "spokes",
        "List the spokes attached to the hub at --server: site, tags, portals, the user they\n"
        "act as, the directory leases they hold now and the chunk bytes sent and received.",
        "weft --server https://hub:9000 spokes --json");
    spokes_cmd->callback(
        [&] { action = [&](CommandEnv& env) { return RunSpokeList(env, admin); }; });
    CLI::App* cache_cmd = AddCommand(app, "cache", "Inspect a spoke's NeuralCache.",
                                     "weft --server http://127.0.0.1:9100 cache stats");
    cache_cmd->require_subcommand(1);
    CLI::App* cache_stats_cmd = AddCommand(
        *cache_cmd, "stats",
        "Show the NeuralCache of the spoke at --server: its eviction policy, what it keeps, its\n"
        "hit ratio, and what prefetching fetched, wasted and how each expert is weighted.",
        "weft --server http://127.0.0.1:9100 cache stats --json");
    cache_stats_cmd->callback(
        [&] { action = [&](CommandEnv& env) { return RunCacheStats(env, admin); }; });

    server::HubOptions serve;
    CLI::App* serve_cmd = AddCommand(
        app, "serve",
        "Run the hub: S3 (path-style) at /, health at /_weft/healthz and Prometheus metrics at\n"
        "/_weft/metrics, over the volume in --data. Root's key comes from WEFT_ROOT_ACCESS_KEY\n"
        "and WEFT_ROOT_SECRET_KEY; without them the first start generates one and prints it\n"
        "once. SIGTERM or Ctrl-C finishes requests in flight, then exits.",
        "WEFT_ROOT_ACCESS_KEY=admin WEFT_ROOT_SECRET_KEY=adminsecret weft serve --listen "
        "127.0.0.1:9000\n"
        "  aws --endpoint-url http://127.0.0.1:9000 s3 cp ./data s3://datasets/ --recursive");
    serve_cmd->add_option("--listen", serve.listen, "HOST:PORT to serve on (port 0: any free)")
        ->capture_default_str();
    serve_cmd->add_option("--tls-cert", serve.tls_cert_file, "PEM certificate: serve HTTPS");
    serve_cmd->add_option("--tls-key", serve.tls_key_file, "PEM private key for --tls-cert");
    serve_cmd->add_option("--region", serve.region, "Region clients sign requests for")
        ->capture_default_str();
    serve_cmd->add_flag("!--no-sigv2", serve.sigv2,
                        "Refuse S3 Signature Version 2 (accepted by default, for old clients)");
    serve_cmd->add_option("--access-log", serve.access_log,
                          "Append a line per S3 request (time, principal, operation, path,\n"
                          "status, bytes, latency) to this file; - for standard error");
    serve_cmd->add_option("--audit-log", serve.audit_log,
                          "The tamper-evident audit log of every request, allowed or refused\n"
                          "(default DATA/audit.log; off: none). Check it with weft audit verify");
    int64_t serve_lease_ms = serve.lease.count();
    serve_cmd
        ->add_option("--lease-ms", serve_lease_ms,
                     "How long spokes may answer from cached metadata without hearing from the hub")
        ->capture_default_str();
    std::string serve_memory_cache = "256M";
    serve_cmd->add_option("--memory-cache", serve_memory_cache, kMemoryCacheHelp)
        ->capture_default_str();
    std::string serve_metadata_cache = "80M";
    serve_cmd->add_option("--metadata-cache", serve_metadata_cache, kMetadataCacheHelp)
        ->capture_default_str();
    serve_cmd->callback([&] {
      action = [&](CommandEnv& env) {
        serve.data_dir = env.options().data_dir;
        serve.lease = std::chrono::milliseconds(serve_lease_ms);
        Status sizes =
            ParseSizeFlags({{"--memory-cache", serve_memory_cache, &serve.memory_cache_bytes, 0},
                            {"--metadata-cache", serve_metadata_cache, &serve.metadata_cache_bytes,
                             RocksKvStoreOptions::kMinCacheBytes}});
        if (!sizes.ok()) return env.Fail("serve", sizes);
        Status served = server::RunHub(serve, env.out());
        return served.ok() ? kExitOk : env.Fail("serve", served);
      };
    });

    server::SpokeOptions spoke;
    CLI::App* spoke_cmd = AddCommand(
        app, "spoke",
        "Run a spoke: extend hub directories (portals) here and serve them over S3 and REST\n"
        "as if they were local. Metadata is cached under leases from the hub (reads are never\n"
        "older than a write that finished before them); file content is fetched as chunks only\n"
        "when read and kept in --cache; writes go through to the hub and return once it has\n"
        "committed them. Other spokes can chain to this one with --hub pointing here.\n"
        "The hub user's key comes from WEFT_HUB_ACCESS_KEY / WEFT_HUB_SECRET_KEY; local clients\n"
        "sign with the spoke's own root key (WEFT_ROOT_ACCESS_KEY / WEFT_ROOT_SECRET_KEY).",
        "WEFT_HUB_ACCESS_KEY=... WEFT_HUB_SECRET_KEY=... weft spoke --hub https://hub:9000 \\\n"
        "    --cache /nvme/weft --site gpu-west --tags us,gpu --portal "
        "/datasets/imagenet:/imagenet\n"
        "  aws --endpoint-url http://127.0.0.1:9100 s3 ls s3://imagenet/");
    spoke_cmd->add_option("--hub", spoke.hub_url, "URL of the hub (or of a spoke to chain to)")
        ->required();
    spoke_cmd->add_option("--cache", spoke.cache_dir, "Directory for cached chunks and identities")
        ->capture_default_str();
    std::string cache_size = "64G";
    spoke_cmd
        ->add_option("--cache-size", cache_size,
                     "Chunk bytes to keep in --cache (K/M/G/T); --cache-policy picks what stays")
        ->capture_default_str();
    spoke_cmd->add_option("--site", spoke.site, "This site's name, as the hub lists it")
        ->required();
    spoke_cmd->add_option("--tags", spoke.tags, "Site tags for residency rules (comma-separated)")
        ->delimiter(',');
    spoke_cmd
        ->add_option("--portal", spoke.portals,
                     "HUBPATH[:LOCALPATH]: a hub directory and where it appears here (repeatable)")
        ->required();
    spoke_cmd->add_option("--listen", spoke.listen, "HOST:PORT to serve on (port 0: any free)")
        ->capture_default_str();
    spoke_cmd->add_option("--tls-cert", spoke.tls_cert_file, "PEM certificate: serve HTTPS");
    spoke_cmd->add_option("--tls-key", spoke.tls_key_file, "PEM private key for --tls-cert");
    spoke_cmd->add_option("--hub-ca-file", spoke.hub_ca_file,
                          "PEM CA certificates for an https:// hub");
    spoke_cmd->add_option("--connections", spoke.connections, "Parallel connections to the hub")
        ->capture_default_str();
    int64_t hub_timeout_ms = spoke.hub_timeout.count();
    spoke_cmd
        ->add_option("--hub-timeout-ms", hub_timeout_ms,
                     "How long a read waits for an unreachable hub before failing")
        ->capture_default_str();
    spoke_cmd->add_flag("--stale-ok", spoke.stale_ok,
                        "When the hub is unreachable, answer from metadata whose lease has\n"
                        "expired (S3 adds a 'Warning: 110' header) instead of failing");
    spoke_cmd->add_option("--region", spoke.region, "Region clients sign requests for")
        ->capture_default_str();
    spoke_cmd->add_flag("!--no-sigv2", spoke.sigv2,
                        "Refuse S3 Signature Version 2 (accepted by default, for old clients)");
    spoke_cmd->add_option("--access-log", spoke.access_log,
                          "Append a line per S3 request (time, principal, operation, path,\n"
                          "status, bytes, latency) to this file; - for standard error");
    spoke_cmd->add_option("--audit-log", spoke.audit_log,
                          "The tamper-evident audit log of every request, allowed or refused\n"
                          "(default CACHE/audit.log; off: none). Check it with weft audit verify");
    spoke_cmd
        ->add_option("--cache-policy", spoke.cache_policy,
                     "NeuralCache's eviction policy: neural (epoch-aware, falling back to\n"
                     "S3-FIFO when the data fits), epoch, s3fifo, sieve, arc, lru, pin; or off\n"
                     "(least recently used chunks, no prefetching)")
        ->capture_default_str();
    spoke_cmd
        ->add_option("--prefetch", spoke.prefetch,
                     "Prefetch experts: all, none, or a comma list of hints, epoch,\n"
                     "readahead, history, dir, peer")
        ->delimiter(',')
        ->capture_default_str();
    spoke_cmd
        ->add_option("--wan-mbit", spoke.wan_mbit,
                     "Bandwidth to the hub that prefetching plans for (Mbit/s)")
        ->capture_default_str();
    spoke_cmd
        ->add_option("--wan-rtt-ms", spoke.wan_rtt_ms,
                     "Round trip to the hub that prefetching plans for (ms)")
        ->capture_default_str();
    std::string spoke_memory_cache = "256M";
    spoke_cmd->add_option("--memory-cache", spoke_memory_cache, kMemoryCacheHelp)
        ->capture_default_str();
    spoke_cmd->callback([&] {
      action = [&](CommandEnv& env) {
        spoke.hub_timeout = std::chrono::milliseconds(hub_timeout_ms);
        Status sizes =
            ParseSizeFlags({{"--cache-size", cache_size, &spoke.cache_bytes},
                            {"--memory-cache", spoke_memory_cache, &spoke.memory_cache_bytes, 0}});
        if (!sizes.ok()) return env.Fail("spoke", sizes);
        Status served = server::RunSpoke(spoke, env.out());
        return served.ok() ? kExitOk : env.Fail("spoke", served);
      };
    });

    server::MountOptions mount;
    CLI::App* mount_cmd = AddCommand(
        app, "mount",
        "Mount a volume as a POSIX file system (FUSE) at MOUNTPOINT and serve it until\n"
        "unmounted (fusermount3 -u MOUNTPOINT) or SIGTERM. What is mounted:\n"
        "  --data DIR    a local data directory (the default, ./weft-data);\n"
        "  --hub URL     a hub, through a spoke inside this process: --cache DIR keeps the\n"
        "                chunks it reads, NeuralCache prefetches; key from\n"
        "                WEFT_HUB_ACCESS_KEY / WEFT_HUB_SECRET_KEY;\n"
        "  --server URL  a running hub or spoke; key from WEFT_ACCESS_KEY / WEFT_SECRET_KEY.\n"
        "A file written through the mount becomes a new version when it is closed or\n"
        "fsynced. Snapshots are read-only under MOUNTPOINT/.weft/snapshots/NAME/. With --hub,\n"
        "MOUNTPOINT/.weft/cache/stats shows NeuralCache and MOUNTPOINT/.weft/cache/hints takes\n"
        "a sampler's order (the body of POST cache/hints, docs/rest-api.md).",
        "WEFT_HUB_ACCESS_KEY=... WEFT_HUB_SECRET_KEY=... weft mount --hub https://hub:9000 \\\n"
        "    --cache /nvme/weft --portal /datasets /mnt/weft\n"
        "  python3 train.py --data /mnt/weft/datasets/imagenet");
    mount_cmd->add_option("MOUNTPOINT", mount.mountpoint, "An existing empty directory")
        ->required();
    mount_cmd->add_option("--hub", mount.hub_url, "Mount this hub through an embedded spoke");
    mount_cmd->add_option("--cache", mount.spoke.cache_dir, "--hub: directory for cached chunks")
        ->capture_default_str();
    std::string mount_cache_size = "64G";
    mount_cmd->add_option("--cache-size", mount_cache_size, "--hub: chunk bytes to keep (K/M/G/T)")
        ->capture_default_str();
    mount_cmd->add_option("--portal", mount.spoke.portals,
                          "--hub: HUBPATH[:LOCALPATH] to show (repeatable; default: all of /)");
    mount_cmd->add_option("--site", mount.spoke.site,
                          "--hub: this site's name at the hub (default: mount-HOSTNAME)");
    mount_cmd->add_option("--tags", mount.spoke.tags, "--hub: site tags for residency rules")
        ->delimiter(',');
    mount_cmd->add_option("--hub-ca-file", mount.spoke.hub_ca_file,
                          "PEM CA certificates for an https:// hub or server");
    mount_cmd
        ->add_option("--cache-policy", mount.spoke.cache_policy,
                     "--hub: NeuralCache's eviction policy (see 'weft spoke --help'), or off")
        ->capture_default_str();
    mount_cmd
        ->add_option("--prefetch", mount.spoke.prefetch,
                     "--hub: prefetch experts: all, none, or a comma list")
        ->delimiter(',')
        ->capture_default_str();
    mount_cmd->add_option("--wan-mbit", mount.spoke.wan_mbit, "--hub: bandwidth to plan for")
        ->capture_default_str();
    mount_cmd->add_option("--wan-rtt-ms", mount.spoke.wan_rtt_ms, "--hub: round trip to plan for")
        ->capture_default_str();
    mount_cmd->add_option("--staging", mount.staging_dir,
                          "Where open writes wait for close (default: under --data or --cache)");
    mount_cmd->add_option("--attr-timeout", mount.attr_timeout_s,
                          "Seconds the kernel trusts names and attributes (default: 1; --data: an\n"
                          "hour, since every change goes through the mount; snapshots: a day)");
    mount_cmd->add_flag("--read-only", mount.read_only, "Refuse every change");
    mount_cmd->add_flag("--allow-other", mount.allow_other,
                        "Let other users in (non-root needs user_allow_other in /etc/fuse.conf)");
    std::string mount_memory_cache = "256M";
    mount_cmd->add_option("--memory-cache", mount_memory_cache, kMemoryCacheHelp)
        ->capture_default_str();
    std::string mount_metadata_cache = "80M";
    mount_cmd
        ->add_option("--metadata-cache", mount_metadata_cache,
                     std::string("--data: ") + kMetadataCacheHelp)
        ->capture_default_str();
    mount_cmd->callback([&] {
      action = [&](CommandEnv& env) {
        Status sizes =
            ParseSizeFlags({{"--cache-size", mount_cache_size, &mount.spoke.cache_bytes},
                            {"--memory-cache", mount_memory_cache, &mount.memory_cache_bytes, 0},
                            {"--metadata-cache", mount_metadata_cache, &mount.metadata_cache_bytes,
                             RocksKvStoreOptions::kMinCacheBytes}});
        if (!sizes.ok()) return env.Fail("mount", sizes);
        // --data is the default only when nothing else says what to mount.
        mount.server_url = admin.server;
        if (!admin.ca_file.empty()) mount.spoke.hub_ca_file = admin.ca_file;
        if (app.get_option("--data")->count() > 0 ||
            (mount.hub_url.empty() && mount.server_url.empty())) {
          mount.data_dir = env.options().data_dir;
        }
        Status served = server::RunMount(mount, env.out());
        return served.ok() ? kExitOk : env.Fail("mount", served);
      };
    });

    AddCacheSimCommands(app, action);

    DemoOptions demo;
    CLI::App* demo_cmd = AddCommand(
        app, "demo",
        "See a spoke and NeuralCache at work, on this machine, in about a minute: starts a hub,\n"
        "a WAN emulator and a spoke behind it, writes an image-like dataset at the hub, and\n"
        "reads shuffled epochs of it through the spoke as a PyTorch DataLoader would (workers\n"
        "fetching batches ahead, a fixed compute time per batch; --ranks for a distributed\n"
        "job). Prints per epoch the accelerator utilisation (compute time / wall time), the\n"
        "cache hit ratio, the bytes that crossed the WAN, the read latency and the prefetches\n"
        "each expert got right. Cleans up after itself.",
        "weft demo --epochs 3 --delay-ms 20 --rate-mbit 500\n  weft demo --ranks 4 --epochs 4");
    demo_cmd->add_option("--files", demo.files, "Files in the dataset")->capture_default_str();
    demo_cmd->add_option("--mean-kb", demo.mean_kb, "Mean file size in KB (log-normal)")
        ->capture_default_str();
    demo_cmd->add_option("--epochs", demo.epochs, "Shuffled epochs to read")->capture_default_str();
    demo_cmd->add_option("--batch", demo.batch, "Files per step of the job (all ranks)")
        ->capture_default_str();
    demo_cmd->add_option("--compute-ms", demo.compute_ms, "Emulated compute per step")
        ->capture_default_str();
    demo_cmd->add_option("--workers", demo.workers, "Loader workers per rank")
        ->capture_default_str();
    demo_cmd
        ->add_option("--ranks", demo.ranks,
                     "Ranks of the job (DistributedSampler shares, stepping together; --batch\n"
                     "is split over them, so the job's pace stays the same)")
        ->capture_default_str();
    demo_cmd->add_option("--delay-ms", demo.delay_ms, "WAN one-way delay")->capture_default_str();
    demo_cmd->add_option("--rate-mbit", demo.rate_mbit, "WAN rate")->capture_default_str();
    demo_cmd->add_option("--cache-size", demo.cache_size,
                         "The spoke's --cache-size (default: 60 % of the dataset)");
    demo_cmd->add_option("--cache-policy", demo.policy, "The spoke's --cache-policy")
        ->capture_default_str();
    demo_cmd->add_option("--prefetch", demo.prefetch, "The spoke's --prefetch")
        ->capture_default_str();
    demo_cmd->add_flag("!--no-hints", demo.hints, "Do not declare each epoch's order to the spoke");
    demo_cmd->add_option("--dir", demo.dir, "Run in this new directory (default: under $TMPDIR)");
    demo_cmd->add_flag("--keep", demo.keep, "Keep the directory and the processes' logs");
    demo_cmd->add_option("--seed", demo.seed, "Seed of the dataset and the shuffles")
        ->capture_default_str();
    demo_cmd->callback([&] { action = [&](CommandEnv& env) { return RunDemo(env, demo); }; });

    CLI::App* dev_cmd = app.add_subcommand("dev", "Tools for developing and testing Weft");
    dev_cmd->require_subcommand(1);
    server::WanOptions wan;
    CLI::App* wan_cmd = AddCommand(
        *dev_cmd, "wan",
        "Emulate a WAN link: a TCP proxy that delays each direction by --delay-ms and limits\n"
        "it to --rate-mbit (shared by all connections), counting bytes. Point a spoke's --hub\n"
        "at it to see how Weft behaves across regions. SIGUSR1 cuts the link (resets every\n"
        "connection), SIGUSR2 restores it, SIGHUP prints the bytes moved so far. Runs until\n"
        "Ctrl-C, then prints the bytes moved.",
        "weft dev wan --listen 127.0.0.1:9001 --target 127.0.0.1:9000 --delay-ms 40 --rate-mbit "
        "500");
    wan_cmd->add_option("--listen", wan.listen, "HOST:PORT to accept on")->capture_default_str();
    wan_cmd->add_option("--target", wan.target, "HOST:PORT to forward to")->required();
    wan_cmd->add_option("--delay-ms", wan.delay_ms, "One-way delay in milliseconds")
        ->capture_default_str();
    wan_cmd->add_option("--rate-mbit", wan.rate_mbit, "Rate per direction in Mbit/s (0: unlimited)")
        ->capture_default_str();
    wan_cmd->add_option("--capture-dir", wan.capture_dir,
                        "Write the bytes that crossed to DIR/{upstream,downstream}.bin at exit");
    wan_cmd->callback([&] {
      action = [&](CommandEnv& env) {
        Status ran = server::RunWanEmulator(wan, env.out());
        return ran.ok() ? kExitOk : env.Fail("dev wan", ran);
      };
    });

    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
      std::string text = app.help();
      std::fwrite(text.data(), 1, text.size(), out);
      return kExitOk;
    } catch (const CLI::CallForAllHelp&) {
      std::string text = app.help("", CLI::AppFormatMode::All);
      std::fwrite(text.data(), 1, text.size(), out);
      return kExitOk;
    } catch (const CLI::CallForVersion& e) {
      std::fprintf(out, "%s\n", e.what());
      return kExitOk;
    } catch (const CLI::ParseError& e) {
      std::string cmd = CommandPath(app);
      std::fprintf(err, "weft: %s (see 'weft%s%s --help')\n", e.what(), cmd.empty() ? "" : " ",
                   cmd.c_str());
      return kExitUsage;
    }
    if (!action) {
      std::fprintf(err, "weft: no command given (see 'weft --help')\n");
      return kExitUsage;
    }
    CommandEnv env(global, opener, in_fd, out, err, err_is_tty);
    code = action(env);
    std::fflush(out);
    return code;
  } catch (const std::exception& e) {
    std::fprintf(err, "weft: internal error: %s\n", e.what());
    return kExitError;
  } catch (...) {
    std::fprintf(err, "weft: internal error: unknown exception\n");
    return kExitError;
  }
}

}  // namespace weft::cli
