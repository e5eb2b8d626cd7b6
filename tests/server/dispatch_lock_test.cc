// The server lock and the io threads: a writer holding it exclusively (MSET, EXEC) never makes
// an io thread wait. A command that touches no key runs without it; one that would run on the
// io thread under it shared goes to the pool when the lock is not to be had at once.
// CLIENT PAUSE and the writes already running: each write is checked against the pause where
// it runs, and PAUSE answers once none runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "commands/command_table.h"
#include "commands/dispatch.h"
#include "config/config.h"
#include "config/engine_options.h"
#include "core/config_holder.h"
#include "larder/clock.h"
#include "larder/store.h"

namespace larder::server {
namespace {

// What `w` holds: the replies written to it.
std::string Replies(resp::ReplyWriter& w) {
  std::string out(w.queue().bytes(), '\0');
  out.resize(static_cast<size_t>(std::max<ssize_t>(0, w.queue().CopyOut(out.data(), out.size()))));
  return out;
}

class DispatchLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("larder-dispatch-lock-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    auto opened = Store::Open(config::EngineOptions(config_.values()), dir_.string());
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(opened).value();
    holder_ = std::make_unique<ConfigHolder>(&config_);
    core_ = std::make_unique<Core>(*store_, *holder_, stats_, *clock_);
    std::vector<std::string_view> names;
    for (const CommandSpec& spec : CommandTable()) names.push_back(spec.name);
    core_->commands.Init(names);
    dispatcher_ = std::make_unique<Dispatcher>(*core_);
  }
  void TearDown() override {
    dispatcher_.reset();
    core_.reset();
    if (store_) store_->Close().PermitUncheckedError();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Plans `argv` as an io thread does and, if inline, runs it on another thread: its reply, or
  // "(waited)" if it did not finish within 10 s (the test's writer is then let go).
  std::string RunInline(std::vector<std::string> argv, Route* route,
                        std::unique_lock<FairSharedMutex>* writer) {
    const Plan plan = dispatcher_->PlanOf(client_, argv, Planner::kIoThread);
    *route = plan.route;
    if (plan.route != Route::kInline) return "";
    auto run = std::async(std::launch::async, [&] {
      resp::ReplyWriter w;
      dispatcher_->Run(plan, client_, argv, w);
      return Replies(w);
    });
    if (run.wait_for(std::chrono::seconds(10)) == std::future_status::ready) return run.get();
    if (writer->owns_lock()) writer->unlock();
    run.wait();
    return "(waited)";
  }

  std::filesystem::path dir_;
  config::Config config_;
  std::shared_ptr<Clock> clock_ = SystemClock();
  std::unique_ptr<Store> store_;
  std::unique_ptr<ConfigHolder> holder_;
  ServerStats stats_;
  std::unique_ptr<Core> core_;
  std::unique_ptr<Dispatcher> dispatcher_;
  ClientState client_;
};

TEST_F(DispatchLockTest, AnIoThreadNeverWaitsForAWriterHoldingTheServerLock) {
  std::unique_lock<FairSharedMutex> writer(core_->exec_lock);  // as MSET or EXEC holds it
  Route route;
  EXPECT_EQ(RunInline({"PING"}, &route, &writer), "+PONG\r\n");
  EXPECT_EQ(route, Route::kInline);
  EXPECT_EQ(RunInline({"ECHO", "x"}, &route, &writer), "$1\r\nx\r\n");
  // A key command waits for the writer, on the pool: never on the io thread.
  EXPECT_EQ(RunInline({"EXISTS", "k"}, &route, &writer), "");
  EXPECT_EQ(route, Route::kPool);
  ASSERT_TRUE(writer.owns_lock());
  writer.unlock();
  // Free again: it runs inline, under the lock PlanOf took, which Run lets go.
  EXPECT_EQ(RunInline({"EXISTS", "k"}, &route, &writer), ":0\r\n");
  EXPECT_EQ(route, Route::kInline);
  auto relocked = std::async(std::launch::async, [&] { std::unique_lock l(core_->exec_lock); });
  const bool released = relocked.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  if (!released) core_->exec_lock.unlock_shared();  // what Run kept, so that the test ends
  EXPECT_TRUE(released) << "Run kept the lock PlanOf took";
}

TEST_F(DispatchLockTest, OnlyCommandsThatTouchNoKeyRunWithoutTheLock) {
  for (const char* name : {"ping", "echo", "client", "hello", "multi", "time", "command"}) {
    EXPECT_FALSE(FindCommand(name)->TakesServerLock()) << name;
  }
  for (const char* name : {"get", "set", "exists", "dbsize", "keys", "scan", "publish", "info",
                           "config", "save", "shutdown", "monitor", "cluster", "mset", "subscribe",
                           "psubscribe", "unsubscribe", "pubsub"}) {
    EXPECT_TRUE(FindCommand(name)->TakesServerLock()) << name;
  }
}

TEST_F(DispatchLockTest, APoolWriteIsCheckedAgainstThePauseWhereItRuns) {
  std::vector<std::string> argv{"MSET", "k", "v"};
  ASSERT_EQ(dispatcher_->PlanOf(client_, argv, Planner::kIoThread).route, Route::kPool);
  EXPECT_FALSE(core_->pause.WritesRunning()) << "counted while it waits for a thread";
  // The pause begins while the job waits for a pool thread: the pool thread holds it.
  core_->pause.Pause(core_->NowMs() + 60000, ClientPause::Scope::kWrite, core_->NowMs());
  EXPECT_EQ(dispatcher_->PlanOf(client_, argv, Planner::kPoolBatch).route, Route::kHold);
  EXPECT_FALSE(core_->pause.WritesRunning());
  core_->pause.Unpause();
  const Plan running = dispatcher_->PlanOf(client_, argv, Planner::kPoolBatch);
  EXPECT_EQ(running.route, Route::kPool);
  EXPECT_TRUE(core_->pause.WritesRunning());
  resp::ReplyWriter w;
  dispatcher_->Run(running, client_, argv, w);
  EXPECT_EQ(Replies(w), "+OK\r\n");
  EXPECT_FALSE(core_->pause.WritesRunning());
}

TEST_F(DispatchLockTest, ClientPauseAnswersOnceTheWritesRunningHaveEnded) {
  std::vector<std::string> write{"MSET", "k", "v"};
  const Plan running = dispatcher_->PlanOf(client_, write, Planner::kPoolBatch);  // begun
  ASSERT_EQ(running.route, Route::kPool);
  std::vector<std::string> pause{"CLIENT", "PAUSE", "60000", "WRITE"};
  const Plan plan = dispatcher_->PlanOf(client_, pause, Planner::kIoThread);
  EXPECT_EQ(plan.route, Route::kPool) << "it waits: never on an io thread";
  ClientState admin;
  auto paused = std::async(std::launch::async, [&] {
    resp::ReplyWriter w;
    dispatcher_->Run(plan, admin, pause, w);
    return Replies(w);
  });
  EXPECT_EQ(paused.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout)
      << "answered while a write ran";
  resp::ReplyWriter w;
  dispatcher_->Run(running, client_, write, w);
  ASSERT_EQ(paused.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(paused.get(), "+OK\r\n");
  // A new write is held, as before.
  EXPECT_EQ(dispatcher_->PlanOf(client_, write, Planner::kIoThread).route, Route::kHold);
}

}  // namespace
}  // namespace larder::server
