#include "distributed/reply.hpp"

#include <charconv>

#include "distributed/error.hpp"

namespace locklab::redis {

namespace {
const char* type_name(Reply::Type t) {
  switch (t) {
    case Reply::Type::kNil: return "nil";
    case Reply::Type::kInteger: return "integer";
    case Reply::Type::kString: return "string";
    case Reply::Type::kStatus: return "status";
    case Reply::Type::kError: return "error";
    case Reply::Type::kArray: return "array";
  }
  return "?";
}
[[noreturn]] void wrong(const char* wanted, const Reply& r) {
  r.unexpected(std::string("a reply of type ") + wanted);
}
}  // namespace

void Reply::unexpected(const std::string& expected) const {
  const std::string from = origin().empty() ? std::string() : " from " + origin();
  throw Error(Error::Kind::kProtocol, "unexpected reply" + from + ": expected " + expected + ", got " + describe());
}

const std::string& Reply::origin() const noexcept {
  static const std::string kNone;
  return origin_ ? *origin_ : kNone;
}

void Reply::set_origin(const std::shared_ptr<const std::string>& origin) {
  origin_ = origin;
  for (auto& e : elements_) e.set_origin(origin);
}

std::int64_t Reply::as_decimal() const {
  if (type_ == Type::kString) {
    std::int64_t v = 0;
    const char* end = str_.data() + str_.size();
    auto [p, ec] = std::from_chars(str_.data(), end, v);
    if (!str_.empty() && ec == std::errc{} && p == end) return v;
  }
  unexpected("a decimal integer in a string reply");
}

std::int64_t Reply::as_integer() const {
  if (type_ != Type::kInteger) wrong("integer", *this);
  return integer_;
}

const std::string& Reply::as_string() const {
  if (type_ != Type::kString && type_ != Type::kStatus && type_ != Type::kError) wrong("string", *this);
  return str_;
}

const std::vector<Reply>& Reply::as_array() const {
  if (type_ != Type::kArray) wrong("array", *this);
  return elements_;
}

std::string Reply::describe() const {
  switch (type_) {
    case Type::kNil: return "(nil)";
    case Type::kInteger: return "(integer) " + std::to_string(integer_);
    case Type::kString: {
      std::string s(1, '"');
      s.append(str_, 0, 64);
      s.append(str_.size() > 64 ? "...\"" : "\"");
      return s;
    }
    case Type::kStatus: return str_;
    case Type::kError: return "(error) " + str_;
    case Type::kArray: {
      std::string s = "[";
      for (std::size_t i = 0; i < elements_.size() && i < 8; ++i) s += (i ? ", " : "") + elements_[i].describe();
      if (elements_.size() > 8) s += ", ...";
      return s + "]";
    }
  }
  return type_name(type_);
}

}  // namespace locklab::redis
