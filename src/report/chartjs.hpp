// Private to report/: Chart.js, inlined into the HTML report. The definitions are generated at
// build time by cmake/embed_chartjs.cmake from Debian's libjs-chart.js (CMakeLists.txt,
// STEPCAST_CHARTJS), so the library travels inside every report and nothing is fetched.
#pragma once

#include <string_view>

namespace stepcast::report::detail {

/// The Chart.js UMD build, verbatim (it defines the global `Chart`). Static storage; the view
/// never dangles. Holds neither "</script" nor "<!--" (checked when it is generated).
[[nodiscard]] std::string_view chartjs_source();
/// Its version, from the file's banner ("3.9.1").
[[nodiscard]] std::string_view chartjs_version();

}  // namespace stepcast::report::detail
