#include "store/node_slice_store.h"

namespace allot::store {

Result<NodeSlice> nodeSliceIn(Result<NodeSlicePool> read, const std::string& node) {
    if (!read) return read.error();
    if (auto s = nodeSliceOf(*read, node))
        return NodeSlice{std::move(*s), read->resourceVersion, read->partsRefused};
    return core::makeError(core::Errc::NotFound, "NodeSlicePool " + read->ns + "/" + read->name +
                                                     " has no slice for node " + node);
}

}  // namespace allot::store
