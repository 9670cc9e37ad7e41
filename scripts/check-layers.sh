#!/usr/bin/env bash
# Rejects an #include that points up the layer stack of DESIGN.md §2 (one-way dependencies),
# and (with --format) any C++ file clang-format would change. Exit 1 with the offending lines.
set -euo pipefail
cd "$(dirname "$0")/.."

# module -> modules it may include (itself is always allowed).
declare -A allowed=(
  [base]=""
  [io]="base"
  [chunk]="base io"
  [meta]="base io"
  [vfs]="base io chunk meta"
  [auth]="base io chunk meta vfs"
  [access]="base io chunk meta vfs auth"
  [net]="base"
  [cache]="base"
  [frontends]="base io meta vfs auth access net"
  [fabric]="base io chunk meta vfs auth access net cache"
  [server]="base io chunk meta vfs auth access net frontends cache fabric"
  [cli]="base io chunk meta vfs auth access net frontends cache fabric server"
)

bad=0
for module in "${!allowed[@]}"; do
  [ -d "src/$module" ] || continue
  while IFS= read -r line; do
    file=${line%%:*}
    target=$(sed -E 's/.*#include "([a-z_]+)\/.*/\1/' <<<"$line")
    [ "$target" = "$module" ] && continue
    # A front end's tests build the stack below it (a LocalVolume over a MemChunkStore).
    [[ "$module" = frontends && "$target" = chunk && "$file" = *_test.cc ]] && continue
    if [[ " ${allowed[$module]} " != *" $target "* ]]; then
      echo "layering: $line  ($module may not include $target)"
      bad=1
    fi
  done < <(grep -rnE '^#include "[a-z_]+/' "src/$module" || true)
done

# Front ends never include each other: each one only parses its protocol and calls vfs.
for frontend in src/frontends/*/; do
  [ -d "$frontend" ] || continue
  name=$(basename "$frontend")
  while IFS= read -r line; do
    echo "layering: $line  (front end $name may not include another front end)"
    bad=1
  done < <(grep -rnE '^#include "frontends/' "$frontend" | grep -v "\"frontends/$name/" || true)
done

# One authorisation path: only the identity store (src/auth) and the AuthorizedVolume
# (src/access) decide what a principal may do; front ends ask the volume (Check, CheckNode,
# Allows) and never the identity store.
while IFS= read -r line; do
  echo "authorisation: $line  (decide through access::AuthorizedVolume)"
  bad=1
done < <(grep -rnE '(\.|->)(Authorize|Granted|MayTraverse)\(' src --include='*.cc' --include='*.h' |
         grep -vE '^src/(auth|access)/' || true)

# Front ends reach the namespace only through the AuthorizedVolume they are given: none may
# open an engine (tests build their own stack).
while IFS= read -r line; do
  echo "authorisation: $line  (front ends take an access::AuthorizedVolume)"
  bad=1
done < <(grep -rnE '^#include "(vfs/local_volume|fabric/.*)\.h"' src/frontends |
         grep -v '_test\.cc:' || true)

if [ "${1:-}" = "--format" ] && command -v clang-format >/dev/null; then
  while IFS= read -r f; do
    if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
      echo "format: clang-format would change $f"
      bad=1
    fi
  done < <(git ls-files 'src/*.cc' 'src/*.h' 'bench/*.cc' 'tests/*.cc')
fi
exit $bad
