// reply.hpp — one Redis reply as a plain C++ value (RESP2: nil, integer,
// bulk string, status, error, array), detached from hiredis so no hiredis
// header leaks into locklab's public headers and a reply outlives the
// connection it came from.
//
// Accessors are checked: asking an integer reply for its string (or a nil
// for anything) throws redis::Error(kProtocol) naming what was expected and
// what came, so a script that changed its return shape fails loudly.
// Client::command never hands out a kError reply: it throws
// redis::Error(kServer) instead (see client.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace locklab::redis {

class Reply {
 public:
  enum class Type { kNil, kInteger, kString, kStatus, kError, kArray };

  Reply() = default;  // nil
  static Reply nil() { return Reply(); }
  static Reply integer(std::int64_t v) {
    Reply r;
    r.type_ = Type::kInteger;
    r.integer_ = v;
    return r;
  }
  static Reply text(Type type, std::string s) {  // kString, kStatus or kError
    Reply r;
    r.type_ = type;
    r.str_ = std::move(s);
    return r;
  }
  static Reply array(std::vector<Reply> elements) {
    Reply r;
    r.type_ = Type::kArray;
    r.elements_ = std::move(elements);
    return r;
  }

  Type type() const noexcept { return type_; }
  bool is_nil() const noexcept { return type_ == Type::kNil; }
  bool is_integer() const noexcept { return type_ == Type::kInteger; }
  bool is_string() const noexcept { return type_ == Type::kString; }
  bool is_status() const noexcept { return type_ == Type::kStatus; }
  bool is_error() const noexcept { return type_ == Type::kError; }
  bool is_array() const noexcept { return type_ == Type::kArray; }

  // The integer of an integer reply; throws Error(kProtocol) otherwise.
  std::int64_t as_integer() const;
  // The text of a string, status or error reply; throws Error(kProtocol)
  // for nil, integers and arrays.
  const std::string& as_string() const;
  // The elements of an array reply; throws Error(kProtocol) otherwise.
  const std::vector<Reply>& as_array() const;

  // A short human-readable rendering, e.g. `(integer) 3`, `"OK"`, `(nil)`.
  std::string describe() const;

 private:
  Type type_ = Type::kNil;
  std::int64_t integer_ = 0;
  std::string str_;
  std::vector<Reply> elements_;
};

}  // namespace locklab::redis
