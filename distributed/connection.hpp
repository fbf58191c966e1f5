// connection.hpp — internal: one hiredis connection, RAII, typed errors.
// Shared by Client (its pool) and Subscriber (its pub/sub connection); not
// part of the public surface (namespace detail), so hiredis stays out of
// every public header.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "distributed/client.hpp"
#include "distributed/reply.hpp"

struct redisContext;

namespace locklab::redis::detail {

class Connection {
 public:
  // Connects (within options.connect_timeout), sets the command timeout,
  // sends AUTH / SELECT as configured. Throws Error(kConnect) naming
  // host:port (unreachable, or refused at its maxclients limit), or
  // Error(kAuth) (AUTH or SELECT refused).
  static std::unique_ptr<Connection> open(const Client::Options& options, std::uint64_t generation = 0);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // One request/reply exchange. Error replies come back as Reply (type
  // kError), not thrown, but one: a server at its maxclients limit accepts
  // the TCP connection, answers the first command with "ERR max number of
  // clients reached" and closes it; that is Error(kConnect) "cannot connect
  // to host:port: ..." (the connection was refused, not a command). Throws
  // Error(kTimeout) if no reply within the command timeout (+ extra),
  // Error(kIo) if the connection broke; after any of these the connection
  // is unusable.
  Reply exchange(const std::vector<std::string_view>& args, std::chrono::milliseconds extra_timeout = {});

  // Client::pipeline on this connection: every request written, then every
  // reply read, in order; error replies in place. Throws as exchange()
  // (maxclients included: it comes as the first reply).
  std::vector<Reply> pipeline(const std::vector<std::vector<std::string>>& commands);

  // For an idle connection: false if the server closed it or sent anything
  // unasked (an idle connection has nothing to read). One poll(), no I/O.
  bool idle_and_alive() const noexcept;

  redisContext* context() noexcept { return ctx_; }
  int fd() const noexcept;
  std::uint64_t generation() const noexcept { return generation_; }
  const std::string& endpoint() const noexcept { return endpoint_; }

  // Converts a hiredis reply tree (redisReply*) into a Reply.
  static Reply convert(const void* redis_reply);
  // Throws the Error for a failed I/O on ctx (timeout vs lost connection).
  [[noreturn]] void throw_io_error(int saved_errno, std::chrono::milliseconds waited) const;

 private:
  Connection(redisContext* ctx, const Client::Options& options, std::uint64_t generation);
  void set_timeout(std::chrono::milliseconds t);
  // Throws Error(kConnect) if `reply` is the server's maxclients refusal.
  void throw_if_refused(const Reply& reply) const;

  redisContext* ctx_;
  std::string endpoint_;
  std::chrono::milliseconds command_timeout_;
  std::chrono::milliseconds current_timeout_;
  std::uint64_t generation_;
};

}  // namespace locklab::redis::detail
