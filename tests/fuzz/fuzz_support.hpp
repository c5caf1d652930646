// Shared pieces of the libFuzzer targets in tests/fuzz/ (README there): the rule that bad input
// may only end as stepcast::Error, the input as a file for the readers that take a path, and a
// short prediction on what a reader returned, so that a value a reader lets through but the
// simulator cannot take is found too.
//
// Anything but stepcast::Error escaping a target (another exception, an assertion, a sanitizer
// report, a trap below) is a bug: libFuzzer stops and writes the input as crash-<sha1>.
#pragma once

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "stepcast/error.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast_fuzz {

/// The input as text (readers take bytes as they come: no terminator, any byte).
inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Runs `f`; stepcast::Error is the expected end of bad input and is swallowed.
template <class F>
bool only_input_errors(F&& f) {
  try {
    f();
    return true;
  } catch (const stepcast::Error&) {
    return false;
  }
}

/// A bug that throws nothing (a reader's output that breaks its own contract): say why and trap.
[[noreturn]] inline void bug(const std::string& why) {
  std::fprintf(stderr, "stepcast fuzz: BUG: %s\n", why.c_str());
  std::fflush(stderr);
  __builtin_trap();
}

/// One file per process (libFuzzer's -jobs and -fork start several), rewritten on every run and
/// removed at exit. In /dev/shm when there is one, so a run costs no disk write. `name` keeps the
/// extension a reader dispatches on ("input.json", "layers.csv").
class InputFile {
 public:
  explicit InputFile(const std::string& name) {
    const std::filesystem::path base =
        std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    dir_ = base / ("stepcast-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / name).string();
  }
  ~InputFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  /// Writes the input; returns the path.
  const std::string& write(std::string_view bytes) const {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) bug("cannot write the fuzz input to " + path_);
    return path_;
  }
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::string path_;
};

/// What a reader returns must hold the IR's invariants (workload::validate), and a short
/// prediction of it (two workers under a ring all-reduce, one measured step; coarse, analytic and
/// the simulator) must end in a finite step time or an Error. Workloads too large for a quick
/// simulation (a long input) are only checked.
inline void check_workload(const stepcast::workload::Workload& w, const std::string& reader) {
  if (const std::string problem = stepcast::workload::validate(w); !problem.empty()) {
    bug(reader + " returned an invalid workload: " + problem);
  }
  if (w.ops.empty() || w.ops.size() > 2000) return;
  stepcast::cluster::ClusterSpec cluster;
  cluster.workers = 2;
  stepcast::scheme::SchemeConfig scheme;  // synchronous ring all-reduce
  for (const auto predictor : {stepcast::predict::Predictor::Coarse, stepcast::predict::Predictor::Analytic,
                               stepcast::predict::Predictor::Fine}) {
    stepcast::predict::Options options;
    options.predictor = predictor;
    options.warmup_steps = 0;
    options.measure_steps = 1;
    only_input_errors([&] {
      const stepcast::predict::Result r = stepcast::predict::predict(w, cluster, scheme, options);
      if (!std::isfinite(r.step_time) || r.step_time < 0) {
        bug(reader + ": predicted step time " + std::to_string(r.step_time));
      }
    });
  }
}

}  // namespace stepcast_fuzz
