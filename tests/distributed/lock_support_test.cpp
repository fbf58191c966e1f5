// detail::InDoubt (lock_support.hpp): the record that makes a lock restore
// the server after a command with an unknown outcome, now or before the
// owner's next command. No server: the command and the restore are stubs
// that throw the redis::Error a real exchange would.
#include "distributed/lock_support.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace locklab::redis::detail {
namespace {

Error lost_reply() { return Error(Error::Kind::kTimeout, "timed out after 200 ms waiting for 127.0.0.1:1"); }

TEST(InDoubtTest, OnlyTransportFailuresHaveAnUnknownOutcome) {
  EXPECT_TRUE(outcome_unknown(Error(Error::Kind::kTimeout, "")));
  EXPECT_TRUE(outcome_unknown(Error(Error::Kind::kIo, "")));
  EXPECT_TRUE(outcome_unknown(Error(Error::Kind::kConnect, "")));
  EXPECT_FALSE(outcome_unknown(Error(Error::Kind::kServer, "")));
  EXPECT_FALSE(outcome_unknown(Error(Error::Kind::kProtocol, "")));
  EXPECT_FALSE(outcome_unknown(Error(Error::Kind::kAuth, "")));
}

TEST(InDoubtTest, ACommandThatSucceedsRunsNoRestore) {
  InDoubt doubts;
  int restores = 0;
  EXPECT_EQ(doubts.guard("a", [] { return 7; }, [&] { ++restores; }), 7);
  doubts.settle("a", [&] { ++restores; });
  EXPECT_EQ(restores, 0);
}

TEST(InDoubtTest, AnUnknownOutcomeRestoresAtOnceAndRethrows) {
  InDoubt doubts;
  int restores = 0;
  try {
    doubts.guard("a", []() -> int { throw lost_reply(); }, [&] { ++restores; });
    FAIL() << "the command's error was swallowed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kTimeout);
  }
  EXPECT_EQ(restores, 1);
  EXPECT_FALSE(doubts.contains("a")) << "a restore that succeeded left the owner in doubt";
  doubts.settle("a", [&] { ++restores; });
  EXPECT_EQ(restores, 1);
}

TEST(InDoubtTest, ACommandThatNeverReachedTheServerIsRestoredBeforeTheNextOneNotAtOnce) {
  InDoubt doubts;
  int restores = 0;
  EXPECT_THROW(doubts.guard("a", []() -> int { throw Error(Error::Kind::kConnect, "refused"); }, [&] { ++restores; }),
               Error);
  EXPECT_EQ(restores, 0) << "a restore now would wait out another connect timeout";
  EXPECT_TRUE(doubts.contains("a"));
  doubts.settle("a", [&] { ++restores; });
  EXPECT_EQ(restores, 1);
  EXPECT_FALSE(doubts.contains("a"));
}

TEST(InDoubtTest, AServerErrorIsAKnownOutcomeAndRestoresNothing) {
  InDoubt doubts;
  int restores = 0;
  EXPECT_THROW(doubts.guard("a", []() -> int { throw Error(Error::Kind::kServer, "WRONGTYPE"); }, [&] { ++restores; }),
               Error);
  EXPECT_EQ(restores, 0);
  EXPECT_FALSE(doubts.contains("a"));
}

TEST(InDoubtTest, AFailedRestoreIsRetriedBeforeThatOwnersNextCommandOnly) {
  InDoubt doubts;
  int restores = 0;
  auto failing = [&] {
    ++restores;
    throw lost_reply();
  };
  EXPECT_THROW(doubts.guard("a", []() -> int { throw lost_reply(); }, failing), Error);
  EXPECT_EQ(restores, 1);
  EXPECT_TRUE(doubts.contains("a"));
  doubts.settle("b", failing);  // another owner is not in doubt
  EXPECT_EQ(restores, 1);
  EXPECT_THROW(doubts.settle("a", failing), Error) << "settle must report a restore that keeps failing";
  EXPECT_TRUE(doubts.contains("a"));
  doubts.settle("a", [&] { ++restores; });
  EXPECT_EQ(restores, 3);
  EXPECT_FALSE(doubts.contains("a"));
  doubts.settle("a", [&] { ++restores; });
  EXPECT_EQ(restores, 3) << "settled once is settled";
}

}  // namespace
}  // namespace locklab::redis::detail
