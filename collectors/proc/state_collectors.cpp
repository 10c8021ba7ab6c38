// The one explicit list of state collectors (no self-registration).
#include "collectors/proc/state_collectors.h"

namespace iodrift::proc {

std::vector<std::unique_ptr<Collector>> MakeStateCollectors(const CollectorsOptions& config) {
  std::vector<std::unique_ptr<Collector>> out;
  if (config.meminfo) out.push_back(MakeMeminfoCollector());
  if (config.vmstat.enabled) out.push_back(MakeVmstatCollector(config.vmstat));
  if (config.slabinfo.enabled) out.push_back(MakeSlabinfoCollector(config.slabinfo));
  if (config.pressure) out.push_back(MakePressureCollector());
  if (config.buddyinfo) out.push_back(MakeBuddyinfoCollector());
  if (config.boot) out.push_back(MakeBootCollector());
  if (config.dentries) out.push_back(MakeDentriesCollector());
  if (config.balloon) out.push_back(MakeBalloonCollector());
  return out;
}

}  // namespace iodrift::proc
