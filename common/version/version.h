#pragma once
// What every allot program says it is: `allot --version`, `allot-gc --version`,
// allot_build_info, the node reports kubectl allot version reads. Set by the build
// (common/version/meson.build), nowhere else.

#include <string>
#include <string_view>

namespace allot {

// project(version:) of meson.build, e.g. "0.1.0".
std::string_view version();
// The git commit the program was built from, e.g. "f5cf6de", "f5cf6de-dirty" when the tree had
// changes not committed; the build's `revision` option outside a git checkout; else "unknown".
std::string_view revision();
// "<program> <version> (revision <revision>)", what --version prints.
std::string versionLine(std::string_view program);

}  // namespace allot
