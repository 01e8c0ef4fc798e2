// X-Correlation-Id and X-Deadline handling.
#include "http/request_headers.hpp"

#include <gtest/gtest.h>

namespace wo::http {
namespace {

TEST(RequestHeaders, CorrelationIdIsKeptWhenSaneAndReplacedOtherwise) {
  EXPECT_EQ(correlation_id_or_new("abc-123"), "abc-123");
  for (const std::string &bad :
       {std::string(), std::string(129, 'a'), std::string("has space"), std::string("tab\t")}) {
    std::string id = correlation_id_or_new(bad);
    EXPECT_TRUE(is_uuid(id)) << id;
    EXPECT_EQ(id[14], '4') << "version 4";
  }
  EXPECT_NE(new_uuid_v4(), new_uuid_v4());
}

TEST(RequestHeaders, DeadlineAcceptsEpochMillisAndRfc3339) {
  using namespace std::chrono;
  auto ms = std::get<system_clock::time_point>(parse_deadline_header("1790000000123"));
  EXPECT_EQ(duration_cast<milliseconds>(ms.time_since_epoch()).count(), 1790000000123LL);
  auto utc = std::get<system_clock::time_point>(parse_deadline_header("2026-11-22T05:00:00Z"));
  auto offset = std::get<system_clock::time_point>(parse_deadline_header("2026-11-22T07:00:00+02:00"));
  EXPECT_EQ(utc, offset);
  EXPECT_EQ(duration_cast<seconds>(utc.time_since_epoch()).count(), 1795323600LL);
  auto frac = std::get<system_clock::time_point>(parse_deadline_header("2026-11-22T05:00:00.250Z"));
  EXPECT_EQ(duration_cast<milliseconds>(frac - utc).count(), 250);
}

TEST(RequestHeaders, DeadlineGarbageIsAnErrorNamingTheHeader) {
  for (const char *bad : {"", "soon", "-5", "2026-13-01", "12:00", "1.5"}) {
    auto r = parse_deadline_header(bad);
    ASSERT_TRUE(std::holds_alternative<std::string>(r)) << bad;
    EXPECT_NE(std::get<std::string>(r).find("X-Deadline"), std::string::npos);
  }
}

} // namespace
} // namespace wo::http
