// script.hpp — a Lua script for Client::eval: its source, known at compile
// time, never assembled from data.
//
// How a Script runs (see Client::eval): the first eval of a script on a
// Client sends `SCRIPT LOAD source` once and caches the SHA1 the server
// returns; every call is then `EVALSHA sha numkeys keys... args...`. If the
// server answers NOSCRIPT (it restarted, or someone ran SCRIPT FLUSH), the
// client loads the script again and repeats the call once. Keys and values
// travel only as KEYS[] and ARGV[]: a lock name containing quotes, spaces or
// Lua cannot change what the script does.
//
// Scripts are defined as `static const Script` objects next to the lock that
// uses them; a Script must outlive the Clients that ran it (they key their
// SHA cache by the script's address).
#pragma once

#include <string>
#include <utility>

namespace locklab::redis {

class Script {
 public:
  // `name` is for error messages ("spin_lock.release"), `source` is Lua.
  Script(std::string name, std::string source) : name_(std::move(name)), source_(std::move(source)) {}
  Script(const Script&) = delete;
  Script& operator=(const Script&) = delete;

  const std::string& name() const noexcept { return name_; }
  const std::string& source() const noexcept { return source_; }

 private:
  std::string name_;
  std::string source_;
};

}  // namespace locklab::redis
