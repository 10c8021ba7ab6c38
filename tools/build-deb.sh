#!/bin/bash
# Builds the Debian package as the README's "Install as a service" says: a build configured with
# prefix /usr, Release, no tests, Debian's hardening flags, then `cpack -G DEB`. Prints the path
# of the .deb on stdout (the last line); logs go to BUILD_DIR.{configure,build,cpack}.log and are
# shown on failure. Incremental: a second call on the same BUILD_DIR rebuilds only what changed.
# ccache is used when installed. Used by tests/systemd/package_deb_test.sh and tests/installed/.
# Usage: tools/build-deb.sh [BUILD_DIR]   (default ./build-deb)
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bdir=${1:-$src/build-deb}
jobs=${JOBS:-2}
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
mkdir -p "$bdir"
cmake -S "$src" -B "$bdir" -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=Release \
      -DIODRIFT_BUILD_TESTS=OFF -DIODRIFT_HARDENING=ON "${launcher[@]}" \
      >"$bdir.configure.log" 2>&1 || { cat "$bdir.configure.log" >&2; exit 1; }
cmake --build "$bdir" -j "$jobs" >"$bdir.build.log" 2>&1 || { tail -50 "$bdir.build.log" >&2; exit 1; }
rm -f "$bdir"/iodrift_*.deb
(cd "$bdir" && cpack -G DEB) >"$bdir.cpack.log" 2>&1 || { cat "$bdir.cpack.log" >&2; exit 1; }
ls "$bdir"/iodrift_*.deb
