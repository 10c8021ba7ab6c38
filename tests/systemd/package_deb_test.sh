#!/bin/bash
# Builds the Debian package the way a packager would (prefix /usr, `cpack -G DEB`) in a scratch
# build dir, then checks it without installing anything on this machine:
#   - `dpkg -c` lists every file the unit, D-Bus and the README promise, at the paths they name;
#   - the control files: Depends on the runtime libraries, the config as a conffile, a postinst
#     that runs systemd-sysusers and enables/starts nothing;
#   - extracted into a scratch root: systemd-sysusers --root creates the iodrift user there, the
#     unit's ExecStart binary and --config file exist, the packaged binary accepts the packaged
#     config (--check-config), and systemd-analyze verify passes on the installed unit.
# Usage: package_deb_test.sh SOURCE_DIR SCRATCH_BUILD_DIR
set -euo pipefail
src=$1 bdir=$2
for tool in dpkg-deb dpkg cpack cmake; do
  command -v $tool >/dev/null || { echo "skip: $tool not installed"; exit 77; }
done
command -v dpkg-shlibdeps >/dev/null || { echo "skip: dpkg-shlibdeps (dpkg-dev) not installed"; exit 77; }

cmake -S "$src" -B "$bdir" -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=Release \
      -DIODRIFT_BUILD_TESTS=OFF >"$bdir.configure.log" 2>&1 || { cat "$bdir.configure.log"; exit 1; }
cmake --build "$bdir" -j2 >"$bdir.build.log" 2>&1 || { tail -50 "$bdir.build.log"; exit 1; }
rm -f "$bdir"/iodrift_*.deb
(cd "$bdir" && cpack -G DEB) >"$bdir.cpack.log" 2>&1 || { cat "$bdir.cpack.log"; exit 1; }
deb=$(ls "$bdir"/iodrift_*.deb)
echo "package: $deb"

fail=0
listing=$(dpkg -c "$deb")
expect_file() {
  if ! awk '{print $6}' <<<"$listing" | grep -qx "\./${1#/}"; then
    echo "FAIL: $1 missing from the package"; fail=1
  fi
}
expect_file /usr/sbin/iodriftd
expect_file /etc/iodrift/iodrift.yaml
expect_file /lib/systemd/system/iodrift.service
expect_file /usr/lib/sysusers.d/iodrift.conf
expect_file /usr/share/dbus-1/system-services/org.iodrift.Monitor1.service
expect_file /usr/share/man/man8/iodriftd.8
expect_file /usr/share/iodrift/dashboards/iodrift-overview.json
expect_file /usr/share/iodrift/dashboards/iodrift-fleet.json
expect_file /usr/share/iodrift/prometheus/iodrift-alerts.rules.yml
expect_file /usr/share/iodrift/prometheus/iodrift-recording.rules.yml
if [ -f "$src/systemd/org.iodrift.Monitor1.conf" ]; then
  expect_file /usr/share/dbus-1/system.d/org.iodrift.Monitor1.conf
fi
if [ -d "$src/tools/iodriftctl" ]; then
  expect_file /usr/bin/iodriftctl
  expect_file /usr/share/man/man1/iodriftctl.1
fi
# Nothing may land in /usr/local or the build tree.
if awk '{print $6}' <<<"$listing" | grep -E '^\./(usr/local|tmp|work)/'; then
  echo "FAIL: files outside the system paths"; fail=1
fi

control=$(dpkg-deb -f "$deb")
echo "$control" | grep -E '^(Package|Version|Depends):'
grep -q '^Package: iodrift$' <<<"$control" || { echo "FAIL: package name"; fail=1; }
libs="libprometheus-cpp-core libyaml-cpp libsdbus-c++ libmicrohttpd"
# dpkg-shlibdeps leaves out a library whose symbols are unused: libsystemd0 appears once the
# daemon calls sd_notify (daemon/app.cpp wired to SystemdNotifier).
if grep -q "READY=1" "$bdir/bin/iodriftd"; then libs="libsystemd0 $libs"; fi
for lib in $libs; do
  grep -q "^Depends:.*$lib" <<<"$control" || { echo "FAIL: Depends lacks $lib"; fail=1; }
done
ctl=$(mktemp -d); root=$(mktemp -d); trap 'rm -rf "$ctl" "$root"' EXIT
dpkg-deb -e "$deb" "$ctl"
grep -qx /etc/iodrift/iodrift.yaml "$ctl/conffiles" || { echo "FAIL: config is not a conffile"; fail=1; }
grep -q 'systemd-sysusers' "$ctl/postinst" || { echo "FAIL: postinst does not run systemd-sysusers"; fail=1; }
if grep -vE '^\s*#' "$ctl/postinst" | grep -qE 'systemctl (--system )?(enable|start|restart)|deb-systemd-helper enable'; then
  echo "FAIL: postinst enables or starts the service"; fail=1
fi
for script in postinst prerm postrm; do
  sh -n "$ctl/$script" || { echo "FAIL: $script is not valid sh"; fail=1; }
done

# A scratch root: files where the unit expects them.
dpkg-deb -x "$deb" "$root"
unit="$root/lib/systemd/system/iodrift.service"
exec_bin=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")
config=$(sed -n 's/^ExecStart=.*--config \([^ ]*\).*/\1/p' "$unit")
[ "$exec_bin" = /usr/sbin/iodriftd ] || { echo "FAIL: ExecStart names $exec_bin"; fail=1; }
[ -x "$root$exec_bin" ] || { echo "FAIL: $exec_bin not in the package"; fail=1; }
[ -f "$root$config" ] || { echo "FAIL: --config $config not in the package"; fail=1; }
"$root$exec_bin" --check-config --config "$root$config" || { echo "FAIL: packaged config rejected"; fail=1; }
if command -v systemd-sysusers >/dev/null; then
  mkdir -p "$root/etc"; : >"$root/etc/passwd"; : >"$root/etc/group"
  systemd-sysusers --root="$root" "$root/usr/lib/sysusers.d/iodrift.conf"
  grep -q '^iodrift:' "$root/etc/passwd" || { echo "FAIL: sysusers made no iodrift user"; fail=1; }
  grep -q '^iodrift:' "$root/etc/group" || { echo "FAIL: sysusers made no iodrift group"; fail=1; }
fi
if command -v systemd-analyze >/dev/null && command -v man >/dev/null; then
  mkdir -p "$ctl/unit"
  sed "s#^ExecStart=/usr/sbin/iodriftd#ExecStart=$root/usr/sbin/iodriftd#" "$unit" >"$ctl/unit/iodrift.service"
  out=$(MANPATH="$root/usr/share/man" systemd-analyze verify "$ctl/unit/iodrift.service" 2>&1) \
    || { echo "$out"; echo "FAIL: verify of the installed unit"; fail=1; }
  if grep -q iodrift <<<"$out"; then echo "$out"; echo "FAIL: verify warnings"; fail=1; fi
fi

[ $fail = 0 ] && echo "ok: $(basename "$deb") ($(wc -l <<<"$listing") entries)"
exit $fail
