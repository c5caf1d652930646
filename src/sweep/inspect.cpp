#include "stepcast/sweep/inspect.hpp"

#include <filesystem>
#include <system_error>
#include <variant>

#include "stepcast/detail/profile/tf_timeline.hpp"
#include "stepcast/detail/profile/trace_summary.hpp"
#include "stepcast/detail/report/inspect_report.hpp"

namespace stepcast::sweep {

struct InspectedTrace {
  std::variant<profile::TraceSummary, profile::TfTimelineSummary> value;
};

Inspection inspect(const std::string& path) {
  auto summary = std::make_shared<InspectedTrace>();
  // Sniffing reads the file's start, which a pipe cannot give twice: pipes are Kineto.
  std::error_code regular_error;
  if (std::filesystem::is_regular_file(path, regular_error) && profile::looks_like_tf_timeline(path)) {
    summary->value = profile::summarize_tf_timeline(path);
  } else {
    summary->value = profile::summarize_kineto_file(path);
  }
  return {std::move(summary)};
}

void write_json(std::ostream& out, const Inspection& inspection) {
  std::visit([&out](const auto& s) { report::write_json(out, s); }, inspection.summary->value);
}

void write_table(std::ostream& out, const Inspection& inspection) {
  std::visit([&out](const auto& s) { report::write_table(out, s); }, inspection.summary->value);
}

}  // namespace stepcast::sweep
