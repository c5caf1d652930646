// The unit helpers of units.hpp, as scenario files use them: bits vs bytes, decimal vs binary
// prefixes, bare numbers as SI base units, and errors that name where the value came from.
#include "stepcast/units.hpp"

#include <gtest/gtest.h>

#include <string>

#include "stepcast/error.hpp"

namespace stepcast {
namespace {

const SourceLocation kWhere{"job.yaml", 7, "cluster.nic_bandwidth"};

TEST(Units, BandwidthBitsVersusBytes) {
  // Lower-case b is bits: 10 Gbit/s = 10e9 / 8 bytes/s.
  EXPECT_DOUBLE_EQ(parse_bandwidth("10Gbps", kWhere), 1.25e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("10Gb/s", kWhere), 1.25e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("100Mbps", kWhere), 12.5e6);
  EXPECT_DOUBLE_EQ(parse_bandwidth("8000bps", kWhere), 1000);  // the smallest taken: 1 kB/s
  // Upper-case B is bytes.
  EXPECT_DOUBLE_EQ(parse_bandwidth("1.25GB/s", kWhere), 1.25e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1.25GBps", kWhere), 1.25e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("3000B/s", kWhere), 3000);
  EXPECT_DOUBLE_EQ(parse_bandwidth("12MB/s", kWhere), 12e6);
  // Space between number and unit is fine; a bare number is bytes/s.
  EXPECT_DOUBLE_EQ(parse_bandwidth("25 Gbps", kWhere), 25e9 / 8);
  EXPECT_DOUBLE_EQ(parse_bandwidth("5e8", kWhere), 5e8);
}

TEST(Units, BandwidthBinaryPrefixes) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("1KiB/s", kWhere), 1024);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1MiB/s", kWhere), 1024.0 * 1024);
  EXPECT_DOUBLE_EQ(parse_bandwidth("2GiB/s", kWhere), 2.0 * 1024 * 1024 * 1024);
}

TEST(Units, BandwidthMustBePositive) {
  EXPECT_THROW((void)parse_bandwidth("0", kWhere), Error);
  EXPECT_THROW((void)parse_bandwidth("0Gbps", kWhere), Error);
  EXPECT_THROW((void)parse_bandwidth("-1Gbps", kWhere), Error);
}

TEST(Units, Sizes) {
  EXPECT_DOUBLE_EQ(parse_bytes("25MB", kWhere), 25e6);
  EXPECT_DOUBLE_EQ(parse_bytes("1kB", kWhere), 1e3);
  EXPECT_DOUBLE_EQ(parse_bytes("1KB", kWhere), 1e3);
  EXPECT_DOUBLE_EQ(parse_bytes("2GB", kWhere), 2e9);
  EXPECT_DOUBLE_EQ(parse_bytes("1KiB", kWhere), 1024);
  EXPECT_DOUBLE_EQ(parse_bytes("1MiB", kWhere), 1024.0 * 1024);
  EXPECT_DOUBLE_EQ(parse_bytes("1GiB", kWhere), 1024.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_bytes("1TiB", kWhere), 1024.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_bytes("4096", kWhere), 4096);
  EXPECT_DOUBLE_EQ(parse_bytes("0", kWhere), 0);  // sizes may be 0 (one bucket per gradient)
  EXPECT_THROW((void)parse_bytes("-1MB", kWhere), Error);
}

TEST(Units, Durations) {
  EXPECT_DOUBLE_EQ(parse_duration("5us", kWhere), 5e-6);
  EXPECT_DOUBLE_EQ(parse_duration("292ms", kWhere), 0.292);
  EXPECT_DOUBLE_EQ(parse_duration("1.5s", kWhere), 1.5);
  EXPECT_DOUBLE_EQ(parse_duration("10ns", kWhere), 10e-9);
  EXPECT_DOUBLE_EQ(parse_duration("2min", kWhere), 120);
  EXPECT_DOUBLE_EQ(parse_duration("1h", kWhere), 3600);
  EXPECT_DOUBLE_EQ(parse_duration("0.25", kWhere), 0.25);  // bare: seconds
  EXPECT_DOUBLE_EQ(parse_duration("0", kWhere), 0);
  EXPECT_THROW((void)parse_duration("-5us", kWhere), Error);
}

TEST(Units, BadUnitErrorNamesWhere) {
  try {
    (void)parse_bandwidth("10Gbit", kWhere);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.where(), kWhere);
    std::string what = e.what();
    EXPECT_NE(what.find("cluster.nic_bandwidth"), std::string::npos) << what;
    EXPECT_NE(what.find("job.yaml:7"), std::string::npos) << what;
    EXPECT_NE(what.find("10Gbit"), std::string::npos) << what;
  }
  for (const char* bad : {"", "fast", "5 parsecs", "1e999ms", "nan"}) {
    SourceLocation where{"t.yaml", 2, "cluster.link_latency"};
    try {
      (void)parse_duration(bad, where);
      ADD_FAILURE() << "no error for '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cluster.link_latency"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW((void)parse_bytes("25Mb", kWhere), Error);  // bits are not a size unit
}

TEST(Units, ValuesAreHeldToPhysicalRangesAfterTheirUnit) {
  // Finite as written, infinite or absurd once the unit is applied: refused at the edge.
  EXPECT_THROW((void)parse_bandwidth("1e308Gbps", kWhere), Error);
  EXPECT_THROW((void)parse_bandwidth("9Pbps", kWhere), Error);       // unknown unit
  EXPECT_THROW((void)parse_bandwidth("1001TB/s", kWhere), Error);    // above 1e15 B/s
  EXPECT_DOUBLE_EQ(parse_bandwidth("1000TB/s", kWhere), 1e15);       // the limit itself
  EXPECT_THROW((void)parse_bandwidth("1e-300Gbps", kWhere), Error);  // below 1 kB/s
  EXPECT_THROW((void)parse_bandwidth("10", kWhere), Error);          // 10 B/s
  EXPECT_DOUBLE_EQ(parse_bandwidth("8kbps", kWhere), 1e3);
  EXPECT_THROW((void)parse_duration("1e308s", kWhere), Error);
  EXPECT_THROW((void)parse_duration("300h", kWhere), Error);  // 1.08e6 s
  EXPECT_DOUBLE_EQ(parse_duration("1e6s", kWhere), 1e6);
  EXPECT_THROW((void)parse_bytes("1e300", kWhere), Error);
  EXPECT_THROW((void)parse_bytes("2000TB", kWhere), Error);
  EXPECT_DOUBLE_EQ(parse_bytes("1000TB", kWhere), 1e15);
  try {
    (void)parse_duration("1e308s", {"s.yaml", 4, "cluster.link_latency"});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.where().line, 4);
    EXPECT_NE(std::string(e.what()).find("1e308s"), std::string::npos) << e.what();
  }
}

TEST(Units, FormatUsesTheRightUnit) {
  // Bandwidth prints in bits, as network engineers write it.
  EXPECT_NE(format_bandwidth(1.25e9).find("Gbps"), std::string::npos) << format_bandwidth(1.25e9);
  EXPECT_NE(format_bandwidth(12.5e6).find("Mbps"), std::string::npos);
  EXPECT_NE(format_duration(5e-6).find("us"), std::string::npos);
  EXPECT_NE(format_duration(0.292).find("ms"), std::string::npos);
  EXPECT_NE(format_duration(20e-9).find("ns"), std::string::npos);
  EXPECT_NE(format_bytes(25e6).find("MB"), std::string::npos);
  EXPECT_NE(format_bytes(2e9).find("GB"), std::string::npos);
}

TEST(Units, FormatThenParseRoundTrips) {
  // Formatting keeps 3 significant digits, so these values come back exactly.
  for (double bw : {1.25e9, 3.125e9, 12.5e6, 125e9}) {
    EXPECT_DOUBLE_EQ(parse_bandwidth(format_bandwidth(bw), kWhere), bw) << format_bandwidth(bw);
  }
  for (double s : {5e-6, 0.292, 1.5, 20e-9}) {
    EXPECT_NEAR(parse_duration(format_duration(s), kWhere), s, s * 1e-12) << format_duration(s);
  }
  for (double b : {25e6, 2e9, 512.0}) {
    EXPECT_DOUBLE_EQ(parse_bytes(format_bytes(b), kWhere), b) << format_bytes(b);
  }
}

}  // namespace
}  // namespace stepcast
