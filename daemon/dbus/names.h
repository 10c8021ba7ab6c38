// The names of org.iodrift.Monitor1 that the service and its clients (iodriftctl) share: bus
// name, object path and error names. The interface itself is daemon/dbus/org.iodrift.Monitor1.xml
// (adaptor and proxy generated from it); the result dictionary's keys are those of
// collectors/probes/result_fields.h.
#pragma once

namespace iodrift::daemon::dbus {

inline constexpr const char* kBusName = "org.iodrift.Monitor1";
inline constexpr const char* kObjectPath = "/org/iodrift/Monitor1";
inline constexpr const char* kErrorUnknownProbe = "org.iodrift.Error.UnknownProbe";
inline constexpr const char* kErrorBusy = "org.iodrift.Error.Busy";
inline constexpr const char* kErrorRateLimited = "org.iodrift.Error.RateLimited";
inline constexpr const char* kErrorFailed = "org.iodrift.Error.Failed";
inline constexpr const char* kErrorInvalidConfig = "org.iodrift.Error.InvalidConfig";
inline constexpr const char* kErrorAccessDenied = "org.iodrift.Error.AccessDenied";

}  // namespace iodrift::daemon::dbus
