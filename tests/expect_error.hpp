// Test helper shared by the suites that check stepcast::Error: run a callable that must throw
// one and get it back to inspect its location and message.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "stepcast/error.hpp"

namespace stepcast::testing {

/// Runs `f`, expects a stepcast::Error, returns it (a default one, after a test failure, when
/// none was thrown).
inline Error expect_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no stepcast::Error thrown";
  return Error({}, "");
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace stepcast::testing
