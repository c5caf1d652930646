// The unit helpers of units.hpp, as scenario files use them: bits vs bytes, decimal vs binary
// prefixes, bare numbers as SI base units, and errors that name where the value came from.
#include "stepcast/units.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "stepcast/error.hpp"

namespace stepcast {
namespace {
namespace units_test {  // this file's own names: test files are compiled several to a unit

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

// The tables' one number format (issue: "16 ms, 1.6 s, 2.12e+07 s" in one table). The expected
// texts follow from the rule, 3 significant digits with trailing zeros and integer digits kept.
TEST(NumberFormat, ThreeSignificantDigitsNeverAnExponent) {
  EXPECT_EQ(format_number(1206.3), "1210");
  EXPECT_EQ(format_number(255.6), "256");
  EXPECT_EQ(format_number(45.67), "45.7");
  EXPECT_EQ(format_number(0.51234), "0.512");
  EXPECT_EQ(format_number(1), "1.00");
  EXPECT_EQ(format_number(0), "0");
  EXPECT_EQ(format_number(-2.5), "-2.50");
  EXPECT_EQ(format_number(2.12e7), "21200000");
  EXPECT_EQ(format_number(0.00123), "0.00123");
  // Beyond 1e15 a double's digits past the 17th are noise: the exponent, as below 1e-6.
  EXPECT_EQ(format_number(6.91e22), "6.91e+22");
  EXPECT_EQ(format_number(1.23e15), "1230000000000000");
}

TEST(NumberFormat, RoundingUpCarriesIntoTheNextDigit) {
  EXPECT_EQ(format_number(99.96), "100");
  EXPECT_EQ(format_number(9.996), "10.0");
  EXPECT_EQ(format_percent(0.99996), "100%");
  // ... and into the next unit: 999.6 ms is 1.00 s, not "1e+03 ms" or "1000 ms".
  EXPECT_EQ(format_duration(0.9996), "1.00 s");
  EXPECT_EQ(format_bytes(999.6e6), "1.00 GB");
}

TEST(NumberFormat, OnePrecisionAcrossMagnitudes) {
  EXPECT_EQ(format_duration(0.016), "16.0 ms");
  EXPECT_EQ(format_duration(1.6), "1.60 s");
  EXPECT_EQ(format_duration(2.12e7), "21200000 s");
  EXPECT_EQ(format_duration(5e-6), "5.00 us");
  EXPECT_EQ(format_duration(789e-9), "789 ns");
  EXPECT_EQ(format_duration(0), "0 s");
  EXPECT_EQ(format_percent(0.5), "50.0%");
  EXPECT_EQ(format_percent(0.9872), "98.7%");
  EXPECT_EQ(format_percent(0.054321), "5.43%");
}

TEST(NumberFormat, SignedPercentKeepsSignAndThreeDigitsOfSmallChanges) {
  EXPECT_EQ(format_signed_percent(0.251), "+25.1%");
  EXPECT_EQ(format_signed_percent(-0.04), "-4.00%");
  // coarse vs fine of examples/llama3-70b-fsdp-tp.yaml: was "+0%", sign and size lost.
  EXPECT_EQ(format_signed_percent(-0.000452), "-0.0452%");
  EXPECT_EQ(format_signed_percent(0.0000123), "+0.00123%");
  EXPECT_EQ(format_signed_percent(0.0), "0%");
  EXPECT_EQ(format_signed_percent(-0.0), "0%");
  EXPECT_EQ(format_signed_percent(3e-16), "0%");  // a double's rounding of two equal times
}

// The limits the errors state (1 PB/s = 8 Pbps, 1 PB) are in units that parse.
TEST(Units, PetaPrefixesParseUpToTheLimit) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("8Pbps", kWhere), 1e15);
  EXPECT_DOUBLE_EQ(parse_bandwidth("4Pbps", kWhere), 5e14);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1PB/s", kWhere), 1e15);
  EXPECT_DOUBLE_EQ(parse_bytes("1PB", kWhere), 1e15);
  try {
    (void)parse_bandwidth("9Pbps", kWhere);
    ADD_FAILURE() << "9 Pbps is over the limit";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("1 PB/s = 8 Pbps"), std::string::npos) << e.what();
  }
}

// An input's bandwidth echoes in bytes/s and reads back as the same double; a derived one at 4
// significant digits.
TEST(NumberFormat, ByteRateEchoes) {
  EXPECT_EQ(echo_byte_rate(450e9), "450 GB/s");
  EXPECT_EQ(echo_byte_rate(1.25e9), "1.25 GB/s");    // 10 Gbps
  EXPECT_EQ(echo_byte_rate(3.125e9), "3.125 GB/s");  // 25 Gbps
  EXPECT_EQ(echo_byte_rate(1e15), "1 PB/s");
  for (double bw : {1.25e9, 3.125e9, 12.345e9 / 8, 1e3, 450e9})
    EXPECT_DOUBLE_EQ(parse_bandwidth(echo_byte_rate(bw), kWhere), bw) << echo_byte_rate(bw);
  EXPECT_EQ(rounded_byte_rate(75.7894736842105e9 / 8), "9.474 GB/s");
  EXPECT_EQ(rounded_byte_rate(36e9), "36 GB/s");
}

TEST(NumberFormat, UnitsForBytesRatesAndFlops) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(25e6), "25.0 MB");
  EXPECT_EQ(format_byte_rate(3.126e9), "3.13 GB/s");
  EXPECT_EQ(format_byte_rate(12.5e6), "12.5 MB/s");
  EXPECT_EQ(format_flops(1.8e14), "180 TFLOP/s");
  EXPECT_EQ(format_bandwidth(12.5e9), "100 Gbps");
}

// Echoes of inputs keep the digits the input had, and read back as the same double.
TEST(NumberFormat, EchoesReadBackExactly) {
  EXPECT_EQ(format_bandwidth(1.25e9), "10 Gbps");
  EXPECT_EQ(echo_duration(0.2917), "291.7 ms");
  EXPECT_EQ(echo_bytes(25e6), "25 MB");
  EXPECT_EQ(echo_bytes(1048576), "1.048576 MB");
  EXPECT_EQ(echo_flops(1.8e14), "180 TFLOP/s");
  for (double bw : {1.25e9, 3.1e9, 12.345e9 / 8, 1e3}) {
    EXPECT_DOUBLE_EQ(parse_bandwidth(format_bandwidth(bw), kWhere), bw) << format_bandwidth(bw);
  }
  for (double s : {0.2917, 5e-6, 1.23456789e-3}) {
    EXPECT_DOUBLE_EQ(parse_duration(echo_duration(s), kWhere), s) << echo_duration(s);
  }
}

TEST(NumberFormat, PluralsAndNonFiniteValues) {
  EXPECT_EQ(format_count(1, "flow", "flows"), "1 flow");
  EXPECT_EQ(format_count(16, "flow", "flows"), "16 flows");
  EXPECT_EQ(format_count(0, "flow", "flows"), "0 flows");
  EXPECT_EQ(format_count(1281167, "sample", "samples"), "1281167 samples");
  EXPECT_EQ(format_number(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(format_number(std::nan("")), "nan");
  EXPECT_EQ(format_duration(-std::numeric_limits<double>::infinity()), "-inf s");
}

}  // namespace units_test
}  // namespace
}  // namespace stepcast
