# D-Bus: the org.iodrift.Monitor1 service (in iodrift_daemon) and the iodriftctl client.
#
# Included by the top-level CMakeLists.txt after iodrift_daemon is defined. The adaptor and proxy
# headers are generated from org.iodrift.Monitor1.xml by sdbus-c++-xml2cpp into
# ${CMAKE_BINARY_DIR}/generated/dbus/ at build time (never committed, never edited); that
# directory is a SYSTEM include so the generated style does not trip our warnings.
find_program(IODRIFT_XML2CPP sdbus-c++-xml2cpp REQUIRED)

set(IODRIFT_DBUS_XML ${CMAKE_CURRENT_LIST_DIR}/org.iodrift.Monitor1.xml)
set(IODRIFT_DBUS_GEN_DIR ${CMAKE_BINARY_DIR}/generated/dbus)
set(IODRIFT_DBUS_ADAPTOR ${IODRIFT_DBUS_GEN_DIR}/monitor1_adaptor.h)
set(IODRIFT_DBUS_PROXY ${IODRIFT_DBUS_GEN_DIR}/monitor1_proxy.h)

add_custom_command(
  OUTPUT ${IODRIFT_DBUS_ADAPTOR} ${IODRIFT_DBUS_PROXY}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${IODRIFT_DBUS_GEN_DIR}
  COMMAND ${IODRIFT_XML2CPP} ${IODRIFT_DBUS_XML}
          --adaptor=${IODRIFT_DBUS_ADAPTOR} --proxy=${IODRIFT_DBUS_PROXY}
  DEPENDS ${IODRIFT_DBUS_XML}
  COMMENT "Generating the org.iodrift.Monitor1 adaptor and proxy"
  VERBATIM)
add_custom_target(iodrift_dbus_generated DEPENDS ${IODRIFT_DBUS_ADAPTOR} ${IODRIFT_DBUS_PROXY})

target_sources(iodrift_daemon PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/service.cpp
  ${CMAKE_CURRENT_LIST_DIR}/boots_answer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bus_connection.cpp
  ${CMAKE_CURRENT_LIST_DIR}/result_dict.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rate_limiter.cpp
  ${CMAKE_CURRENT_LIST_DIR}/snapshot.cpp)
target_include_directories(iodrift_daemon SYSTEM PUBLIC ${IODRIFT_DBUS_GEN_DIR})
add_dependencies(iodrift_daemon iodrift_dbus_generated)

file(GLOB IODRIFT_CTL_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tools/iodriftctl/*.cpp)
add_executable(iodriftctl ${IODRIFT_CTL_SOURCES})
target_link_libraries(iodriftctl PRIVATE iodrift_core)
add_dependencies(iodriftctl iodrift_dbus_generated)
set_target_properties(iodriftctl PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)

include(GNUInstallDirs)
install(TARGETS iodriftctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The policy systemd/org.iodrift.Monitor1.conf is installed by systemd/install.cmake.
install(FILES ${IODRIFT_DBUS_XML} DESTINATION ${CMAKE_INSTALL_DATADIR}/dbus-1/interfaces)
