#!/bin/bash
# Builds the Debian package the way a packager would (prefix /usr, `cpack -G DEB`) in a scratch
# build dir, then checks it without installing anything on this machine:
#   - `dpkg -c` lists every file the unit, D-Bus and docs/install.md promise, at the paths they name;
#   - the control files: Depends on the runtime libraries, the config as a conffile, a postinst
#     that runs systemd-sysusers and enables/starts nothing;
#   - extracted into a scratch root: systemd-sysusers --root creates the iodrift user there, the
#     unit's ExecStart binary and --config file exist, the packaged binary accepts the packaged
#     config (--check-config), and systemd-analyze verify passes on the installed unit;
#   - what an archive checks: lintian with no error and no warning (info tags are printed), no
#     hard Depends on systemd, maintainer scripts through deb-systemd-helper/-invoke (never a bare
#     systemctl start/stop/restart), gzip'd man pages and changelog.Debian.gz, a machine-readable
#     copyright, stripped binaries, hardening (fortify, stack protector, relro, bindnow: read
#     from the ELF files, and hardening-check when devscripts is installed).
# Usage: package_deb_test.sh SOURCE_DIR SCRATCH_BUILD_DIR
set -euo pipefail
src=$1 bdir=$2
for tool in dpkg-deb dpkg cpack cmake; do
  command -v $tool >/dev/null || { echo "skip: $tool not installed"; exit 77; }
done
command -v dpkg-shlibdeps >/dev/null || { echo "skip: dpkg-shlibdeps (dpkg-dev) not installed"; exit 77; }
command -v lintian >/dev/null || { echo "skip: lintian not installed (tools/dev.sh deps)"; exit 77; }
command -v readelf >/dev/null || { echo "skip: readelf (binutils) not installed"; exit 77; }
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi

cmake -S "$src" -B "$bdir" -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=Release \
      -DIODRIFT_BUILD_TESTS=OFF -DIODRIFT_HARDENING=ON "${launcher[@]}" >"$bdir.configure.log" 2>&1 || { cat "$bdir.configure.log"; exit 1; }
cmake --build "$bdir" -j2 >"$bdir.build.log" 2>&1 || { tail -50 "$bdir.build.log"; exit 1; }
rm -f "$bdir"/iodrift_*.deb
(cd "$bdir" && cpack -G DEB) >"$bdir.cpack.log" 2>&1 || { cat "$bdir.cpack.log"; exit 1; }
deb=$(ls "$bdir"/iodrift_*.deb)
echo "package: $deb"

fail=0
listing=$(dpkg -c "$deb")
paths=$(awk '{print $6}' <<<"$listing")
expect_file() {
  if ! grep -qx "\./${1#/}" <<<"$paths"; then
    echo "FAIL: $1 missing from the package"; fail=1
  fi
}
expect_file /usr/sbin/iodriftd
expect_file /etc/iodrift/iodrift.yaml
expect_file /lib/systemd/system/iodrift.service
expect_file /usr/lib/sysusers.d/iodrift.conf
expect_file /usr/share/dbus-1/system-services/org.iodrift.Monitor1.service
expect_file /usr/share/man/man8/iodriftd.8.gz
expect_file /usr/share/doc/iodrift/changelog.Debian.gz
expect_file /usr/share/doc/iodrift/copyright
expect_file /usr/share/iodrift/dashboards/iodrift-overview.json
expect_file /usr/share/iodrift/dashboards/iodrift-fleet.json
expect_file /usr/share/iodrift/prometheus/iodrift-alerts.rules.yml
expect_file /usr/share/iodrift/prometheus/iodrift-recording.rules.yml
if [ -f "$src/systemd/org.iodrift.Monitor1.conf" ]; then
  expect_file /usr/share/dbus-1/system.d/org.iodrift.Monitor1.conf
fi
if [ -d "$src/tools/iodriftctl" ]; then
  expect_file /usr/bin/iodriftctl
  expect_file /usr/share/man/man1/iodriftctl.1.gz
fi
# Nothing may land in /usr/local or the build tree.
if awk '{print $6}' <<<"$listing" | grep -E '^\./(usr/local|tmp|work)/' >/dev/null; then
  echo "FAIL: files outside the system paths"; fail=1
fi

control=$(dpkg-deb -f "$deb")
echo "$control" | grep -E '^(Package|Version|Depends):'
grep -q '^Package: iodrift$' <<<"$control" || { echo "FAIL: package name"; fail=1; }
libs="libyaml-cpp libsdbus-c++ libmicrohttpd"
# libprometheus-cpp-core: only while a binary links one of its symbols. Since the exposition
# writer (daemon/exposition.h) replaced its TextSerializer, iodriftd uses prometheus-cpp's headers
# only (the MetricFamily model) and --as-needed drops the library, so no Depends either.
if objdump -p "$bdir/bin/iodriftd" | grep -q 'NEEDED.*libprometheus-cpp-core'; then
  libs="libprometheus-cpp-core $libs"
fi
# dpkg-shlibdeps leaves out a library whose symbols are unused: libsystemd0 appears once the
# daemon calls sd_notify (daemon/app.cpp wired to SystemdNotifier).
if grep -q "READY=1" "$bdir/bin/iodriftd"; then libs="libsystemd0 $libs"; fi
if grep -qE '^(Pre-)?Depends:.*\bsystemd\b([^-]|$)' <<<"$control"; then
  echo "FAIL: hard Depends on systemd"; fail=1
fi
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
  if grep -vE '^\s*#' "$ctl/$script" | grep -qE 'systemctl [^|]*(start|stop|restart)'; then
    echo "FAIL: $script calls systemctl start/stop/restart (use deb-systemd-invoke)"; fail=1
  fi
done
grep -q "deb-systemd-invoke stop 'iodrift.service'" "$ctl/prerm" \
  || { echo "FAIL: prerm does not stop the service with deb-systemd-invoke"; fail=1; }
grep -q "deb-systemd-invoke try-restart 'iodrift.service'" "$ctl/postinst" \
  || { echo "FAIL: postinst does not try-restart on upgrade with deb-systemd-invoke"; fail=1; }
grep -q "deb-systemd-helper purge 'iodrift.service'" "$ctl/postrm" \
  || { echo "FAIL: postrm does not purge the unit state with deb-systemd-helper"; fail=1; }

# A scratch root: files where the unit expects them.
dpkg-deb -x "$deb" "$root"
head -1 "$root/usr/share/doc/iodrift/copyright" | grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' \
  || { echo "FAIL: copyright is not machine-readable (DEP-5)"; fail=1; }
zcat "$root/usr/share/doc/iodrift/changelog.Debian.gz" | sed -n 1p \
  | grep -q "^iodrift ($(dpkg-deb -f "$deb" Version))" \
  || { echo "FAIL: changelog.Debian.gz does not start with this version"; fail=1; }
for bin in usr/sbin/iodriftd usr/bin/iodriftctl; do
  [ -f "$root/$bin" ] || continue
  if readelf -S "$root/$bin" | grep -qE '\.debug_|\.symtab'; then
    echo "FAIL: $bin is not stripped"; fail=1
  fi
  # (Output captured first: grep -q closing a pipe early would fail it under pipefail.)
  dynamic=$(readelf -d "$root/$bin"); segments=$(readelf -l "$root/$bin")
  symbols=$(readelf --dyn-syms -W "$root/$bin")
  grep -qE 'BIND_NOW|FLAGS_1.*NOW' <<<"$dynamic" || { echo "FAIL: $bin lacks BIND_NOW (-z now)"; fail=1; }
  grep -q 'GNU_RELRO' <<<"$segments" || { echo "FAIL: $bin lacks RELRO"; fail=1; }
  grep -q '__stack_chk_fail' <<<"$symbols" || { echo "FAIL: $bin lacks the stack protector"; fail=1; }
  grep -qE '__[a-z_]+_chk@' <<<"$symbols" \
    || { echo "FAIL: $bin has no fortified libc calls (_FORTIFY_SOURCE)"; fail=1; }
  if command -v hardening-check >/dev/null; then
    # --nocfprotection: built with -fcf-protection (endbr64 throughout), but the ELF gets no CET
    # property note unless every linked object has one; not among the flags the package promises.
    hardening-check --nocfprotection "$root/$bin" || { echo "FAIL: hardening-check $bin"; fail=1; }
  fi
done

# lintian as an archive runs it: no error, no warning. Info tags are shown; the ones kept are
# listed with their reasons in systemd/README.md ("Debian package").
echo "lintian --display-info $(basename "$deb"):"
lintian_out=$(lintian --display-info --tag-display-limit 0 "$deb" 2>&1) || true
echo "${lintian_out:-(no tags)}"
if grep -qE '^[EW]: ' <<<"$lintian_out"; then
  echo "FAIL: lintian reports errors or warnings"; fail=1
fi
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
