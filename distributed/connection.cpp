#include "distributed/connection.hpp"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/time.h>

#include <cerrno>
#include <cstring>

#include "distributed/error.hpp"

namespace locklab::redis::detail {

namespace {
timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}
}  // namespace

Connection::Connection(redisContext* ctx, const Client::Options& options, std::uint64_t generation)
    : ctx_(ctx),
      endpoint_(options.endpoint()),
      command_timeout_(options.command_timeout),
      current_timeout_(options.command_timeout),
      generation_(generation) {}

Connection::~Connection() {
  if (ctx_ != nullptr) redisFree(ctx_);
}

int Connection::fd() const noexcept { return ctx_->fd; }

bool Connection::idle_and_alive() const noexcept {
  pollfd p{ctx_->fd, POLLIN, 0};
  const int r = ::poll(&p, 1, 0);
  return r == 0;  // nothing readable, no hang-up, no error
}

std::unique_ptr<Connection> Connection::open(const Client::Options& o, std::uint64_t generation) {
  const auto started = std::chrono::steady_clock::now();
  redisContext* ctx = redisConnectWithTimeout(o.host.c_str(), o.port, to_timeval(o.connect_timeout));
  if (ctx == nullptr) throw Error(Error::Kind::kConnect, "cannot connect to " + o.endpoint() + ": out of memory");
  if (ctx->err != 0) {
    const std::string why = ctx->errstr;
    redisFree(ctx);
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
    throw Error(Error::Kind::kConnect,
                "cannot connect to " + o.endpoint() + ": " + why + " (after " + std::to_string(waited.count()) + " ms)");
  }
  std::unique_ptr<Connection> c(new Connection(ctx, o, generation));
  c->set_timeout(o.command_timeout);
  if (!o.password.empty()) {
    Reply r = o.user.empty() ? c->exchange({"AUTH", o.password}) : c->exchange({"AUTH", o.user, o.password});
    if (r.is_error()) {
      throw Error(Error::Kind::kAuth, "authentication failed at " + o.endpoint() + ": " + r.as_string());
    }
  }
  if (o.db != 0) {
    Reply r = c->exchange({"SELECT", std::to_string(o.db)});
    if (r.is_error()) {
      throw Error(Error::Kind::kAuth, "SELECT " + std::to_string(o.db) + " refused by " + o.endpoint() + ": " +
                                          r.as_string());
    }
  }
  return c;
}

void Connection::set_timeout(std::chrono::milliseconds t) {
  if (redisSetTimeout(ctx_, to_timeval(t)) != REDIS_OK) {
    throw Error(Error::Kind::kIo, "cannot set the socket timeout towards " + endpoint_ + ": " + ctx_->errstr);
  }
  current_timeout_ = t;
}

Reply Connection::convert(const void* raw) {
  const auto* r = static_cast<const redisReply*>(raw);
  switch (r->type) {
    case REDIS_REPLY_INTEGER: return Reply::integer(r->integer);
    case REDIS_REPLY_STRING: return Reply::text(Reply::Type::kString, std::string(r->str, r->len));
    case REDIS_REPLY_STATUS: return Reply::text(Reply::Type::kStatus, std::string(r->str, r->len));
    case REDIS_REPLY_ERROR: return Reply::text(Reply::Type::kError, std::string(r->str, r->len));
    case REDIS_REPLY_ARRAY: {
      std::vector<Reply> elements;
      elements.reserve(r->elements);
      for (std::size_t i = 0; i < r->elements; ++i) elements.push_back(convert(r->element[i]));
      return Reply::array(std::move(elements));
    }
    default: return Reply::nil();
  }
}

void Connection::throw_if_refused(const Reply& reply) const {
  // The server's exact text (networking.c): sent instead of a reply to the
  // first command, then the server closes the connection.
  constexpr std::string_view kMaxClients = "ERR max number of clients reached";
  if (reply.is_error() && reply.as_string().rfind(kMaxClients, 0) == 0) {
    throw Error(Error::Kind::kConnect, "cannot connect to " + endpoint_ + ": the server refused the connection: " +
                                           reply.as_string() + " (its maxclients limit)");
  }
}

void Connection::throw_io_error(int saved_errno, std::chrono::milliseconds waited) const {
  if (ctx_->err == REDIS_ERR_IO && (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK)) {
    throw Error(Error::Kind::kTimeout,
                "timed out after " + std::to_string(waited.count()) + " ms waiting for " + endpoint_);
  }
  if (ctx_->err == REDIS_ERR_EOF) throw Error(Error::Kind::kIo, "connection to " + endpoint_ + " lost: server closed it");
  throw Error(Error::Kind::kIo, "connection to " + endpoint_ + " lost: " + ctx_->errstr);
}

Reply Connection::exchange(const std::vector<std::string_view>& args, std::chrono::milliseconds extra_timeout) {
  const std::chrono::milliseconds timeout = command_timeout_ + extra_timeout;
  if (timeout != current_timeout_) set_timeout(timeout);
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  argv.reserve(args.size());
  lens.reserve(args.size());
  for (auto a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  errno = 0;
  void* raw = redisCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), lens.data());
  if (raw == nullptr) throw_io_error(errno, timeout);
  Reply reply = convert(raw);
  freeReplyObject(raw);
  throw_if_refused(reply);
  return reply;
}

std::vector<Reply> Connection::pipeline(const std::vector<std::vector<std::string>>& commands) {
  if (command_timeout_ != current_timeout_) set_timeout(command_timeout_);
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  for (const auto& command : commands) {
    argv.clear();
    lens.clear();
    for (const auto& a : command) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    // Appending only fills hiredis's output buffer; the first
    // redisGetReply below writes all of it before it reads.
    if (redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), lens.data()) != REDIS_OK) {
      throw Error(Error::Kind::kIo, "cannot queue a pipelined command for " + endpoint_ + ": " + ctx_->errstr);
    }
  }
  std::vector<Reply> replies;
  replies.reserve(commands.size());
  for (std::size_t i = 0; i < commands.size(); ++i) {
    errno = 0;
    void* raw = nullptr;
    if (redisGetReply(ctx_, &raw) != REDIS_OK || raw == nullptr) throw_io_error(errno, command_timeout_);
    replies.push_back(convert(raw));
    freeReplyObject(raw);
    if (i == 0) throw_if_refused(replies.front());
  }
  return replies;
}

}  // namespace locklab::redis::detail
