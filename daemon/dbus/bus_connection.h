// The service's bus connection: connecting to the system or session bus or an address and
// taking the well-known name, with the messages an operator reads when that fails, and what a
// caller's bus credentials allow (split from service.cpp).
//
// Thread-safety: free functions; the connection returned is used by one owner.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <sdbus-c++/sdbus-c++.h>

namespace iodrift::daemon::dbus {

// "the system bus", "the session bus" or "bus ADDRESS", for logs.
std::string Describe(const std::string& mode);

// `address` without its `guid=` parameters. A guid pins the server instance: after the bus
// restarts (new guid) a connection that insists on the old one is refused forever, so reconnects
// go without it.
std::string WithoutGuid(const std::string& address);

// The bus's credentials of connection `unique_name` (org.freedesktop.DBus.GetConnectionCredentials:
// ProcessID, UnixUserID, UnixGroupIDs, ...). Throws sdbus::Error.
std::map<std::string, sdbus::Variant> BusCredentials(sdbus::IProxy& bus,
                                                     const std::string& unique_name);

// Whether the caller with these credentials may RunProbe/Reload: root, the daemon's own user,
// or a member (primary or supplementary) of `group`. Reads the group database (getgrnam_r).
bool Privileged(std::uint32_t uid, const std::vector<std::uint32_t>& gids,
                const std::string& group);

// A connection to `mode` ("system", "session" or an address) holding the service name, or
// nullptr with `error` saying why (who owns the name when it is taken).
std::unique_ptr<sdbus::IConnection> Connect(const std::string& mode, std::string& error);

}  // namespace iodrift::daemon::dbus
