// Private to sweep/: byte messages between MPI ranks (ranks.cpp), for run()'s results.
#pragma once

#include <string>

namespace stepcast::sweep::detail {

/// Sends `bytes` to rank 0 with `tag` (a task index). Blocking.
void send_to_root(int tag, const std::string& bytes);
/// At rank 0: the message with `tag` from rank `from`. Blocking.
[[nodiscard]] std::string receive_at_root(int from, int tag);

}  // namespace stepcast::sweep::detail
