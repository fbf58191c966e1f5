#include "postgres/connection.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <string>

namespace locklab::pg {

namespace {

// libpq's messages end with a newline and may span lines ("...failed:
// Connection refused\n\tIs the server running..."): one line for ours.
std::string one_line(const char* message) {
  std::string s = message != nullptr ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& ch : s) {
    if (ch == '\n' || ch == '\t') ch = ' ';
  }
  return s;
}

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

// The option `keyword` of a parsed conninfo, "" if unset.
std::string option(const PQconninfoOption* options, std::string_view keyword) {
  for (const PQconninfoOption* o = options; o != nullptr && o->keyword != nullptr; ++o) {
    if (keyword == o->keyword && o->val != nullptr) return o->val;
  }
  return "";
}

}  // namespace

// ------------------------------------------------------------ Result

int Result::rows() const noexcept { return result_ ? PQntuples(result_.get()) : 0; }
int Result::columns() const noexcept { return result_ ? PQnfields(result_.get()) : 0; }

std::int64_t Result::affected() const {
  if (!result_) return 0;
  const char* n = PQcmdTuples(result_.get());
  if (n == nullptr || *n == '\0') return 0;
  return std::strtoll(n, nullptr, 10);
}

void Result::check(int row, int column) const {
  if (row < 0 || row >= rows() || column < 0 || column >= columns()) {
    throw Error(Error::Kind::kProtocol, "unexpected reply from " + endpoint_ + ": no value at row " +
                                            std::to_string(row) + ", column " + std::to_string(column) + " (" +
                                            std::to_string(rows()) + " rows, " + std::to_string(columns()) +
                                            " columns)");
  }
}

bool Result::is_null(int row, int column) const {
  check(row, column);
  return PQgetisnull(result_.get(), row, column) != 0;
}

std::optional<std::string> Result::get(int row, int column) const {
  if (is_null(row, column)) return std::nullopt;
  return std::string(PQgetvalue(result_.get(), row, column),
                     static_cast<std::size_t>(PQgetlength(result_.get(), row, column)));
}

std::string Result::text(int row, int column) const {
  auto v = get(row, column);
  if (!v) {
    throw Error(Error::Kind::kProtocol, "unexpected reply from " + endpoint_ + ": NULL at row " +
                                            std::to_string(row) + ", column " + std::to_string(column));
  }
  return *v;
}

std::int64_t Result::int64(int row, int column) const {
  const std::string v = text(row, column);
  std::int64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc{} || end != v.data() + v.size()) {
    throw Error(Error::Kind::kProtocol,
                "unexpected reply from " + endpoint_ + ": expected an integer, got '" + v.substr(0, 40) + "'");
  }
  return n;
}

// ------------------------------------------------------------ Options

std::string Connection::Options::redacted_url(std::string_view url) {
  std::string shown(url);
  const auto scheme_end = shown.find("://");
  const auto query = shown.find('?');
  const auto at = shown.rfind('@', query == std::string::npos ? std::string::npos : query);
  if (at != std::string::npos) {
    const std::size_t from = scheme_end != std::string::npos && scheme_end < at ? scheme_end + 3 : 0;
    shown = shown.substr(0, from) + "***" + shown.substr(at);
  }
  // ?password=... or &password=...
  for (std::size_t p = shown.find("password="); p != std::string::npos; p = shown.find("password=", p + 1)) {
    if (p > 0 && shown[p - 1] != '?' && shown[p - 1] != '&') continue;
    const std::size_t value = p + 9;
    const std::size_t end = shown.find('&', value);
    shown.replace(value, end == std::string::npos ? std::string::npos : end - value, "***");
  }
  return shown;
}

Connection::Options Connection::Options::from_url(std::string url) {
  const std::string shown = redacted_url(url);
  if (url.rfind("postgresql://", 0) != 0 && url.rfind("postgres://", 0) != 0) {
    throw Error(Error::Kind::kUrl, "PostgreSQL URL '" + shown + "': must start with postgresql:// or postgres://");
  }
  char* why = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(url.c_str(), &why);
  if (parsed == nullptr) {
    std::string message = why != nullptr ? one_line(why) : "out of memory";
    PQfreemem(why);
    // libpq quotes the URL in some messages: never let a password through.
    if (const auto at = message.find(url); at != std::string::npos) message.replace(at, url.size(), shown);
    throw Error(Error::Kind::kUrl, "PostgreSQL URL '" + shown + "': " + message);
  }
  const std::string port = option(parsed, "port");
  PQconninfoFree(parsed);
  // libpq accepts any port text here and fails only at connect time, as a
  // connection error: a typo in the port is the caller's mistake, so say so.
  for (std::string_view rest = port; !rest.empty();) {
    const auto comma = rest.find(',');
    const std::string_view one = rest.substr(0, comma);
    int n = 0;
    auto [end, ec] = std::from_chars(one.data(), one.data() + one.size(), n);
    if (!one.empty() && (ec != std::errc{} || end != one.data() + one.size() || n < 1 || n > 65535)) {
      throw Error(Error::Kind::kUrl, "PostgreSQL URL '" + shown + "': bad port '" + std::string(one) + "'");
    }
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  Options o;
  o.url = std::move(url);
  return o;
}

std::optional<Connection::Options> Connection::Options::from_env() {
  const char* url = std::getenv("LOCKLAB_PG_URL");
  if (url == nullptr || *url == '\0') return std::nullopt;
  Options o = from_url(url);
  if (const char* pw = std::getenv("LOCKLAB_PG_PASSWORD"); pw != nullptr && *pw != '\0') {
    // Appended as a query parameter: libpq takes the last value of a key.
    o.url += (o.url.find('?') == std::string::npos ? "?password=" : "&password=");
    for (const char* c = pw; *c != '\0'; ++c) {
      const auto u = static_cast<unsigned char>(*c);
      if (std::isalnum(u) != 0 || *c == '-' || *c == '_' || *c == '.' || *c == '~') {
        o.url += *c;
      } else {
        static constexpr char kHex[] = "0123456789ABCDEF";
        o.url += '%';
        o.url += kHex[u >> 4];
        o.url += kHex[u & 0xF];
      }
    }
  }
  return o;
}

// ------------------------------------------------------------ Connection

Connection::Connection(Options options) : options_(std::move(options)) {
  if (options_.url.empty()) throw Error(Error::Kind::kUrl, "PostgreSQL URL '': empty");
  (void)Options::from_url(options_.url);  // kUrl before anything is sent
  {
    char* why = nullptr;
    PQconninfoOption* parsed = PQconninfoParse(options_.url.c_str(), &why);
    PQfreemem(why);
    const std::string host = option(parsed, "host").empty() ? option(parsed, "hostaddr") : option(parsed, "host");
    const std::string port = option(parsed, "port");
    PQconninfoFree(parsed);
    endpoint_ = host.empty() || host.front() == '/' ? "local socket" : host;
    endpoint_ += ":" + (port.empty() ? std::string("5432") : port);
  }
  const std::string timeout = std::to_string(std::max<long long>(1, options_.connect_timeout.count()));
  const std::string server_options = "-c statement_timeout=" + std::to_string(options_.statement_timeout.count());
  // expand_dbname = 1: the first "dbname" is the URL itself; the keywords
  // after it override what the URL says.
  const char* keywords[] = {"dbname", "connect_timeout", "options", "application_name", nullptr};
  const char* values[] = {options_.url.c_str(), timeout.c_str(), server_options.c_str(),
                          options_.application_name.c_str(), nullptr};
  conn_ = PQconnectdbParams(keywords, values, 1);
  if (conn_ == nullptr) throw Error(Error::Kind::kConnect, "cannot connect to " + endpoint_ + ": out of memory");
  if (PQstatus(conn_) != CONNECTION_OK) {
    const std::string why = one_line(PQerrorMessage(conn_));
    // libpq reports a refused password, an unknown role and a missing one
    // as text only (the connection failed before any SQLSTATE could
    // reach a result), so they are told apart by its fixed wording.
    const bool auth = PQconnectionNeedsPassword(conn_) != 0 || contains(why, "authentication failed") ||
                      contains(why, "no password supplied") || (contains(why, "role \"") && contains(why, "does not exist"));
    PQfinish(conn_);
    conn_ = nullptr;
    if (auth) throw Error(Error::Kind::kAuth, "authentication failed at " + endpoint_ + ": " + why);
    throw Error(Error::Kind::kConnect, "cannot connect to " + endpoint_ + ": " + why);
  }
  // libpq prints the server's NOTICEs and WARNINGs ("table does not exist,
  // skipping", "terminating connection due to immediate shutdown") on
  // stderr by default. Errors reach the caller as Error; the rest is noise
  // in a benchmark's output, so it is dropped.
  PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);
}

Connection::~Connection() {
  if (conn_ != nullptr) PQfinish(conn_);
}

int Connection::backend_pid() const noexcept { return conn_ != nullptr ? PQbackendPID(conn_) : 0; }

void Connection::fail(pg_result* result, const char* what) {
  std::shared_ptr<pg_result> owned(result, PQclear);
  if (result == nullptr || PQstatus(conn_) != CONNECTION_OK) {
    throw Error(Error::Kind::kIo, "connection to " + endpoint_ + " lost (" + what + "): " +
                                      one_line(PQerrorMessage(conn_)));
  }
  const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
  throw Error(Error::Kind::kQuery, endpoint_ + " refused the statement: " + one_line(PQresultErrorMessage(result)),
              state != nullptr ? state : "");
}

Result Connection::exec(std::string_view sql) {
  ++round_trips_;
  const std::string text(sql);
  PGresult* r = PQexec(conn_, text.c_str());
  const ExecStatusType status = r != nullptr ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && status != PGRES_EMPTY_QUERY) fail(r, "exec");
  return Result(std::shared_ptr<pg_result>(r, PQclear), endpoint_);
}

Result Connection::exec(std::string_view sql, const std::vector<Param>& params) {
  ++round_trips_;
  const std::string text(sql);
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const Param& p : params) values.push_back(p.text ? p.text->c_str() : nullptr);
  PGresult* r = PQexecParams(conn_, text.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                             nullptr, 0);
  const ExecStatusType status = r != nullptr ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && status != PGRES_EMPTY_QUERY) fail(r, "exec");
  return Result(std::shared_ptr<pg_result>(r, PQclear), endpoint_);
}

}  // namespace locklab::pg
