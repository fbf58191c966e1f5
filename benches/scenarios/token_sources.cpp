// token_sources.cpp — `scenarios token_sources`: where a fencing token comes
// from, Redis or PostgreSQL, p50/p95 per source (token_sources.hpp).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "benches/scenarios/scenario_runs.hpp"
#include "distributed/embedded_server.hpp"
#include "benches/scenarios/token_sources.hpp"
#include "postgres/embedded_postgres.hpp"

namespace locklab::scenarios {

using namespace std::chrono_literals;

void run_token_sources_scenario(const Options& o) {
  const std::vector<int> waiters = !o.waiters.empty() ? o.waiters : std::vector<int>{1, 50};
  const ms duration(o.duration_ms > 0 ? o.duration_ms : o.sized(1'000, 3'000, 150));
  redis::EmbeddedServer redis_server;
  pg::ServerFromEnvOrEmbedded postgres;
  tokens::Servers servers{redis_server.client_options(), postgres.options()};
  std::vector<Entry> entries;
  struct Line {
    tokens::Source source;
    int waiters;
    tokens::Result r;
  };
  std::vector<Line> lines;
  int family = 0;
  for (const tokens::Source source : tokens::kAllSources) {
    for (int n : waiters) {
      tokens::Config c;
      c.source = source;
      c.waiters = n;
      c.duration = duration;
      const tokens::Result r = tokens::run(servers, c);
      lines.push_back({source, n, r});
      Entry e;
      e.name = std::string("scenario_token_sources/") + tokens::source_id(source) + "/waiters:" + std::to_string(n);
      e.family = family;
      e.wall_ms = r.wall_ms;
      e.counters = {{"p50_ms", r.p50_ms},
                    {"p95_ms", r.p95_ms},
                    {"max_ms", r.max_ms},
                    {"tokens", static_cast<double>(r.tokens)},
                    // tokens per second, all waiters together: the name every suite
                    // gives its throughput, so the plots draw it against waiters
                    {"items_per_second", r.tokens_per_s},
                    {"extra_round_trips_per_token", static_cast<double>(tokens::extra_round_trips(source))},
                    {"unique_and_increasing", r.unique_and_increasing ? 1.0 : 0.0},
                    {"resource_postgres", source == tokens::Source::kPgNextval ||
                                                  source == tokens::Source::kPgUpdateReturning
                                              ? 1.0
                                              : 0.0}};
      entries.push_back(e);
      std::cout << "." << std::flush;
    }
    ++family;
  }
  std::cout << "\n\ntoken_sources: one call that yields one fencing token, " << duration.count()
            << " ms a point, every waiter with its own connection; PostgreSQL: "
            << (postgres.embedded() != nullptr ? "embedded (fsync off, synchronous_commit off)" : postgres.describe())
            << "\n(coupon sale case study, p95 per token: Redis INCR 0.81 ms, its database 7.91 ms)\n\n"
            << std::left << std::setw(24) << "source" << std::right << std::setw(9) << "waiters" << std::setw(10)
            << "p50 ms" << std::setw(10) << "p95 ms" << std::setw(10) << "max ms" << std::setw(12) << "tokens/s"
            << std::setw(12) << "extra RTT" << std::setw(8) << "valid" << "\n";
  for (const Line& l : lines) {
    std::cout << std::left << std::setw(24) << tokens::source_id(l.source) << std::right << std::setw(9) << l.waiters
              << std::setw(10) << cell(l.r.p50_ms, 3) << std::setw(10) << cell(l.r.p95_ms, 3) << std::setw(10)
              << cell(l.r.max_ms, 2) << std::setw(12) << cell(l.r.tokens_per_s) << std::setw(12)
              << tokens::extra_round_trips(l.source) << std::setw(8) << (l.r.unique_and_increasing ? "yes" : "NO")
              << "\n";
  }
  std::cout << "(extra RTT: round trips a token adds to the acquire's own; valid: every waiter's tokens increased and "
               "no shared counter gave a number twice)\n";
  write_json(o.out + "/scenario_token_sources.json", "scenario_token_sources", o.mode, entries);
}

}  // namespace locklab::scenarios
