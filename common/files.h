// Files written so that a crash leaves either their old content or the new one.
#pragma once

#include <optional>
#include <string>

namespace larder::common {

// Replaces `path` (or the file a symlink at `path` points to) with `content`: a temp file in
// the same directory, fsync, rename, then fsync of the directory. The new file keeps the old
// one's permission bits (0644 if new). nullopt on success, else the system's reason; on
// failure the old file is untouched and the temp file removed.
std::optional<std::string> WriteFileAtomically(const std::string& path, const std::string& content);

}  // namespace larder::common
