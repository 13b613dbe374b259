#pragma once
// NetworkAttachmentDefinition decoding lives in common/cluster (shared with kubectl-allot).

#include "cluster/nad.h"

namespace allot::gc {

using cluster::kMaxNadConfigBytes;
using cluster::nadSpecConfig;
using cluster::NetworkIpam;
using cluster::parseNadConfig;

}  // namespace allot::gc
