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
install(FILES ${_iodrift_sd_dir}/iodriftd.8 DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
if(TARGET iodriftctl)
  install(FILES ${_iodrift_sd_dir}/iodriftctl.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
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
set(CPACK_PACKAGE_CONTACT "iodrift maintainers <iodrift@localhost>")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "iodrift maintainers <iodrift@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "read throughput across a machine's lifecycle, with the memory state of every moment")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "read throughput across a machine's lifecycle, with the memory state of every moment
 iodriftd runs light, budgeted read probes (page cache, buffered, O_DIRECT,
 random, metadata, memory) on block devices and files, and exports each result
 together with meminfo, vmstat, slabinfo, PSI and buddyinfo as Prometheus
 metrics on 127.0.0.1:9723. A hardened systemd unit, D-Bus interface, Grafana
 dashboards and Prometheus alert rules are included.
 .
 The service is installed but neither enabled nor started.")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/iodrift/iodrift")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # iodrift_<version>_<arch>.deb
# dpkg-shlibdeps computes Depends from the binaries' NEEDED libraries (libprometheus-cpp-core1.0,
# libyaml-cpp0.7, libsdbus-c++1, libmicrohttpd12, libsystemd0, ...). systemd provides
# systemd-sysusers for the postinst.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "systemd")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "prometheus, grafana")
# Absolute destinations (/etc, /lib/systemd, /usr/share/dbus-1) need DESTDIR-style staging.
set(CPACK_SET_DESTDIR ON)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(_iodrift_conffile "${CMAKE_INSTALL_FULL_SYSCONFDIR}/iodrift/iodrift.yaml")
set(_iodrift_sysusers_conf "${IODRIFT_SYSUSERSDIR}/iodrift.conf")
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
