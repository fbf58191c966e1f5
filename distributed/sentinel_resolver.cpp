#include "distributed/sentinel_resolver.hpp"

#include <charconv>
#include <stdexcept>

#include "distributed/connection.hpp"
#include "distributed/url_parts.hpp"

namespace locklab::redis {

Client::Options parse_sentinel_url(std::string_view url) {
  constexpr std::string_view kScheme = "redis+sentinel://";
  const std::string shown = Client::Options::redacted_url(url);
  auto fail = [&](const std::string& why) -> void {
    throw std::invalid_argument("redis+sentinel URL '" + shown + "': " + why);
  };
  if (url.substr(0, kScheme.size()) != kScheme) fail("must start with redis+sentinel://");
  Client::Options o;
  std::string_view rest = url.substr(kScheme.size());
  detail::take_url_credentials(rest, o.user, o.password);
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos) fail("no master name (.../<master>)");
  std::string_view hosts = rest.substr(0, slash);
  std::string_view path = rest.substr(slash + 1);
  if (auto db_slash = path.find('/'); db_slash != std::string_view::npos) {
    std::string_view db = path.substr(db_slash + 1);
    path = path.substr(0, db_slash);
    if (!db.empty()) o.db = detail::parse_url_number(db, "redis+sentinel URL", "database number", shown);
    if (o.db < 0) fail("negative database number");
  }
  if (path.empty()) fail("no master name (.../<master>)");
  o.sentinel_master = std::string(path);
  while (true) {
    const auto comma = hosts.find(',');
    std::string_view one = hosts.substr(0, comma);
    int port = kDefaultSentinelPort;
    if (auto colon = one.rfind(':'); colon != std::string_view::npos) {
      port = detail::parse_url_number(one.substr(colon + 1), "redis+sentinel URL", "Sentinel port", shown);
      one = one.substr(0, colon);
    }
    if (one.empty()) fail("a Sentinel without a host");
    if (port < 1 || port > 65535) fail("Sentinel port out of range");
    o.sentinels.emplace_back(std::string(one), port);
    if (comma == std::string_view::npos) break;
    hosts = hosts.substr(comma + 1);
  }
  // Until resolved, host and port name the first Sentinel: an error before
  // the first answer then names something real.
  o.host = o.sentinels.front().first;
  o.port = o.sentinels.front().second;
  return o;
}

PrimaryAddress resolve_primary(const Client::Options& options) {
  if (options.sentinels.empty() || options.sentinel_master.empty()) {
    throw std::invalid_argument("resolve_primary: needs Options::sentinels and Options::sentinel_master");
  }
  std::string asked;
  std::string answers;
  for (const auto& [host, port] : options.sentinels) {
    // Only the address and the timeouts: the user, password and db are the
    // data nodes', and a Sentinel refuses SELECT.
    Client::Options sentinel;
    sentinel.host = host;
    sentinel.port = port;
    sentinel.connect_timeout = options.connect_timeout;
    sentinel.command_timeout = options.command_timeout;
    const std::string name = sentinel.endpoint();
    asked += (asked.empty() ? "" : ",") + name;
    std::string answer;
    try {
      auto c = detail::Connection::open(sentinel);
      const Reply r = c->exchange({"SENTINEL", "get-master-addr-by-name", options.sentinel_master});
      if (r.is_array() && r.as_array().size() == 2 && r.as_array()[0].is_string() && r.as_array()[1].is_string()) {
        PrimaryAddress a{r.as_array()[0].as_string(), 0};
        const std::string& p = r.as_array()[1].as_string();
        auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), a.port);
        if (ec == std::errc{} && end == p.data() + p.size() && a.port > 0 && a.port <= 65535 && !a.host.empty()) {
          return a;
        }
      }
      answer = r.is_nil() ? "does not monitor it" : "answered " + r.describe();
    } catch (const Error& e) {
      answer = e.what();
    }
    answers += (answers.empty() ? "" : "; ") + name + ": " + answer;
  }
  throw Error(Error::Kind::kConnect,
              "no Sentinel of " + asked + " names a primary for '" + options.sentinel_master + "': " + answers);
}

}  // namespace locklab::redis
