// Private to cli/: the output-file rule of include/stepcast/detail/output_file.hpp (missing
// parent directories created; anything else that keeps the file from being written an error
// naming the flag), under cli/'s names.
#pragma once

#include "stepcast/detail/output_file.hpp"

namespace stepcast::cli {

using stepcast::create_parent_directories;
using stepcast::open_output;

}  // namespace stepcast::cli
