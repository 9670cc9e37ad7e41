// CoherentVolume: the Volume a hub's front ends use. It forwards every call to the engine, and
// before a mutation commits it revokes the spoke leases on the directories the mutation changes
// (LeaseTable::Revoke), so that a mutation has returned only once no spoke can still answer
// from the view before it. Reads pass straight through. A spoke that serves chained spokes
// wraps its PortalVolume in one too.
#pragma once

#include <memory>

#include "fabric/lease_table.h"
#include "vfs/volume.h"

namespace weft::fabric {

// What a mutation of each kind changes (also used by spokes to drop their own cache).
Affected AffectedByWrite(const std::string& path, bool create_parents);
Affected AffectedByRename(const std::string& from, const std::string& to);
Affected AffectedByRemoveDir(const std::string& path);
Affected AffectedBySetAttr(const std::string& path);
Affected AffectedBySnapshot(const std::string& name);

std::unique_ptr<Volume> NewCoherentVolume(Volume* inner, LeaseTable* leases);

}  // namespace weft::fabric
