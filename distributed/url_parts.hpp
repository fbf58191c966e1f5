// url_parts.hpp — the parts of a Redis URL that both URL readers read the
// same way: redis:// and redis+cluster:// (Client::Options::from_url,
// client.cpp) and redis+sentinel:// (parse_sentinel_url,
// sentinel_resolver.cpp). Each reader keeps its own grammar (one host or a
// list of Sentinels, a master name, which database numbers it allows) and
// its own messages; what is here is the same text read once.
//
// take_url_credentials: everything before the LAST '@' of what follows the
// scheme is the credentials (a password may contain '@'; a host never
// does): "user:password" sets both, at the FIRST ':' (a user name has no
// ':'), and a lone "password" (Redis < 6, AUTH <password>) sets only the
// password. No '@': nothing is taken. Never throws; an empty user or
// password is the caller's to judge (the server answers AUTH).
//
// parse_url_number: the whole text as a decimal int (std::from_chars: an
// optional '-', then digits; no '+', no blanks, nothing after, not empty,
// within int's range). Anything else is std::invalid_argument
//   "<url kind> '<shown>': bad <what> '<text>'"
// where <shown> is the URL as a message may show it (Client::Options::
// redacted_url: never a password). Ranges (a port in 1..65535, a database
// number >= 0) are the caller's to check, so the messages name them apart.
//
// Cost: string views and std::from_chars; the only allocations are the
// credentials' copies and a message.
#pragma once

#include <charconv>
#include <stdexcept>
#include <string>
#include <string_view>

namespace locklab::redis::detail {

// Removes "<credentials>@" from the front of `rest` (the URL after its
// scheme) into `user` and `password`; see the essay.
inline void take_url_credentials(std::string_view& rest, std::string& user, std::string& password) {
  const auto at = rest.rfind('@');
  if (at == std::string_view::npos) return;
  const std::string_view cred = rest.substr(0, at);
  rest = rest.substr(at + 1);
  if (auto colon = cred.find(':'); colon != std::string_view::npos) {
    user = std::string(cred.substr(0, colon));
    password = std::string(cred.substr(colon + 1));
  } else {
    password = std::string(cred);
  }
}

// See the essay. `url_kind` opens the message ("redis URL").
inline int parse_url_number(std::string_view text, const char* url_kind, const char* what, const std::string& shown) {
  int v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || p != text.data() + text.size()) {
    throw std::invalid_argument(std::string(url_kind) + " '" + shown + "': bad " + what + " '" + std::string(text) +
                                "'");
  }
  return v;
}

}  // namespace locklab::redis::detail
