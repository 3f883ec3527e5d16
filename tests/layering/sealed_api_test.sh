#!/bin/bash
# The public API is sealed: the headers applications include (every farm/api header but
# node_host.h, which is for the code that owns a node) pull in — transitively — no
# header of tx/, alloc/, membership/ or farm/node/ and no generated protobuf code.
# Usage: sealed_api_test.sh CXX SOURCE_DIR
set -euo pipefail
cxx=$1 src=$2
status=0
for header in "$src"/farm/api/*.h; do
  [ "$(basename "$header")" = node_host.h ] && continue
  deps=$("$cxx" -std=c++20 -I"$src" -MM -x c++ "$header")
  leaked=$(tr ' \\' '\n\n' <<<"$deps" | grep -E "(^|/)(tx|alloc|membership|farm/node)/|\.pb\.h$" || true)
  if [ -n "$leaked" ]; then
    echo "FAIL: ${header#$src/} pulls in:" $leaked
    status=1
  else
    echo "ok: ${header#$src/} ($(tr ' \\' '\n\n' <<<"$deps" | grep -c '\.h$') project headers)"
  fi
done
# The check itself must fail on a leak: a header that includes the transaction layer.
probe=$(mktemp --suffix=.h)
trap 'rm -f "$probe"' EXIT
printf '#include "farm/api/farm.h"\n#include "tx/transaction.h"\n' >"$probe"
if ! "$cxx" -std=c++20 -I"$src" -MM -x c++ "$probe" | tr ' \\' '\n\n' | grep -qE "(^|/)tx/"; then
  echo "FAIL: the probe's tx/ include was not seen: the check is blind"
  status=1
fi
exit $status
