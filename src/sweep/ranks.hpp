// Private to sweep/: byte messages between MPI ranks (ranks.cpp), for run()'s and plan()'s results.
#pragma once

#include <string>
#include <vector>

namespace stepcast::sweep::detail {

/// Sends `bytes` to rank 0 with `tag` (a task index). Blocking.
void send_to_root(int tag, const std::string& bytes);
/// At rank 0: the message with `tag` from rank `from`. Blocking.
[[nodiscard]] std::string receive_at_root(int from, int tag);
/// Every rank's `bytes`, in rank order, at every rank (one process: {bytes}). Blocking, and every
/// rank must call it.
[[nodiscard]] std::vector<std::string> all_gather(const std::string& bytes);

}  // namespace stepcast::sweep::detail
