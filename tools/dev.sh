#!/usr/bin/env bash
# iodrift developer entry point: one command to set up and run, one to set up and test.
#
#   tools/dev.sh run [IODRIFTD ARGS...]   install missing Debian packages, build only iodriftd
#                                         (not iodriftctl or the tests), run it in the foreground
#                                         on its embedded default config
#   tools/dev.sh test [CTEST ARGS...]     install missing packages, build everything, run the
#                                         whole suite
#   tools/dev.sh deps | build             the individual steps (build: everything)
#
# run and test share one build directory: both configure it the same way (tests on), so a test
# after a run compiles only what the run left out.
#
# Environment: BUILD_DIR (default ./build), BUILD_TYPE (RelWithDebInfo), CMAKE_ARGS (extra
# configure flags, e.g. -DIODRIFT_SANITIZE=ON), JOBS (default nproc).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$here/build}
build_type=${BUILD_TYPE:-RelWithDebInfo}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

# Build and runtime dependencies (Debian 12 package names).
build_packages=(
  build-essential cmake pkg-config git
  prometheus-cpp-dev libmicrohttpd-dev zlib1g-dev libyaml-cpp-dev libspdlog-dev libfmt-dev
  libsdbus-c++-dev libsdbus-c++-bin libsystemd-dev libexpected-dev libgtest-dev libgmock-dev
  libgnutls28-dev libcrypt-dev
)
# What the test suite drives for real.
test_packages=(
  python3 curl prometheus prometheus-alertmanager prometheus-node-exporter dbus util-linux e2fsprogs fuse3 libfuse3-dev clang-14 libclang-rt-14-dev
  openssl wrk time chromium clang-format lintian devscripts victoria-metrics mbw sshfs openssh-server
  btrfs-progs debootstrap systemd-container libglib2.0-bin
)
# The dashboards' schema check (tests/dashboards/schema_check.py) needs node and npm; Debian's
# packages unless a node is already on PATH (e.g. from nodesource, whose nodejs bundles npm).
node_packages=()
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || node_packages=(nodejs npm)

log() { printf 'dev.sh: %s\n' "$*" >&2; }

install_missing() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing: ${missing[*]}"
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
}

# build [TARGET...]: configure, then build the targets named (none: everything).
build() {
  # shellcheck disable=SC2086
  cmake -S "$here" -B "$build_dir" -DCMAKE_BUILD_TYPE="$build_type" ${CMAKE_ARGS:-} >/dev/null
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  cmake --build "$build_dir" -j "$jobs" "${targets[@]}"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  deps)
    install_missing "${build_packages[@]}" "${test_packages[@]}" "${node_packages[@]}" ;;
  build)
    install_missing "${build_packages[@]}"
    build ;;
  run)
    install_missing "${build_packages[@]}"
    build iodriftd
    log "starting $build_dir/bin/iodriftd $* (Ctrl-C stops it)"
    exec "$build_dir/bin/iodriftd" "$@" ;;
  test)
    install_missing "${build_packages[@]}" "${test_packages[@]}" "${node_packages[@]}"
    build
    cd "$build_dir"
    exec ctest -j "${CTEST_JOBS:-2}" --output-on-failure --timeout 600 "$@" ;;
  *)
    # The header comment (line 2 up to the first line that is not a comment) is the help.
    awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "${BASH_SOURCE[0]}"
    [ -z "$cmd" ] || [ "$cmd" = help ] || [ "$cmd" = -h ] || exit 2 ;;
esac
