// The kept host threads the pipelines build their codebooks on: each task's
// own result or exception, and no task waiting on another's thread.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>
#include <vector>

#include "src/core/host_workers.hpp"

namespace ksz::test {
namespace {

TEST(HostWorkers, EachTaskItsOwnResult) {
  // From several threads at once, as concurrent compress calls would.
  std::vector<std::thread> callers;
  std::vector<int> wrong(4, 0);
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([c, &wrong] {
      std::vector<std::future<int>> results;
      for (int k = 0; k < 50; ++k) results.push_back(HostWorkers::run([c, k] { return 1000 * c + k; }));
      for (int k = 0; k < 50; ++k) wrong[c] += results[k].get() != 1000 * c + k;
    });
  for (std::thread& t : callers) t.join();
  for (int c = 0; c < 4; ++c) EXPECT_EQ(wrong[c], 0) << "caller " << c;
}

TEST(HostWorkers, ExceptionReachesTheCaller) {
  auto f = HostWorkers::run([]() -> int { throw std::runtime_error("codebook failed"); });
  EXPECT_THROW(f.get(), std::runtime_error);
  EXPECT_EQ(HostWorkers::run([] { return 7; }).get(), 7);  // the thread survives it
}

TEST(HostWorkers, ATaskNeverWaitsForAnotherToFinish) {
  // The first task finishes only once the second has run: with the second
  // queued behind the first on one thread this would never happen.
  std::promise<void> second_ran;
  std::shared_future<void> ran = second_ran.get_future().share();
  auto first = HostWorkers::run([ran] { return ran.wait_for(std::chrono::seconds(20)) == std::future_status::ready; });
  auto second = HostWorkers::run([&second_ran] { second_ran.set_value(); });
  second.get();
  EXPECT_TRUE(first.get());
}

TEST(HostWorkers, AWarmedThreadTakesTheNextJobAtOnce) {
  // Polling for a long time must not keep the job waiting for the poll's end.
  HostWorkers::warm(std::chrono::seconds(30));
  auto f = HostWorkers::run([] { return 11; });
  ASSERT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(f.get(), 11);
}

}  // namespace
}  // namespace ksz::test
