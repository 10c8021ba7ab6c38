#!/bin/bash
# installed.setup: build the .deb as the README says (tools/build-deb.sh), make (or reuse) a
# Debian 12 tree, boot it with systemd as PID 1 in systemd-nspawn with a loop device passed in,
# and `apt install ./iodrift_*.deb` inside. The container keeps running for the installed.* checks;
# installed.teardown powers it off. On any failure here everything made so far is torn down.
#
# The tree: `debootstrap --variant=minbase bookworm` with systemd, dbus, curl and the package's
# Depends (read from the .deb, so apt inside needs no network), cached under
# $IODRIFT_TEST_CACHE (default /var/cache/iodrift-test) keyed by that package list; a changed
# Depends makes a new tree. The container boots it with --volatile=overlay (a tmpfs on top), so
# the cached tree is never written and every boot starts from the same state.
#
# Usage: setup.sh SOURCE_DIR DEB_BUILD_DIR   (IODRIFT_INSTALLED_STATE: the state directory)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
src=$1 deb_build=$2
need_root_and_tools systemd-nspawn debootstrap nsenter losetup dpkg-deb dpkg-shlibdeps cmake cpack \
  setpriv flock
cache=${IODRIFT_TEST_CACHE:-/var/cache/iodrift-test}

# Another run's container or loop device must not be taken over: the state dir is this build's.
if [ -f "$state/env" ]; then
  echo "a container from an earlier run is recorded; tearing it down first"
  bash "$here/teardown.sh"
fi
rm -rf "$state"
mkdir -p "$state"

t0=$(date +%s)
deb=$("$src/tools/build-deb.sh" "$deb_build" | tail -1)
echo "package: $deb ($(( $(date +%s) - t0 )) s to build)"

# The mirror apt on this machine uses (first deb.debian.org-style "debian" URI of the main suite).
mirror=$(grep -rhoE '^(URIs:|deb) +[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ \
           2>/dev/null | awk '{print $2}' | head -1 || true)
mirror=${IODRIFT_TEST_MIRROR:-${mirror:-http://deb.debian.org/debian}}
# The package's Depends, first alternative of each, without versions. debootstrap cannot pick a
# provider for a virtual package (libspdlog1.10-fmt9 is provided by libspdlog1.10): take the one
# installed here (the build machine has every runtime library the binaries were linked with).
real_package() {
  if [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]; then
    echo "$1"
  else
    dpkg-query -W -f='${db:Status-Status} ${Package} ${Provides}\n' | awk -v want="$1" '
      $1 == "installed" { line = $0; gsub(/\([^)]*\)/, "", line); gsub(/,/, " ", line)
                          n = split(line, f, " "); for (i = 3; i <= n; i++) if (f[i] == want && !found) found = $2 }
      END { print found }'  # (no early exit: dpkg-query would die of SIGPIPE under pipefail)
  fi
}
depends=
for dep in $(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/ //g'); do
  real=$(real_package "$dep")
  [ -n "$real" ] || die "Depends: $dep is neither installed here nor provided by an installed package"
  depends="$depends $real"
done
packages=$(printf '%s\n' systemd systemd-sysv dbus curl $depends | sort -u | paste -sd, -)
key=$(printf 'bookworm minbase %s\n' "$packages" | sha256sum | cut -c1-12)
tree=$cache/bookworm-$key
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock -w 600 9 || die "another run holds $cache/.lock for more than 10 min"
if [ ! -f "$tree/.complete" ]; then
  echo "building $tree: debootstrap --variant=minbase --include=$packages bookworm $mirror"
  t1=$(date +%s)
  rm -rf "$tree.partial"
  if ! timeout 1200 debootstrap --variant=minbase --include="$packages" bookworm "$tree.partial" \
         "$mirror" >"$state/debootstrap.log" 2>&1; then
    tail -30 "$state/debootstrap.log"
    rm -rf "$tree.partial"
    die "debootstrap failed (log above)"
  fi
  # Smaller and quicker to boot: no apt lists, no downloaded archives.
  rm -rf "$tree.partial"/var/cache/apt/archives/*.deb "$tree.partial"/var/lib/apt/lists/*_Packages
  touch "$tree.partial/.complete"
  rm -rf "$tree"
  mv "$tree.partial" "$tree"
  echo "tree built in $(( $(date +%s) - t1 )) s"
else
  echo "tree: $tree (cached)"
fi
flock -u 9

# A loop device with a 64 MiB ext4-free backing file (raw bytes: the probes read a device).
backing="$state/loop.img"
head -c 64M /dev/urandom >"$backing"
loop=$(losetup --find --show "$backing")
echo "LOOP=$loop" >"$state/env"
sha256sum <"$loop" | cut -d' ' -f1 >"$state/loop.sha256"

# Boot. systemd-nspawn with --register=no --keep-unit (this host has no machined and no bus);
# the unified cgroup hierarchy and BPF let the container's systemd enforce DeviceAllow=;
# --private-network keeps the daemon's 127.0.0.1:9723 off the host's loopback.
mkdir -p "$state/deb"
cp "$deb" "$state/deb/"
SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 setsid --wait systemd-nspawn --quiet --boot \
  --register=no --keep-unit --directory="$tree" --volatile=overlay \
  --machine="iodrift-test-$$" --private-network \
  --system-call-filter=bpf --capability=CAP_BPF \
  --bind="$loop" --bind-ro="$state/deb:/mnt/iodrift-deb" \
  --console=read-only </dev/null >"$state/console.log" 2>&1 9>&- &
nspawn=$!
echo "NSPAWN_PID=$nspawn" >>"$state/env"

# The container's PID 1: the descendant of nspawn whose innermost pid is 1.
find_leader() {
  local p
  for p in $(ps -e -o pid=,ppid= | awk -v root="$nspawn" '{ parent[$1] = $2 }
      END { for (p in parent) { q = p; while ((q in parent) && q != root && q > 1) q = parent[q]
                                if (q == root && p != root) print p } }'); do
    if awk '/^NSpid:/ { exit !(NF > 2 && $NF == 1) }' "/proc/$p/status" 2>/dev/null; then
      echo "$p"; return 0
    fi
  done
  return 1
}
leader=
boot_deadline=$(( $(date +%s) + 30 ))
until leader=$(find_leader); do
  if ! kill -0 "$nspawn" 2>/dev/null || [ "$(date +%s)" -ge "$boot_deadline" ]; then
    cat "$state/console.log"
    bash "$here/teardown.sh"
    die "the container did not start (console above)"
  fi
  sleep 0.2
done
echo "LEADER=$leader" >>"$state/env"
echo "DEB=/mnt/iodrift-deb/$(basename "$deb")" >>"$state/env"
load_state
t2=$(date +%s)
# systemctl needs systemd's private socket, which PID 1 makes a moment after it starts.
bus_up() { CT_TIMEOUT=5 ct test -S /run/systemd/private; }
wait_until 30 "systemd's /run/systemd/private in the container" bus_up || true
status=$(CT_TIMEOUT=90 ct systemctl is-system-running --wait || true)
echo "booted in $(( $(date +%s) - t2 )) s: $status"
if [ "$status" != running ]; then
  ct systemctl --failed --no-pager || true
  if [ "$status" != degraded ]; then
    cat "$state/console.log"
    bash "$here/teardown.sh"
    die "the container's systemd did not reach running (is-system-running: $status)"
  fi
fi

# As the README says: apt install ./iodrift_*.deb (offline: every Depends is in the tree).
if ! out=$(CT_TIMEOUT=180 ct env DEBIAN_FRONTEND=noninteractive apt-get install -y \
             "$DEB" 2>&1); then
  printf '%s\n' "$out" | tail -30
  bash "$here/teardown.sh"
  die "apt install of $DEB failed"
fi
printf '%s\n' "$out" | tail -3
echo "ready in $(( $(date +%s) - t0 )) s (package build, tree, boot and install)"
