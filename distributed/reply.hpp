// reply.hpp — one Redis reply as a plain C++ value (RESP2: nil, integer,
// bulk string, status, error, array), detached from hiredis so no hiredis
// header leaks into locklab's public headers and a reply outlives the
// connection it came from.
//
// Accessors are checked: asking an integer reply for its string (or a nil
// for anything) throws redis::Error(kProtocol) naming what was expected and
// what came, so a script that changed its return shape fails loudly. The
// message names where the reply came from (origin(): the server's
// host:port, and the script's name when a script answered), set by the
// Client on every reply it returns, array elements included: "unexpected
// reply from 127.0.0.1:6379 (script permit_semaphore.acquire): expected a
// reply of type integer, got "x"". The origin is one shared string per
// Client (per script), so carrying it costs a reference count, not a copy.
// Client::command never hands out a kError reply: it throws
// redis::Error(kServer) instead (see client.hpp).
#pragma once

#include <cstdint>
#include <memory>
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
  // The integer a string reply spells in decimal (GET of a counter, an
  // HMGET field): Error(kProtocol) quoting the text for anything else,
  // never std::invalid_argument.
  std::int64_t as_decimal() const;

  // Throws Error(kProtocol): "unexpected reply from <origin>: expected
  // <expected>, got <describe()>". For callers that check a shape the
  // accessors cannot (e.g. an array of exactly 2 elements).
  [[noreturn]] void unexpected(const std::string& expected) const;

  // Where the reply came from, for messages ("host:port" or "host:port
  // (script name)"); empty for a Reply built by hand.
  const std::string& origin() const noexcept;
  // Sets the origin of this reply and of every element below it.
  void set_origin(const std::shared_ptr<const std::string>& origin);

  // A short human-readable rendering, e.g. `(integer) 3`, `"OK"`, `(nil)`.
  std::string describe() const;

 private:
  Type type_ = Type::kNil;
  std::int64_t integer_ = 0;
  std::string str_;
  std::vector<Reply> elements_;
  std::shared_ptr<const std::string> origin_;
};

}  // namespace locklab::redis
