// client.hpp — a thread-safe Redis client: a pool of hiredis connections,
// Lua scripts by SHA, one shared pub/sub connection, typed errors.
//
// What it guarantees
// ------------------
// - Thread safety: one Client is shared by every thread of a process, like
//   a connection pool in Lettuce or Redisson. Each command borrows a pooled
//   connection for exactly one request/reply exchange (one round trip) and
//   gives it back; connections are opened on demand up to
//   Options::max_connections (a thread blocked in BLPOP keeps one for the
//   whole wait, so size the pool for the waiters you expect).
// - Typed, timely errors (error.hpp): cannot connect to host:port (within
//   connect_timeout), timed out after N ms, connection lost, the server's own
//   error text, authentication failed. A command never waits longer than
//   command_timeout for its reply (plus the block time of a blocking command
//   sent with command_blocking), and never returns a silent false.
// - Scripts (script.hpp): SCRIPT LOAD once per script per Client, then
//   EVALSHA; on NOSCRIPT (server restarted, SCRIPT FLUSH) load again and
//   retry once. KEYS and ARGV only.
// - Pub/sub (subscriber.hpp): one dedicated connection per Client, created
//   on first use, multiplexes every channel the process waits on: 50 waiters
//   on one lock in one process are one SUBSCRIBE, not 50.
// - Lease renewals (lease_renewer.hpp): one timer thread per Client, started
//   by the first watchdog-mode hold, runs the renewals of every lock built on
//   it through the connection pool: 1,000 held locks cost one thread.
// - Owner identity: id() is 128 random bits from std::random_device, drawn
//   once per Client (and again in a forked child, see "After fork()");
//   thread_owner() appends a process-unique number for the calling thread
//   (never reused, unlike std::thread::id). Lock tokens are these strings:
//   unguessable across clients, distinct across threads and processes.
//
// What it costs
// -------------
// command(): one round trip (loopback ~25-40 us warm on the lab machine), one
// pool mutex lock/unlock on each side and the reply's copy into a Reply.
// eval(): the same after the first call per script (which adds one SCRIPT
// LOAD). pipeline(): one round trip for a whole batch of commands.
// round_trips() counts every exchange, so a benchmark can report round trips
// per lock acquisition.
//
// Failure modes
// -------------
// - Server killed: commands in flight fail with kIo, new connections with
//   kConnect. Restarted on the same port: the next commands reconnect by
//   themselves (an idle pooled connection is checked with a zero-timeout
//   poll() before use and dropped if the server closed it; once one
//   connection has failed, every connection opened before is dropped too).
//   Scripts are re-loaded on NOSCRIPT.
// - Slow server: kTimeout after command_timeout; that connection is closed
//   (its late reply would be read by the next command otherwise).
// - The client never retries a command by itself: a command whose
//   connection broke may or may not have run on the server.
//
// After fork()
// ------------
// A child made by fork() inherits the Client: its pooled sockets, its id and
// (in the lock objects) its hold records. Left alone, the child's commands
// would share the parent's server connections (each process could read the
// other's replies) and the child's thread_owner() would be the parent's, so
// it could re-enter or release the parent's locks. So the Client checks
// getpid() (as redis-py's connection pool does), and in the child:
// - the first command drops the inherited pooled connections, closing the
//   child's copies of their descriptors and sending nothing on them (no
//   QUIT: the parent's connections stay open and in sync), then opens its
//   own on demand;
// - id() is redrawn (128 new random bits), so thread_owner() differs from
//   every owner of the parent: a lock the parent holds is another owner's
//   there (unlock() is the non-holder's error, try_lock fails while the
//   parent holds it);
// - subscriber() starts a new Subscriber: the parent's one has no reader
//   thread in the child. It is set aside, never destroyed (its thread can
//   be neither joined nor detached there), with the child's copies of its
//   descriptors closed, nothing sent (UNSUBSCRIBE would unsubscribe the
//   parent's connection).
// - lease_renewer() starts a new, empty LeaseRenewer: the parent's has no
//   timer thread in the child, so it is set aside the same way, never
//   destroyed nor even locked (its thread may have held its mutex at the
//   fork). The parent's renewals stay the parent's: the child renews only
//   the holds it takes itself.
// What the child may do: use the Client (commands, scripts, pipelines,
// subscriber()) and build new lock objects on it. What it may not: fork
// while another thread is inside a call on this Client (only the forking
// thread exists in the child, and a mutex that another thread held stays
// locked there; the renewal timer is such a thread for a few microseconds
// per renewal); use a lock object built in the parent for anything but
// being refused as a non-owner or destroyed (it sees none of the parent's
// holds as its own; a wait needs threads it does not have); destroy, in
// the child, a lock object whose async worker thread ran in the parent. End
// the child with exec or _exit if such objects exist. Cost: one getpid()
// system call per command and per id() / thread_owner() (well under a
// microsecond, against a ~30 us round trip).
//
// Redis Cluster
// -------------
// With Options::cluster (or a redis+cluster://host:port URL, host:port any
// master: the seed) the Client sends each command to the master that owns
// its first key's hash slot, and follows MOVED (slot map refreshed) and ASK
// (ASKING first), at most 5 redirects a command: cluster_router.hpp. The
// interface does not change; what a cluster adds is two errors
// (cluster_error.hpp: CrossSlot, TooManyRedirects), database 0 only, and
// one pool per master (max_connections applies to each). Keyless commands
// (PING, INFO, SCRIPT, PUBLISH ...) go to the seed. Pub/sub is sharded
// (sharded_pub_sub(), Redis >= 7.0): the locks' scripts wake waiters with
// SPUBLISH, which stays on the master that owns the channel's slot (a
// classic PUBLISH is broadcast to every master), and subscriber()
// SSUBSCRIBEs each channel on that master, one connection per master
// (subscriber.hpp, publishing_script.hpp). Our locks derive all their keys
// and channels from the lock name within one hash slot (lock_keys.hpp), so
// every lock works on a cluster unchanged.
//
// Following a failover
// --------------------
// With Options::sentinels the Client asks Sentinel for the primary at
// construction, and again (resolve_primary: one question per Sentinel at
// most) whenever a command fails with kIo or kConnect or is answered
// -READONLY (it reached a demoted primary, now a replica). A new answer
// replaces the endpoint and drops every pooled connection to the old one.
// What is retried: a -READONLY reply, once, on the new primary (the replica
// ran nothing); a kConnect, once, when Sentinel names another address (it
// was never sent). A kIo is thrown as before (the command may have run):
// the next command goes to the new primary. While Sentinel still names the
// dead primary (the first seconds of a failover) commands fail with kConnect
// as for a standalone server that is down; no command waits for the
// promotion. No Sentinel answers: Error(kConnect) listing each one's answer.
// What a lock held across a failover means: its key was written on the old
// primary; if that write had not replicated when the primary died, the new
// primary has no key and grants the lock to the next client while the old
// holder still believes it holds it (benches/scenarios/failover.hpp counts
// it). Options::wait_replicas narrows that window; only a fencing token
// checked by the resource (fencing.hpp) closes it. The pub/sub connection
// (subscriber()) is opened on the primary of the moment it starts and does
// not follow a failover: waiters of PubSubLock, AdaptiveLock and
// PermitSemaphore then learn of releases at their lease bound only.
//
// When to use the environment: Client::Options::from_env() reads
// LOCKLAB_REDIS_URL (redis://[user:password@]host:port[/db]) and takes the
// password from LOCKLAB_REDIS_PASSWORD if set, so it need not appear on a
// command line. Tests never use it: they start their own EmbeddedServer.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "distributed/error.hpp"
#include "distributed/reply.hpp"
#include "distributed/script.hpp"

namespace locklab::redis {

class LeaseRenewer;
class Subscriber;
namespace detail {
class Connection;
class ClusterRouter;
}

class Client {
 public:
  struct Options {
    std::string host = "127.0.0.1";
    int port = 6379;
    int db = 0;
    std::string user;      // empty: AUTH password only (Redis < 6 style)
    std::string password;  // empty: no AUTH
    std::chrono::milliseconds connect_timeout{1'000};
    std::chrono::milliseconds command_timeout{2'000};
    std::size_t max_connections = 128;
    // false: the constructor connects one connection, so a wrong address
    // fails there. true: the constructor sends nothing and a server that is
    // down does not stop it; the first command connects (and fails with
    // kConnect then, as every command does while the server is down). For
    // RedLock's nodes, where a node may be down when the lock is built.
    bool lazy_connect = false;
    // true: host:port is a seed node of a Redis Cluster and commands are
    // routed by key slot (see "Redis Cluster" above). db must be 0.
    bool cluster = false;

    // Sentinel (sentinel_resolver.hpp): when `sentinels` is non-empty, the
    // server is the primary these Sentinels name for `sentinel_master`,
    // asked at construction (host and port are then overwritten) and again
    // after a failover; see "Following a failover" in the essay. Filled by
    // a redis+sentinel:// URL, or by hand ({host, port} pairs).
    std::vector<std::pair<std::string, int>> sentinels;
    std::string sentinel_master;
    // Replication (replica_wait.hpp): > 0, every lock built on this Client
    // follows each successful acquire with WAIT wait_replicas wait_timeout
    // and, if fewer replicas acknowledged, releases what it took and throws
    // NotReplicated. 0: no WAIT (the default). wait_timeout must be below
    // command_timeout (std::invalid_argument): the WAIT's reply is read
    // within it. 100 ms: loopback replicas acknowledge in well under 1 ms
    // (WAIT asks them at once with REPLCONF GETACK), so the default leaves
    // room for a loaded machine and still fails fast against a stalled one.
    int wait_replicas = 0;
    std::chrono::milliseconds wait_timeout{100};

    // "host:port", for messages.
    std::string endpoint() const { return host + ":" + std::to_string(port); }

    // Parses redis://[user:password@]host[:port][/db] (also "redis://:pw@h"),
    // and redis+cluster://[user:password@]host[:port][/0] (cluster = true:
    // host:port is the seed; a database other than 0 is refused, a cluster
    // has no other), and redis+sentinel://... (parse_sentinel_url in
    // sentinel_resolver.hpp).
    // Throws std::invalid_argument naming the problem for anything else
    // (another scheme, a bad port, a bad db number); the message shows the
    // URL redacted (redacted_url), since messages end up in logs.
    static Options from_url(std::string_view url);
    // `url` with everything between the scheme and the last '@' (the user
    // and the password) replaced by "***": "redis://***@host:6379/0".
    // Unchanged when there is no '@'. Use it wherever a URL is shown.
    static std::string redacted_url(std::string_view url);
    // Options from LOCKLAB_REDIS_URL (nullopt if unset or empty), with the
    // password replaced by LOCKLAB_REDIS_PASSWORD when that is set.
    // Throws std::invalid_argument if the URL is malformed.
    static std::optional<Options> from_env();
  };

  // Connects one pooled connection right away (unless
  // options.lazy_connect), so a wrong address fails here: throws
  // Error(kConnect) "cannot connect to host:port: ..." within
  // options.connect_timeout, or Error(kAuth). Throws std::invalid_argument
  // for nonsensical options (port outside 1..65535, zero timeouts or pool).
  explicit Client(Options options);
  // Stops the renewal timer, closes every connection and stops the pub/sub
  // thread. Pre: no thread is inside a call on this Client and every lock
  // built on it is destroyed.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // (With Options::cluster: also Error(kServer) if the seed is not a
  // cluster node, and std::invalid_argument for a db other than 0.)

  // Sends one command, e.g. command({"SET", key, value, "NX", "PX", "100"}),
  // and returns its reply. Arguments are binary-safe. Throws Error: kServer
  // if the server answers with an error reply (the message quotes it),
  // kTimeout / kIo / kConnect as described above. One round trip.
  Reply command(std::initializer_list<std::string_view> args);
  Reply command(const std::vector<std::string>& args);

  // For commands that block on the server (BLPOP key timeout): the reply may
  // take up to `block` longer than command_timeout before kTimeout. Pass the
  // same block time the command itself carries.
  Reply command_blocking(const std::vector<std::string>& args, std::chrono::milliseconds block);

  // Pipelining: writes every command in `commands` before reading any
  // reply, then reads the replies in order, on one pooled connection. One
  // round trip for the lot instead of one per command (round_trips() grows
  // by 1); the server's work is the same. hiredis: redisAppendCommandArgv
  // per command, then redisGetReply per reply.
  // - Not atomic: another client's commands may run between two of these
  //   on the server. Put MULTI first and EXEC last for atomicity (the EXEC
  //   reply then carries the results; the others answer QUEUED).
  // - Error replies come back in place as kError Replies, not thrown: the
  //   other commands ran anyway, and a caller must see which one failed.
  //   kTimeout / kIo / kConnect are thrown as for command(), and then any
  //   prefix of the commands may have run.
  // - The command timeout bounds each reply read, not the whole batch.
  // - Replies are held by the server until read: keep batches to thousands
  //   of commands, not millions (its output buffer grows with the batch).
  // An empty list sends nothing and costs no round trip. A command with no
  // arguments: std::invalid_argument, nothing sent.
  std::vector<Reply> pipeline(const std::vector<std::vector<std::string>>& commands);

  // Runs `script` with KEYS = keys and ARGV = args via EVALSHA (SCRIPT LOAD
  // on first use and after NOSCRIPT). Throws Error(kServer) with the
  // server's message if the script fails (e.g. WRONGTYPE inside it).
  Reply eval(const Script& script, const std::vector<std::string>& keys, const std::vector<std::string>& args);

  // The shared pub/sub connection (started on first call; thread-safe); on
  // a cluster one per master, each channel routed by its slot.
  Subscriber& subscriber();
  // How this Client's locks wake waiters: true on a Redis Cluster
  // (Options::cluster: SPUBLISH / SSUBSCRIBE, each release stays on its
  // lock's master), false on one server (PUBLISH / SUBSCRIBE, which every
  // Redis version has and which costs the same there).
  bool sharded_pub_sub() const noexcept { return options_.cluster; }
  // The same if already started, else nullptr (never starts it: a lock's
  // fast path must not cost a thread or a connection).
  Subscriber* subscriber_if_started();
  // The timer that renews the watchdog-mode leases of the locks built on
  // this Client (lease_renewer.hpp): created on first call, its thread on
  // its first schedule(); thread-safe. In a child made by fork(), a new one.
  LeaseRenewer& lease_renewer();
  // The same if already created in this process, else nullptr (a lock's
  // destructor: nothing to cancel, and nothing is started).
  LeaseRenewer* lease_renewer_if_started();

  // The options as given, with host and port those of the primary Sentinel
  // named at construction (Options::sentinels); primary_endpoint() follows
  // later failovers.
  const Options& options() const noexcept { return options_; }
  // "host:port" of the server new connections go to now: options().endpoint()
  // without Sentinel, else Sentinel's latest answer.
  std::string primary_endpoint() const;
  // 32 lower-case hex digits (128 random bits), fixed for this Client in
  // this process: a child made by fork() draws a new one (see "After
  // fork()"). Returned by value: the child replaces it.
  std::string id() const;
  // id() + ":" + a number unique to the calling thread within the process.
  std::string thread_owner() const;

  // Request/reply exchanges sent so far on pooled connections (every
  // command, SCRIPT LOAD included; not the pub/sub connection's, which
  // subscriber() counts). Monotonic; relaxed: a statistic.
  // On a cluster: summed over the masters' pools, redirects and slot map
  // loads included.
  std::uint64_t round_trips() const noexcept;
  // Connections open now (idle + borrowed).
  std::size_t open_connections() const;

 private:
  friend class detail::ClusterRouter;  // a node's exchange() and sha_for()
  struct LoadedScript {
    std::string sha;
    std::shared_ptr<const std::string> origin;  // "host:port (script name)"
  };
  Reply exchange(const std::vector<std::string_view>& args, std::chrono::milliseconds extra_timeout);
  std::unique_ptr<detail::Connection> take();
  void give_back(std::unique_ptr<detail::Connection> c);
  void discard(std::unique_ptr<detail::Connection> c, bool broken);
  LoadedScript sha_for(const Script& script, bool reload);
  // In a child made by fork() (getpid() differs from pool_pid_): forgets the
  // inherited connections, closing their descriptors without sending
  // anything. Pre: pool_mu_ held.
  void drop_inherited_connections();
  // In such a child: sets subscriber_ aside without destroying it (see
  // client.cpp). Pre: subscriber_mu_ held.
  void abandon_inherited_subscriber();
  // The same for lease_renewer_. Pre: renewer_mu_ held.
  void abandon_inherited_renewer();
  // Options::sentinels only: asks Sentinel for the primary again; true if it
  // names another address than the one in use (then every pooled
  // connection is dropped). Never throws: false when no Sentinel answers.
  bool follow_primary() noexcept;
  // The options a new connection uses: options_ with the primary of the
  // moment. Pre: pool_mu_ held.
  Options connection_options() const;

  Options options_;
  mutable std::mutex id_mu_;
  mutable std::string id_;  // redrawn by id() in a child made by fork()
  mutable pid_t id_pid_;    // the process id_ was drawn in
  std::atomic<std::uint64_t> round_trips_{0};

  mutable std::mutex pool_mu_;
  std::condition_variable pool_cv_;
  std::vector<std::unique_ptr<detail::Connection>> idle_;
  std::size_t open_ = 0;
  std::uint64_t generation_ = 0;  // bumped when a connection breaks
  pid_t pool_pid_;                // the process the pooled connections belong to
  std::string primary_host_;      // options_.host, or Sentinel's latest answer
  int primary_port_ = 0;

  // What every reply says it came from (Reply::origin): one shared string
  // for commands, one per script.
  std::shared_ptr<const std::string> origin_;
  std::mutex scripts_mu_;
  std::unordered_map<const Script*, LoadedScript> shas_;

  std::mutex subscriber_mu_;
  std::unique_ptr<Subscriber> subscriber_;
  pid_t subscriber_pid_ = 0;  // the process subscriber_ was started in

  std::mutex renewer_mu_;
  std::unique_ptr<LeaseRenewer> lease_renewer_;
  pid_t renewer_pid_ = 0;  // the process lease_renewer_ was created in

  // Options::cluster: every command goes through it (nullptr otherwise).
  std::unique_ptr<detail::ClusterRouter> router_;
};

}  // namespace locklab::redis
