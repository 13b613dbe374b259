#include "core/ip.h"

#include <doctest/doctest.h>

using namespace allot::core;

static std::string canon(const char* s) {
    auto r = IpAddress::parse(s);
    REQUIRE_MESSAGE(r.ok(), s);
    return r->str();
}

TEST_CASE("IPv4 addresses parse and print as dotted quads") {
    CHECK(canon("10.0.0.1") == "10.0.0.1");
    CHECK(canon("255.255.255.255") == "255.255.255.255");
    CHECK(canon("0.0.0.0") == "0.0.0.0");
    CHECK(IpAddress::parse("10.0.0.1")->value() == 0x0a000001u);
}

TEST_CASE("malformed IPv4 addresses are rejected with the text in the message") {
    for (const char* bad : {"", "10.0.0", "10.0.0.256", "10.0.0.1.2", "01.2.3.4", "1.2.3.-4",
                            "a.b.c.d", "10..0.1", "10.0.0.1 ", " 10.0.0.1"}) {
        auto r = IpAddress::parse(bad);
        CHECK_MESSAGE(!r.ok(), bad);
        if (!r.ok()) {
            CHECK(r.code() == Errc::InvalidConfig);
        }
    }
    CHECK(IpAddress::parse("10.0.0.256").error().message.find("10.0.0.256") != std::string::npos);
}

TEST_CASE("IPv6 text is normalised: leading zeros dropped, longest zero run compressed") {
    CHECK(canon("fd00:0000:0000:0000:0000:0000:0000:0001") == "fd00::1");
    CHECK(canon("FD00::0001") == "fd00::1");
    CHECK(canon("fd00::") == "fd00::");
    CHECK(canon("::") == "::");
    CHECK(canon("::1") == "::1");
    CHECK(canon("2001:db8:0:0:1:0:0:1") == "2001:db8::1:0:0:1");
    CHECK(canon("2001:0db8:0:1:1:1:1:1") == "2001:db8:0:1:1:1:1:1");
    CHECK(canon("::ffff:10.1.2.3") == "::ffff:10.1.2.3");
    CHECK(canon("64:ff9b::192.0.2.33") == "64:ff9b::c000:221");
}

TEST_CASE("malformed IPv6 addresses are rejected") {
    for (const char* bad : {":::", "fd00:::1", "1:2:3:4:5:6:7:8:9", "fd00::1::2", "fd00:12345::",
                            "g::1", ":1:2:3:4:5:6:7", "1:2:3:4:5:6:7:", "fd00::1/64"}) {
        CHECK_MESSAGE(!IpAddress::parse(bad).ok(), bad);
    }
}

TEST_CASE("128-bit values round-trip through decimal text") {
    CHECK(u128ToString(0) == "0");
    CHECK(u128ToString(~u128(0)) == "340282366920938463463374607431768211455");
    CHECK(u128FromString("340282366920938463463374607431768211455").value() == ~u128(0));
    CHECK(!u128FromString("340282366920938463463374607431768211456"));
    CHECK(!u128FromString("-1"));
    CHECK(!u128FromString("+1"));
    CHECK(!u128FromString(""));
    CHECK(!u128FromString("12a"));
    CHECK(*u128FromString("18446744073709551616") == (u128(1) << 64));
}

TEST_CASE("CIDR parsing drops host bits") {
    auto c = Cidr::parse("192.168.2.225/28");
    REQUIRE(c.ok());
    CHECK(c->str() == "192.168.2.224/28");
    CHECK(c->last().str() == "192.168.2.239");
    auto v6 = Cidr::parse("fd00::abcd/64");
    REQUIRE(v6.ok());
    CHECK(v6->str() == "fd00::/64");
    CHECK(v6->last().str() == "fd00::ffff:ffff:ffff:ffff");
    CHECK(Cidr::parse("0.0.0.0/0")->last().str() == "255.255.255.255");
    CHECK(Cidr::parse("::/0")->last().str() == "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
}

TEST_CASE("bad CIDRs name the key and value") {
    auto r = Cidr::parse("10.0.0.0/33", "\"range\"");
    REQUIRE(!r.ok());
    CHECK(r.error().message.find("\"range\"") != std::string::npos);
    CHECK(r.error().message.find("10.0.0.0/33") != std::string::npos);
    CHECK(!Cidr::parse("10.0.0.0").ok());
    CHECK(!Cidr::parse("10.0.0.0/").ok());
    CHECK(!Cidr::parse("10.0.0.0/-1").ok());
    CHECK(!Cidr::parse("fd00::/129").ok());
    CHECK(!Cidr::parse("10.0.0.0/2x").ok());
}

TEST_CASE("offsets are taken from the network address for any IPv6 prefix") {
    auto c = *Cidr::parse("fd00::/32");
    auto ip = *IpAddress::parse("fd00:0:1::5");
    CHECK(c.contains(ip));
    CHECK(u128ToString(c.offsetOf(ip)) == "1208925819614629174706181");
    CHECK(c.at(c.offsetOf(ip)) == ip);
    auto v4 = *Cidr::parse("10.0.0.0/16");
    CHECK(v4.offsetOf(*IpAddress::parse("10.0.1.5")) == 261);
}

TEST_CASE("containment and overlap respect the address family") {
    auto a = *Cidr::parse("10.0.0.0/24");
    auto b = *Cidr::parse("10.0.0.128/25");
    auto c = *Cidr::parse("10.0.1.0/24");
    CHECK(a.overlaps(b));
    CHECK(b.overlaps(a));
    CHECK(!a.overlaps(c));
    CHECK(!a.contains(*IpAddress::parse("::a00:1")));
}

TEST_CASE("Go's sloppy parse takes leading zeros in octets and groups; the strict one does not") {
    CHECK(parseGoIp("010.001.0.1", IpSyntax::Sloppy)->str() == "10.1.0.1");
    CHECK(parseGoIp("00000000010.0.0.1", IpSyntax::Sloppy)->str() == "10.0.0.1");
    CHECK(!parseGoIp("010.001.0.1", IpSyntax::Strict));
    CHECK(parseGoIp("fd00:0000::00001", IpSyntax::Sloppy)->str() == "fd00::1");
    CHECK(!parseGoIp("fd00:0000::00001", IpSyntax::Strict));
    CHECK(parseGoIp("fd00::010.0.0.1", IpSyntax::Sloppy)->str() == "fd00::a00:1");
    CHECK(!parseGoIp("10.0.0.256", IpSyntax::Sloppy));
    CHECK(!parseGoIp("10.0.0.1 ", IpSyntax::Sloppy));
    CHECK(!parseGoIp("fe80::1%eth0", IpSyntax::Sloppy));
    CHECK(parseGoIp("FD00::1", IpSyntax::Strict)->str() == "fd00::1");
}

TEST_CASE("Go reads an IPv4-mapped address as IPv4") {
    auto a = parseGoIp("::ffff:10.0.0.1", IpSyntax::Strict);
    REQUIRE(a);
    CHECK(a->isV4());
    CHECK(a->str() == "10.0.0.1");
    CHECK(parseGoIp("::ffff:0a00:0001", IpSyntax::Strict)->isV4());
    CHECK(!parseGoIp("::10.0.0.1", IpSyntax::Strict)->isV4());
}

TEST_CASE("Go's CIDR parse: prefix zeros, host bits, mapped networks") {
    auto c = parseGoCidr("10.0.0.7/024", IpSyntax::Strict);
    REQUIRE(c);
    CHECK(c->net.str() == "10.0.0.0/24");
    CHECK(c->ip.str() == "10.0.0.7");
    CHECK(parseGoCidr("010.0.0.0/24", IpSyntax::Sloppy)->net.str() == "10.0.0.0/24");
    CHECK(!parseGoCidr("010.0.0.0/24", IpSyntax::Strict));
    CHECK(parseGoCidr("::ffff:10.0.0.0/120", IpSyntax::Strict)->net.str() == "10.0.0.0/24");
    CHECK(parseGoCidr("::ffff:10.0.0.0/96", IpSyntax::Strict)->net.str() == "0.0.0.0/0");
    CHECK(parseGoCidr("::ffff:10.0.0.0/64", IpSyntax::Strict)->net.str() == "::/64");
    CHECK(parseGoCidr("::ffff:1.2.3.4/32", IpSyntax::Strict)->net.str() == "::/32");
    CHECK(!parseGoCidr("10.0.0.0/33", IpSyntax::Sloppy));
    CHECK(!parseGoCidr("10.0.0.0/", IpSyntax::Sloppy));
    CHECK(!parseGoCidr("10.0.0.1/+8", IpSyntax::Sloppy));
    CHECK(!parseGoCidr("10.0.0.1", IpSyntax::Sloppy));
    CHECK(parseGoCidr("fd00::/0128", IpSyntax::Strict)->net.str() == "fd00::/128");
}
