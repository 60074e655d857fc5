// The worked example of docs/adding-a-mechanism.md (docs/examples/seqpacket_pair.cpp, compiled into
// this program): it registers, the harness drives it in both patterns as threads and processes
// with every message verified, its checks refuse what it cannot do, and the page shows the file
// as it is.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "../workload_support.hpp"
#include "core/base/error.hpp"
#include "core/plan/runner.hpp"

namespace ipclab {
namespace {

Record run_example(Overrides o) { return test::run_point("example/seqpacket_pair", std::move(o)); }

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ExampleMechanism, TheHarnessDrivesItInBothPatternsAsThreadsAndProcesses) {
  for (const char* pattern : {"roundtrip", "throughput"})
    for (const char* mode : {"threads", "processes"}) {
      const Record r = run_example(
          {{"pattern", {pattern}}, {"mode", {mode}}, {"size", {"256"}}, {"placement", {"unpinned"}}});
      SCOPED_TRACE(r.name);
      EXPECT_EQ(r.status, Status::Ok) << r.error;
      EXPECT_GT(r.ops, 0u);
      EXPECT_GT(r.integrity.received, 0u);
      EXPECT_TRUE(r.integrity.clean()) << r.integrity.text();
    }
  const Record pairs = run_example(
      {{"pattern", {"roundtrip"}}, {"producers", {"2"}}, {"consumers", {"2"}}, {"placement", {"unpinned"}}});
  EXPECT_EQ(pairs.status, Status::Ok) << pairs.error;
  EXPECT_TRUE(pairs.integrity.clean()) << pairs.integrity.text();
}

TEST(ExampleMechanism, ItsChecksRefuseWhatItCannotDo) {
  // Throughput with two producers on one socketpair: refused while planning, with the reason.
  try {
    run_example({{"pattern", {"throughput"}}, {"producers", {"2"}}});
    ADD_FAILURE() << "two producers on one socketpair were planned";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("one socketpair carries one conversation"), std::string::npos)
        << e.what();
  }
}

TEST(ExampleMechanism, ThePageShowsTheFileAsItIs) {
  const std::string src = text_of(IPCLAB_TEST_DIR "/../docs/examples/seqpacket_pair.cpp");
  const std::string page = text_of(IPCLAB_TEST_DIR "/../docs/adding-a-mechanism.md");
  ASSERT_FALSE(src.empty());
  EXPECT_NE(page.find("```cpp\n" + src + "```"), std::string::npos)
      << "docs/adding-a-mechanism.md must show docs/examples/seqpacket_pair.cpp verbatim in a ```cpp block";
}

}  // namespace
}  // namespace ipclab
