#include "daemon/dbus/bus_connection.h"

#include <grp.h>
#include <unistd.h>

#include <map>
#include <sstream>
#include <vector>

#include "daemon/dbus/names.h"

namespace iodrift::daemon::dbus {

// The bus's credentials of connection `unique_name`
// (org.freedesktop.DBus.GetConnectionCredentials).
std::map<std::string, sdbus::Variant> BusCredentials(sdbus::IProxy& bus,
                                                     const std::string& unique_name) {
  std::map<std::string, sdbus::Variant> creds;
  bus.callMethod("GetConnectionCredentials")
      .onInterface("org.freedesktop.DBus")
      .withArguments(unique_name)
      .storeResultsTo(creds);
  return creds;
}

namespace {

std::string ErrorText(const sdbus::Error& e) {
  return e.getMessage().empty() ? e.getName() : e.getMessage() + " (" + e.getName() + ")";
}

// "the name is already owned by :1.4 (pid 123, uid 0)": who holds it, as far as the bus says.
std::string NameOwnerText(sdbus::IConnection& connection) {
  std::string text = std::string("the name ") + kBusName + " is already owned";
  try {
    auto bus = sdbus::createProxy(connection, "org.freedesktop.DBus", "/org/freedesktop/DBus");
    std::string owner;
    bus->callMethod("GetNameOwner")
        .onInterface("org.freedesktop.DBus")
        .withArguments(std::string(kBusName))
        .storeResultsTo(owner);
    text += " by " + owner;
    auto creds = BusCredentials(*bus, owner);
    std::string details;
    if (auto it = creds.find("ProcessID"); it != creds.end()) {
      details += "pid " + std::to_string(it->second.get<std::uint32_t>());
    }
    if (auto it = creds.find("UnixUserID"); it != creds.end()) {
      details += (details.empty() ? "" : ", ") + std::string("uid ") +
                 std::to_string(it->second.get<std::uint32_t>());
    }
    if (!details.empty()) text += " (" + details + ")";
  } catch (const sdbus::Error&) {
    // The owner left meanwhile or the bus does not say: the plain sentence is enough.
  }
  return text + "; is another iodriftd running on this bus?";
}

}  // namespace

std::string Describe(const std::string& mode) {
  if (mode == "system") return "the system bus";
  if (mode == "session") return "the session bus";
  return "bus " + mode;
}

// `address` without its `guid=` parameters. A guid pins the server instance: after the bus
// restarts (new guid) a connection that insists on the old one is refused forever, so reconnects
// go without it.
std::string WithoutGuid(const std::string& address) {
  std::string out;
  std::stringstream alternatives(address);
  std::string alternative;
  while (std::getline(alternatives, alternative, ';')) {
    const auto colon = alternative.find(':');
    std::string kept =
        alternative.substr(0, colon == std::string::npos ? alternative.size() : colon + 1);
    if (colon != std::string::npos) {
      std::stringstream params(alternative.substr(colon + 1));
      std::string param;
      bool first = true;
      while (std::getline(params, param, ',')) {
        if (param.rfind("guid=", 0) == 0) continue;
        kept += (first ? "" : ",") + param;
        first = false;
      }
    }
    out += (out.empty() ? "" : ";") + kept;
  }
  return out;
}

// Opens a connection for `mode` (system | session | ADDRESS) and takes the bus name.
std::unique_ptr<sdbus::IConnection> Connect(const std::string& mode, std::string& error) {
  std::unique_ptr<sdbus::IConnection> connection;
  try {
    if (mode == "system") {
      connection = sdbus::createSystemBusConnection();
    } else if (mode == "session") {
      connection = sdbus::createSessionBusConnection();
    } else {
      connection = sdbus::createSessionBusConnectionWithAddress(mode);
    }
  } catch (const sdbus::Error& e) {
    error = ErrorText(e);
    return nullptr;
  }
  try {
    connection->requestName(kBusName);
    return connection;
  } catch (const sdbus::Error& e) {
    // sd_bus_request_name answers EEXIST ("File exists") when another connection owns the name.
    if (e.getName() == "System.Error.EEXIST" ||
        e.getMessage().find("File exists") != std::string::npos) {
      error = NameOwnerText(*connection);
    } else {
      error = ErrorText(e);
    }
    return nullptr;
  }
}

bool Privileged(std::uint32_t uid, const std::vector<std::uint32_t>& gids,
                const std::string& group) {
  if (uid == 0 || uid == geteuid()) return true;
  struct group entry {};
  struct group* found = nullptr;
  std::vector<char> buffer(16384);
  if (getgrnam_r(group.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 || !found) {
    return false;
  }
  for (auto gid : gids) {
    if (gid == found->gr_gid) return true;
  }
  return false;
}

}  // namespace iodrift::daemon::dbus
