// SseStream framing and grammar on a plain ostream.
#include "http/sse_stream.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace wo::http {
namespace {

TEST(SseStream, FramesEventsAndEnforcesTheGrammar) {
  std::ostringstream out;
  SseStream s(out);
  EXPECT_FALSE(s.token("x", 0)) << "token before started";
  EXPECT_FALSE(s.end(0, 0, 0, "eos")) << "end before started";
  EXPECT_TRUE(s.started("j", "m", "2026-01-01T00:00:00.000Z", 9));
  EXPECT_FALSE(s.started("j", "m", "t", 9));
  EXPECT_TRUE(s.token("a\nb", 0));
  EXPECT_TRUE(s.end(1, 3, 2.5, "eos"));
  EXPECT_FALSE(s.token("late", 1));
  EXPECT_FALSE(s.error("INTERNAL", "late", false));
  EXPECT_EQ(out.str(),
            "event: started\ndata: "
            "{\"job_id\":\"j\",\"model\":\"m\",\"started_at\":\"2026-01-01T00:00:00.000Z\",\"seed\":9}\n\n"
            "event: token\ndata: {\"t\":\"a\\nb\",\"i\":0}\n\n"
            "event: end\ndata: "
            "{\"tokens_out\":1,\"tokens_in\":3,\"decode_time_ms\":2.5,\"stop_reason\":\"eos\"}\n\n");
  EXPECT_EQ(s.output_text(), "a\nb");
}

TEST(SseStream, ErrorMayBeTheOnlyEvent) {
  std::ostringstream out;
  SseStream s(out);
  EXPECT_TRUE(s.error("VRAM_OOM", "no memory", true));
  EXPECT_EQ(out.str(),
            "event: error\ndata: {\"code\":\"VRAM_OOM\",\"message\":\"no memory\",\"retriable\":true}\n\n");
}

TEST(SseStream, AFailedWriteMeansTheClientIsGone) {
  std::ostringstream out;
  SseStream s(out);
  EXPECT_TRUE(s.started("j", "m", "t", 1));
  out.setstate(std::ios::badbit);
  EXPECT_FALSE(s.token("x", 0));
  EXPECT_TRUE(s.client_gone());
}

} // namespace
} // namespace wo::http
