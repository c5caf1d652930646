#include "sweep/result_wire.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "stepcast/predict/result_fields.hpp"

namespace stepcast::sweep::wire {
namespace {

// Every struct of a Result goes field by field in the order of its list
// (stepcast/predict/result_fields.hpp), so a field added to Result travels without a line here.
// The trace does not travel: rank 0 makes the traced prediction itself (result_wire.hpp).

class Writer {
 public:
  template <class T>
  requires std::is_arithmetic_v<T>
  void put(T value) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out_.append(bytes, sizeof(T));
  }
  template <class T>
  requires std::is_enum_v<T>
  void put(T value) {
    put(static_cast<std::underlying_type_t<T>>(value));
  }
  void put(const std::string& text) {
    put<uint64_t>(text.size());
    out_.append(text);
  }
  template <class T>
  requires predict::has_field_list<T>
  void put(const T& object) {
    predict::for_each_field(object, [this](const char* /*name*/, const auto& field) { this->put(field); });
  }
  void put(const predict::Trace& /*trace*/) {}
  template <class T>
  void put(const std::vector<T>& items) {
    put<uint64_t>(items.size());
    for (const T& item : items) put(item);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <class T>
  requires std::is_arithmetic_v<T>
  void get(T& value) {
    need(sizeof(T));
    std::memcpy(&value, in_.data(), sizeof(T));
    in_.remove_prefix(sizeof(T));
  }
  template <class T>
  requires std::is_enum_v<T>
  void get(T& value) {
    std::underlying_type_t<T> raw{};
    get(raw);
    value = static_cast<T>(raw);
  }
  void get(std::string& text) {
    uint64_t n = 0;
    get(n);
    need(n);
    text.assign(in_.data(), n);
    in_.remove_prefix(n);
  }
  template <class T>
  requires predict::has_field_list<T>
  void get(T& object) {
    predict::for_each_field(object, [this](const char* /*name*/, auto& field) { this->get(field); });
  }
  void get(predict::Trace& /*trace*/) {}
  template <class T>
  void get(std::vector<T>& items) {
    uint64_t n = 0;
    get(n);
    if (n > in_.size()) throw std::runtime_error("result wire: bad count");
    items.resize(n);
    for (T& item : items) get(item);
  }
  [[nodiscard]] bool done() const { return in_.empty(); }

 private:
  void need(uint64_t n) const {
    if (n > in_.size()) throw std::runtime_error("result wire: truncated");
  }
  std::string_view in_;
};

}  // namespace

std::string encode(const Outcome& o) {
  Writer w;
  w.put(o.failed);
  if (o.failed) {
    w.put(o.where.file);
    w.put(o.where.line);
    w.put(o.where.key);
    w.put(o.message);
    return w.take();
  }
  w.put<uint64_t>(o.results.size());
  for (const predict::Result& r : o.results) w.put(r);
  return w.take();
}

Outcome decode(std::string_view bytes) {
  Reader in(bytes);
  Outcome o;
  in.get(o.failed);
  if (o.failed) {
    in.get(o.where.file);
    in.get(o.where.line);
    in.get(o.where.key);
    in.get(o.message);
  } else {
    uint64_t n = 0;
    in.get(n);
    o.results.resize(n);
    for (predict::Result& r : o.results) in.get(r);
  }
  if (!in.done()) throw std::runtime_error("result wire: trailing bytes");
  return o;
}

Outcome failure(const std::exception_ptr& error) {
  Outcome o;
  o.failed = true;
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    o.where = e.where();
    o.message = e.message();
  } catch (const std::exception& e) {
    o.message = e.what();
  }
  return o;
}

}  // namespace stepcast::sweep::wire
