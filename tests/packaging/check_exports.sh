#!/usr/bin/env bash
# check_exports.sh LIB - the shared library exports the public zkl_ API and
# nothing else (no zkl__ internals), every symbol under the ZKLOCK_0 version.
set -uo pipefail
lib=$1
syms=$(nm -D --defined-only "$lib" | awk '$2 ~ /[TDBRVW]/ {print $3}' | sort -u)
bad=$(grep -v '^zkl_[a-z][A-Za-z0-9_]*@@ZKLOCK_0$' <<<"$(nm -D --defined-only --with-symbol-versions "$lib" | awk '$2 ~ /[TDBRVW]/ {print $3}')" | grep -v '^ZKLOCK_0@@ZKLOCK_0$' || true)
n=$(grep -c '^zkl_' <<<"$syms")
internal=$(grep -c '^zkl__' <<<"$syms")
if [[ -z $bad && $internal == 0 && $n -gt 50 ]]; then
  echo "exports: $n public zkl_ symbols under ZKLOCK_0, no internals"
  echo "exports: 1 passed, 0 failed"
else
  echo "exports: unexpected exports of $lib:"; echo "$bad" | head -20
  echo "exports: 0 passed, 1 failed"; exit 1
fi
