#include "engine/context.h"

#include <algorithm>

namespace allot::engine {

namespace {
constexpr auto kCleanupGrace = std::chrono::seconds(3);
}

CleanupGrace::CleanupGrace(Context& ctx) : ctx_(ctx), saved_(ctx.deadline) {
    ctx_.deadline = std::max(saved_, Clock::now() + kCleanupGrace);
    ctx_.store.setDeadline(ctx_.deadline);
}

CleanupGrace::~CleanupGrace() {
    ctx_.deadline = saved_;
    ctx_.store.setDeadline(saved_);
}

}  // namespace allot::engine
