// Private to the Chakra reader (profile/chakra_trace.cpp) and writer (report/chakra_export.cpp):
// what both sides of the file format must agree on beyond the schema in chakra_et.proto, which
// this module compiles once for both (two copies of the generated code in one program would
// register the same descriptors twice).
#pragma once

namespace stepcast::chakra {

/// Chakra's schema version of the fields written (comm_* attributes, involved_dim).
inline constexpr const char* kChakraVersion = "0.0.4";
/// Parameter-server nodes: "pull:<tensor>" (COMM_RECV on a worker) and "push:<tensor>".
inline constexpr const char* kPullPrefix = "pull:";
inline constexpr const char* kPushPrefix = "push:";

}  // namespace stepcast::chakra
