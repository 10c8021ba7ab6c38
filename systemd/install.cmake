# Install rules for the service files, man pages, dashboards and rules, and the Debian package
# (CPack DEB). Included by the top-level CMakeLists.txt after GNUInstallDirs and the iodriftd
# install rule.
#
# Paths. systemd, sysusers and D-Bus only look in fixed system directories, so those
# destinations are absolute (DESTDIR still applies: `DESTDIR=/tmp/root cmake --install build`).
# With the usual package prefix /usr they are the Debian 12 places; with another prefix (e.g.
# /usr/local) the unit goes to <prefix>/lib/systemd/system, which systemd also searches, and its
# ExecStart=/config path follow the prefix. Man pages, dashboards and rules follow the prefix.
#
# Package: configure with -DCMAKE_INSTALL_PREFIX=/usr (GNUInstallDirs then puts the config in
# /etc), build, then `cpack -G DEB` in the build dir (or `cmake --build build --target package`).

set(_iodrift_sd_dir ${CMAKE_CURRENT_LIST_DIR})

if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(_iodrift_unitdir_default /lib/systemd/system)
  set(_iodrift_sysusersdir_default /usr/lib/sysusers.d)
  set(_iodrift_dbusdir_default /usr/share/dbus-1)
else()
  set(_iodrift_unitdir_default ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
  set(_iodrift_sysusersdir_default ${CMAKE_INSTALL_PREFIX}/lib/sysusers.d)
  set(_iodrift_dbusdir_default ${CMAKE_INSTALL_PREFIX}/share/dbus-1)
endif()
set(IODRIFT_SYSTEMD_UNITDIR ${_iodrift_unitdir_default} CACHE PATH "systemd system unit directory")
set(IODRIFT_SYSUSERSDIR ${_iodrift_sysusersdir_default} CACHE PATH "sysusers.d directory")
set(IODRIFT_DBUS_DATADIR ${_iodrift_dbusdir_default} CACHE PATH
    "D-Bus data directory (system-services/ and system.d/ below it)")

# The unit names the binary and the config by absolute path; follow the install prefix.
file(READ ${_iodrift_sd_dir}/iodrift.service _iodrift_unit)
string(REPLACE "/usr/sbin/iodriftd" "${CMAKE_INSTALL_FULL_SBINDIR}/iodriftd"
       _iodrift_unit "${_iodrift_unit}")
string(REPLACE "/etc/iodrift/" "${CMAKE_INSTALL_FULL_SYSCONFDIR}/iodrift/"
       _iodrift_unit "${_iodrift_unit}")
file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/systemd/iodrift.service CONTENT "${_iodrift_unit}")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_iodrift_sd_dir}/iodrift.service)

install(FILES ${CMAKE_BINARY_DIR}/systemd/iodrift.service
        DESTINATION ${IODRIFT_SYSTEMD_UNITDIR})
install(FILES ${_iodrift_sd_dir}/iodrift.sysusers
        DESTINATION ${IODRIFT_SYSUSERSDIR} RENAME iodrift.conf)
if(EXISTS ${_iodrift_sd_dir}/iodrift.tmpfiles)
  install(FILES ${_iodrift_sd_dir}/iodrift.tmpfiles
          DESTINATION ${CMAKE_INSTALL_PREFIX}/lib/tmpfiles.d RENAME iodrift.conf)
endif()
install(FILES ${_iodrift_sd_dir}/org.iodrift.Monitor1.service
        DESTINATION ${IODRIFT_DBUS_DATADIR}/system-services)
if(EXISTS ${_iodrift_sd_dir}/org.iodrift.Monitor1.conf)  # the D-Bus policy (daemon/dbus work)
  install(FILES ${_iodrift_sd_dir}/org.iodrift.Monitor1.conf
          DESTINATION ${IODRIFT_DBUS_DATADIR}/system.d)
endif()
# Man pages and the Debian changelog go in gzip -9n (Debian policy 12.1, 12.7; no timestamp, so
# the package is reproducible).
find_program(IODRIFT_GZIP gzip REQUIRED)
function(_iodrift_gzip source output)
  add_custom_command(OUTPUT ${output}
                     COMMAND ${IODRIFT_GZIP} -9nc ${source} > ${output}
                     DEPENDS ${source} VERBATIM)
endfunction()
set(_iodrift_gz_dir ${CMAKE_BINARY_DIR}/systemd/gz)
file(MAKE_DIRECTORY ${_iodrift_gz_dir})
_iodrift_gzip(${_iodrift_sd_dir}/iodriftd.8 ${_iodrift_gz_dir}/iodriftd.8.gz)
_iodrift_gzip(${_iodrift_sd_dir}/iodriftctl.1 ${_iodrift_gz_dir}/iodriftctl.1.gz)
_iodrift_gzip(${_iodrift_sd_dir}/debian/changelog ${_iodrift_gz_dir}/changelog.Debian.gz)
add_custom_target(iodrift_compressed_docs ALL DEPENDS
                  ${_iodrift_gz_dir}/iodriftd.8.gz ${_iodrift_gz_dir}/iodriftctl.1.gz
                  ${_iodrift_gz_dir}/changelog.Debian.gz)
install(FILES ${_iodrift_gz_dir}/iodriftd.8.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
if(TARGET iodriftctl)
  install(FILES ${_iodrift_gz_dir}/iodriftctl.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()
install(FILES ${_iodrift_gz_dir}/changelog.Debian.gz ${_iodrift_sd_dir}/debian/copyright
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
# One lintian override, with its reason in the file (systemd/README.md lists it too).
install(FILES ${_iodrift_sd_dir}/debian/lintian-overrides
        DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides RENAME iodrift)

# Hardening (Debian's dpkg-buildflags with hardening=+all): fortified libc calls, stack
# protector, stack clash and control-flow protection, full RELRO with immediate binding. On for the package build (see
# docs/install.md); needs optimisation (_FORTIFY_SOURCE), so not for Debug builds.
option(IODRIFT_HARDENING "Build with Debian's hardening flags (fortify, stack protector, relro, now)"
       OFF)
if(IODRIFT_HARDENING)
  # Control-flow protection (CET) as dpkg-buildflags adds it on amd64; not every target has it.
  include(CheckCXXCompilerFlag)
  check_cxx_compiler_flag(-fcf-protection _iodrift_cf_protection)
  foreach(_iodrift_target ${IODRIFT_LIBRARIES} iodriftd iodriftctl)
    if(TARGET ${_iodrift_target})
      target_compile_definitions(${_iodrift_target} PRIVATE _FORTIFY_SOURCE=2)
      target_compile_options(${_iodrift_target} PRIVATE -fstack-protector-strong
                             -fstack-clash-protection -Wformat -Werror=format-security)
      if(_iodrift_cf_protection)
        target_compile_options(${_iodrift_target} PRIVATE -fcf-protection)
      endif()
      target_link_options(${_iodrift_target} PRIVATE -Wl,-z,relro -Wl,-z,now)
    endif()
  endforeach()
endif()
install(FILES ${_iodrift_sd_dir}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME systemd.md)

# Dashboards and rules: /usr/share/iodrift/{dashboards,prometheus}/
install(FILES ${CMAKE_SOURCE_DIR}/dashboards/iodrift-overview.json
              ${CMAKE_SOURCE_DIR}/dashboards/iodrift-fleet.json
              ${CMAKE_SOURCE_DIR}/dashboards/README.md
        DESTINATION ${CMAKE_INSTALL_DATADIR}/iodrift/dashboards)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/dashboards/prometheus/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/iodrift/prometheus
        PATTERN tests EXCLUDE)

# Debian package ----------------------------------------------------------------------------------
if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  message(STATUS "iodrift: CMAKE_INSTALL_PREFIX is ${CMAKE_INSTALL_PREFIX}; configure with "
                 "-DCMAKE_INSTALL_PREFIX=/usr to build the Debian package")
endif()
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME iodrift)
set(CPACK_PACKAGE_VENDOR "iodrift")
# The Maintainer field (and the changelog trailer in debian/changelog): a packager sets their own.
set(IODRIFT_DEB_MAINTAINER "iodrift maintainers <maintainers@iodrift.org>" CACHE STRING
    "Maintainer field of the Debian package")
set(CPACK_PACKAGE_CONTACT "${IODRIFT_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${IODRIFT_DEB_MAINTAINER}")
# CPack writes the synopsis (first line) from the summary and the extended description from
# CPACK_DEBIAN_PACKAGE_DESCRIPTION (which must not repeat the synopsis), each line indented by one
# space; "." alone is an empty line. Lines stay under 80 columns (lintian).
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "read-throughput and memory-state monitor for Prometheus")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "iodriftd runs light, budgeted read probes (page cache, buffered, O_DIRECT,
random, metadata, memory) on block devices and files across a machine's
lifecycle, and exports each result together with the memory state of the
moment (meminfo, vmstat, slabinfo, PSI, buddyinfo) as Prometheus metrics on
127.0.0.1:9723. A hardened systemd unit, a D-Bus interface with the
iodriftctl client, Grafana dashboards and Prometheus alert rules are
included.
.
The service is installed but neither enabled nor started.")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/iodrift/iodrift")
# Debian revision 1: a non-native package (upstream version 0.1.0, first packaging), so the
# changelog is changelog.Debian.gz; debian/changelog's top entry must carry the same version.
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # iodrift_<version>-1_<arch>.deb
# dpkg-shlibdeps computes Depends from the binaries' NEEDED libraries (libyaml-cpp0.7,
# libsdbus-c++1, libmicrohttpd12, libsystemd0, ...). No hard Depends on systemd:
# the daemon runs without it (by hand, in a container); the postinst uses systemd-sysusers when
# present, else useradd (package passwd, priority required).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Binaries are stripped (lintian: unstripped-binary-or-object). No -dbgsym package: CPack makes
# one only for component packages; debug info is a rebuild away (RelWithDebInfo, same sources).
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "prometheus, grafana")
# Absolute destinations (/etc, /lib/systemd, /usr/share/dbus-1) need DESTDIR-style staging.
set(CPACK_SET_DESTDIR ON)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(_iodrift_conffile "${CMAKE_INSTALL_FULL_SYSCONFDIR}/iodrift/iodrift.yaml")
set(_iodrift_sysusers_conf "${IODRIFT_SYSUSERSDIR}/iodrift.conf")
set(_iodrift_sysusers_name "iodrift.conf")
configure_file(${_iodrift_sd_dir}/debian/conffiles.in ${CMAKE_BINARY_DIR}/debian/conffiles @ONLY)
configure_file(${_iodrift_sd_dir}/debian/postinst.in ${CMAKE_BINARY_DIR}/debian/postinst @ONLY
               FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
               WORLD_READ WORLD_EXECUTE)
configure_file(${_iodrift_sd_dir}/debian/prerm.in ${CMAKE_BINARY_DIR}/debian/prerm @ONLY
               FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
               WORLD_READ WORLD_EXECUTE)
configure_file(${_iodrift_sd_dir}/debian/postrm.in ${CMAKE_BINARY_DIR}/debian/postrm @ONLY
               FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
               WORLD_READ WORLD_EXECUTE)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_BINARY_DIR}/debian/conffiles
    ${CMAKE_BINARY_DIR}/debian/postinst
    ${CMAKE_BINARY_DIR}/debian/prerm
    ${CMAKE_BINARY_DIR}/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
