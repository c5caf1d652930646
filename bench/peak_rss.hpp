// The process's peak resident memory, reported beside a benchmark's time (scripts/run-benchmarks.sh
// runs one benchmark per process so that it belongs to that benchmark alone).
#pragma once

#include <sys/resource.h>

inline double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;  // ru_maxrss is in KiB on Linux
}
