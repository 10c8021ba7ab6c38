#!/bin/sh
# lint.clang_format: every C/C++ source of the project is formatted as .clang-format says
# (clang-format --dry-run -Werror, .clang-format). Fix with:
#   git ls-files '*.cpp' '*.h' '*.c' | xargs clang-format -i
# Exits 77 (skipped) when clang-format is not installed.
set -eu
src=${IODRIFT_SOURCE_DIR:?IODRIFT_SOURCE_DIR is not set}
cd "$src"
fmt=$(command -v clang-format || command -v clang-format-14 || true)
if [ -z "$fmt" ]; then
  # tools/dev.sh installs clang-format: under CI a missing one fails (IODRIFT_CI_GUARANTEED=1).
  [ "${IODRIFT_CI_GUARANTEED:-}" != 1 ] || { echo "FAILED: clang-format not found, but CI guarantees it"; exit 1; }
  echo "SKIPPED: clang-format not found (apt-get install clang-format)"; exit 77
fi
[ -f .clang-format ] || { echo "FAILED: $src/.clang-format is missing"; exit 1; }

# The check must be able to fail: a badly formatted line has to be reported.
if printf 'int  main( ){return 0;}\n' |
   "$fmt" --dry-run -Werror --assume-filename=daemon/selftest.cpp >/dev/null 2>&1; then
  echo "FAILED: clang-format accepted a badly formatted line; the check would pass anything"
  exit 1
fi

if [ -d .git ] && command -v git >/dev/null; then
  files=$(git ls-files '*.cpp' '*.h' '*.c')
else
  files=$(find daemon collectors config tests tools -name '*.cpp' -o -name '*.h' -o -name '*.c' |
          sort)
fi
count=$(printf '%s\n' "$files" | grep -c . || true)
[ "$count" -gt 0 ] || { echo "FAILED: no C/C++ sources found under $src"; exit 1; }
if ! printf '%s\n' "$files" | xargs "$fmt" --dry-run -Werror 2>/tmp/clang-format.$$; then
  grep 'error:' /tmp/clang-format.$$ | head -40
  echo "FAILED: $(grep -c 'error:' /tmp/clang-format.$$) places in $count files differ from" \
       ".clang-format; fix with: git ls-files '*.cpp' '*.h' '*.c' | xargs $fmt -i"
  rm -f /tmp/clang-format.$$
  exit 1
fi
rm -f /tmp/clang-format.$$
echo "ok: $count files formatted as .clang-format says ($($fmt --version | head -1))"
