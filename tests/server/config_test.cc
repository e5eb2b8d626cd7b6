// Tests for the server configuration: the option table, conf/larder.conf, config-file and
// command-line parsing, CONFIG GET/SET/REWRITE.
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <gtest/gtest.h>

#include "common/args.h"
#include "config/bind_address.h"
#include "config/config.h"
#include "config_test_fixture.h"

namespace larder::config {
namespace {

using namespace test_support;  // NOLINT: the fixture and its helpers
using common::SplitArgs;

TEST(OptionTableTest, NamesAreLowercaseUniqueAndDocumented) {
  std::set<std::string_view> names;
  for (const Option& opt : OptionTable()) {
    EXPECT_TRUE(names.insert(opt.name).second) << opt.name;
    for (char c : opt.name) EXPECT_TRUE((c >= 'a' && c <= 'z') || c == '-') << opt.name;
    EXPECT_FALSE(opt.doc.empty()) << opt.name;
    EXPECT_TRUE(opt.parse && opt.format) << opt.name;
    EXPECT_EQ(FindOption(opt.name), &opt);
  }
  EXPECT_EQ(FindOption("Max-Disk-BYTES"), FindOption("max-disk-bytes"));
  EXPECT_EQ(FindOption("no-such-option"), nullptr);
}

// The default line of every option (derived from ServerConfig's initialiser) reads back as that
// default: formatting and parsing agree.
TEST(OptionTableTest, DefaultLineParsesBackToTheDefault) {
  const ServerConfig defaults;
  for (const Option& opt : OptionTable()) {
    auto args = SplitArgs(DefaultLine(opt));
    ASSERT_TRUE(args.has_value()) << opt.name;
    ASSERT_EQ(args->front(), opt.name);
    args->erase(args->begin());
    ServerConfig parsed;
    parsed.port = 1;  // make sure parsing writes something (checked below for port)
    EXPECT_EQ(opt.parse(*args, &parsed), std::nullopt) << opt.name;
    EXPECT_EQ(FormatValue(opt, parsed), FormatValue(opt, defaults)) << opt.name;
  }
  EXPECT_EQ(DefaultLine(*FindOption("port")), "port 6379");
  EXPECT_EQ(DefaultLine(*FindOption("proto-max-bulk-len")), "proto-max-bulk-len 512mb");
  EXPECT_EQ(DefaultLine(*FindOption("requirepass")), "requirepass \"\"");
  ServerConfig parsed;
  FindOption("port")->parse({"6379"}, &parsed);
  EXPECT_EQ(parsed.port, 6379);
}

TEST(ActiveIoThreadsTest, ASetCountIsKeptAndZeroIsHalfTheCpusOneOrTwo) {
  ServerConfig cfg;
  cfg.io_threads = 5;
  EXPECT_EQ(ActiveIoThreads(cfg), 5);
  cfg.io_threads = 0;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  ASSERT_EQ(::sched_getaffinity(0, sizeof(cpus), &cpus), 0);
  EXPECT_EQ(ActiveIoThreads(cfg), CPU_COUNT(&cpus) >= 4 ? 2 : 1);
}

TEST(OptionTableTest, RuntimeMutability) {
  for (const char* name :
       {"dir", "logfile", "pidfile", "unixsocket", "bind", "port", "unixsocketperm", "io-threads",
        "engine-threads", "pipeline-nice", "databases"}) {
    EXPECT_FALSE(FindOption(name)->runtime_mutable) << name;
  }
  for (const char* name :
       {"maxclients", "timeout", "requirepass", "loglevel", "client-output-buffer-limit"}) {
    EXPECT_TRUE(FindOption(name)->runtime_mutable) << name;
  }
  // The engine fixes its budget and policy when it opens.
  for (const char* name : {"max-disk-bytes", "eviction-policy", "max-reinsert-fraction"}) {
    EXPECT_FALSE(FindOption(name)->runtime_mutable) << name;
  }
}

// conf/larder.conf loads, and lists every option exactly once, at its default.
TEST(ShippedConfTest, LoadsAndListsEveryOptionOnceAtItsDefault) {
  const std::string path = std::string(LARDER_SOURCE_DIR) + "/conf/larder.conf";
  Config c;
  ASSERT_EQ(c.LoadFile(path), std::nullopt);
  EXPECT_EQ(AllValues(c), AllValues(Config()));

  std::map<std::string, int> seen;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto args = SplitArgs(line);
    ASSERT_TRUE(args && !args->empty()) << line;
    const Option* opt = FindOption((*args)[0]);
    ASSERT_NE(opt, nullptr) << line;
    ++seen[std::string(opt->name)];
    EXPECT_EQ(line, DefaultLine(*opt));
  }
  for (const Option& opt : OptionTable()) EXPECT_EQ(seen[std::string(opt.name)], 1) << opt.name;
  EXPECT_EQ(seen.size(), OptionTable().size());
}

// Config lines split as inline requests do (common::SplitArgs, Redis's sdssplitargs):
// \v and \f stay inside an unquoted argument, a NUL ends the line, a line of blanks is skipped.
TEST_F(ConfigTest, LinesSplitAsRedisSplitsThem) {
  Config c;
  ASSERT_EQ(
      c.LoadFile(Write("v.conf", std::string("logfile a\vb\n \f \ndir 'x y'\0 ignored\n", 35))),
      std::nullopt);
  EXPECT_EQ(c.values().logfile, "a\vb");
  EXPECT_EQ(c.values().dir, "x y");
}

TEST_F(ConfigTest, LoadFileAppliesOptions) {
  std::string path = Write("ok.conf",
                           "# comment\n"
                           "   # indented comment\n"
                           "\n"
                           "PORT 7000\r\n"
                           "Bind 10.0.0.1 ::1\n"
                           "max-disk-bytes 100GB\n"
                           "requirepass \"pa ss\\x21\"\n"
                           "unixsocketperm 770\n"
                           "eviction-policy FIFO\n"
                           "protected-mode No\n"
                           "timeout 5\n"
                           "timeout 6\n"
                           "client-output-buffer-limit normal 1mb 512kb 60 pubsub 32mb 8mb 60\n"
                           "max-reinsert-fraction 0.25\n"
                           "dir \"/data dir/x\"");  // no final newline
  Config c;
  ASSERT_EQ(c.LoadFile(path), std::nullopt);
  const ServerConfig& v = c.values();
  EXPECT_EQ(v.port, 7000);
  EXPECT_EQ(v.bind, (std::vector<std::string>{"10.0.0.1", "::1"}));
  EXPECT_EQ(v.max_disk_bytes, 100ull << 30);
  EXPECT_EQ(v.requirepass, "pa ss!");
  EXPECT_EQ(v.unixsocketperm, 0770);
  EXPECT_EQ(v.eviction_policy, "fifo");
  EXPECT_FALSE(v.protected_mode);
  EXPECT_EQ(v.timeout, 6);  // the last line wins
  EXPECT_EQ(v.client_output_buffer_limit.hard_bytes, 1u << 20);
  EXPECT_EQ(v.client_output_buffer_limit.soft_bytes, 512u << 10);
  EXPECT_EQ(v.client_output_buffer_limit.soft_seconds, 60);
  EXPECT_EQ(v.max_reinsert_fraction, 0.25);
  EXPECT_EQ(v.dir, "/data dir/x");
  EXPECT_EQ(c.file_path(), path);
  EXPECT_EQ(v.maxclients, 10000);  // untouched options keep their defaults

  c.Reset();
  EXPECT_EQ(AllValues(c), AllValues(Config()));
  EXPECT_EQ(c.file_path(), "");
}

TEST_F(ConfigTest, LoadFileErrorsNameFileLineAndOption) {
  const std::string p = dir_ + "/bad.conf";
  EXPECT_EQ(LoadError("# c\n\nport 70000\n"),
            p + ":3: option 'port': '70000' is not an integer in [0, 65535]");
  EXPECT_EQ(LoadError("prot 6379\n"), p + ":1: unknown option 'prot'");
  EXPECT_EQ(LoadError("port 1 2\n"), p + ":1: option 'port': wrong number of arguments");
  EXPECT_EQ(LoadError("port\n"), p + ":1: option 'port': wrong number of arguments");
  EXPECT_EQ(LoadError("bind\n"), p + ":1: option 'bind': wrong number of arguments");
  EXPECT_EQ(LoadError("requirepass \"abc\n"), p + ":1: option 'requirepass': unbalanced quotes");
  EXPECT_EQ(LoadError("port 06379\n"),
            p + ":1: option 'port': '06379' is not an integer in [0, 65535]");
  EXPECT_EQ(LoadError("memtable-bytes 2mb\n"),
            p + ":1: option 'memtable-bytes': must be 0 (derived from max-disk-bytes) or at "
                "least 4mb, not 2097152");
  EXPECT_EQ(LoadError("protected-mode maybe\n"),
            p + ":1: option 'protected-mode': 'maybe' is not yes or no");
  EXPECT_EQ(LoadError("eviction-policy random\n"),
            p + ":1: option 'eviction-policy': 'random' is not one of lru-reuse, lru, fifo, none");
  EXPECT_EQ(LoadError("timeout -1\n"),
            p + ":1: option 'timeout': '-1' is not an integer in [0, 2147483647]");
  EXPECT_EQ(LoadError("unixsocketperm 800\n"),
            p + ":1: option 'unixsocketperm': '800' is not an octal mode in [0, 777]");
  EXPECT_EQ(LoadError("max-reinsert-fraction 1.5\n"),
            p + ":1: option 'max-reinsert-fraction': '1.5' is not a number in [0, 1]");
  EXPECT_EQ(LoadError("databases 16\n"),
            p + ":1: option 'databases': '16' is not an integer in [1, 1]");
  EXPECT_EQ(LoadError("proto-max-bulk-len 1k\n"),
            p + ":1: option 'proto-max-bulk-len': '1k' is not a byte count >= 1048576" +
                " (integer with optional unit k, kb, m, mb, g, gb)");
  EXPECT_EQ(LoadError("max-disk-bytes -1\n"),
            p + ":1: option 'max-disk-bytes': '-1' is not a byte count" +
                " (integer with optional unit k, kb, m, mb, g, gb)");
  EXPECT_EQ(LoadError("client-output-buffer-limit normal 0 0\n"),
            p + ":1: option 'client-output-buffer-limit': wrong number of arguments");
  EXPECT_EQ(LoadError("client-output-buffer-limit master 0 0 0\n"),
            p + ":1: option 'client-output-buffer-limit': 'master' is not a client class" +
                " (normal, replica, pubsub)");
  EXPECT_EQ(LoadError("requirepass \"a\\x01b\"\n"),
            p + ":1: option 'requirepass': password contains control characters");
  EXPECT_EQ(LoadError("dir \"\"\n"), p + ":1: option 'dir': the data directory must not be empty");

  Config c;
  auto err = c.LoadFile(dir_ + "/missing.conf");
  EXPECT_EQ(err, dir_ + "/missing.conf: cannot read: No such file or directory");
}

TEST_F(ConfigTest, FailedLoadChangesNothing) {
  Config c;
  std::string good = Write("good.conf", "port 7000\n");
  ASSERT_EQ(c.LoadFile(good), std::nullopt);
  EXPECT_NE(c.LoadFile(Write("bad.conf", "port 7001\nmaxclients 5\nprot 1\n")), std::nullopt);
  EXPECT_EQ(c.values().port, 7000);
  EXPECT_EQ(c.values().maxclients, 10000);
  EXPECT_EQ(c.file_path(), good);
}

TEST_F(ConfigTest, ApplyArgsTakesMultiArgumentOptions) {
  Config c;
  ASSERT_EQ(c.LoadFile(Write("a.conf", "port 7000\nmaxclients 5\n")), std::nullopt);
  ASSERT_EQ(
      c.ApplyArgs({"--port", "7001", "--dir", "/x", "--BIND", "127.0.0.1", "::1", "--requirepass",
                   "", "--client-output-buffer-limit", "normal", "1mb", "0", "0"}),
      std::nullopt);
  EXPECT_EQ(c.values().port, 7001);
  EXPECT_EQ(c.values().dir, "/x");
  EXPECT_EQ(c.values().bind, (std::vector<std::string>{"127.0.0.1", "::1"}));
  EXPECT_EQ(c.values().client_output_buffer_limit.hard_bytes, 1u << 20);
  EXPECT_EQ(c.values().maxclients, 5);  // from the file, not overridden
  EXPECT_EQ(c.ApplyArgs({}), std::nullopt);

  EXPECT_EQ(c.ApplyArgs({"--prot", "1"}), "command line: unknown option 'prot'");
  EXPECT_EQ(c.ApplyArgs({"--port", "70000"}),
            "command line: option 'port': '70000' is not an integer in [0, 65535]");
  EXPECT_EQ(c.ApplyArgs({"--port"}), "command line: option 'port': wrong number of arguments");
  EXPECT_EQ(c.ApplyArgs({"--port", "1", "2"}),
            "command line: option 'port': wrong number of arguments");
  EXPECT_EQ(c.ApplyArgs({"7000"}), "command line: expected --<option>, got '7000'");
  EXPECT_EQ(c.ApplyArgs({"--maxclients", "9", "--maxclients", "0"}),
            "command line: option 'maxclients': '0' is not an integer in [1, 1000000]");
  EXPECT_EQ(c.values().maxclients, 5);  // all or nothing
}

TEST_F(ConfigTest, BindTakesRedisAddressFormsAndRefusesNames) {
  Config c;
  ASSERT_EQ(c.ApplyArgs({"--bind", "127.0.0.1", "-::1", "*", "::*", "-10.1.2.3", "fe80::1%lo"}),
            std::nullopt);
  EXPECT_FALSE(larder::config::ParseBindAddress("fe80::1%"));
  EXPECT_FALSE(larder::config::ParseBindAddress("10.0.0.1%lo"));
  for (const auto& [entry, ip, optional] :
       std::vector<std::tuple<std::string, std::string, bool>>{{"127.0.0.1", "127.0.0.1", false},
                                                               {"-::1", "::1", true},
                                                               {"*", "0.0.0.0", false},
                                                               {"::*", "::", false}}) {
    auto addr = larder::config::ParseBindAddress(entry);
    ASSERT_TRUE(addr) << entry;
    EXPECT_EQ(addr->ip, ip);
    EXPECT_EQ(addr->optional, optional);
  }
  EXPECT_EQ(c.LoadFile(Write("b.conf", "bind 127.0.0.1 localhost\n")),
            dir_ +
                "/b.conf:1: option 'bind': invalid address 'localhost': an IPv4 or IPv6 "
                "address, * or ::*, optionally prefixed with - (skipped when this machine "
                "lacks it)");
  EXPECT_EQ(c.values().bind.size(), 6u);  // unchanged
}

TEST_F(ConfigTest, EvictTogetherTakesSuffixPairsOrNothing) {
  using SuffixPairs = std::vector<std::pair<std::string, std::string>>;
  Config c;
  EXPECT_EQ(c.Get("evict-together"), (Pairs{{"evict-together", "kv_bytes metadata"}}));
  ASSERT_EQ(c.LoadFile(Write("e.conf", "evict-together a.kv a.meta b c\n")), std::nullopt);
  EXPECT_EQ(c.values().evict_together, (SuffixPairs{{"a.kv", "a.meta"}, {"b", "c"}}));
  EXPECT_EQ(c.Get("evict-together"), (Pairs{{"evict-together", "a.kv a.meta b c"}}));
  ASSERT_EQ(c.ApplyArgs({"--evict-together", ""}), std::nullopt);
  EXPECT_EQ(c.values().evict_together, SuffixPairs{});
  EXPECT_EQ(c.Get("evict-together"), (Pairs{{"evict-together", ""}}));
  EXPECT_EQ(c.ApplyArgs({"--evict-together", "kv_bytes"}),
            "command line: option 'evict-together': expected pairs of key suffixes, or \"\" for "
            "none");
  EXPECT_EQ(c.ApplyArgs({"--evict-together", "x", "x"}),
            "command line: option 'evict-together': 'x' 'x' is not a pair of two different, "
            "non-empty suffixes");
  EXPECT_EQ(c.Set("evict-together", "a b"), Immutable("evict-together"));
  // CONFIG REWRITE writes "" for none, which loads back as none.
  ASSERT_EQ(c.Rewrite(), std::nullopt);
  EXPECT_NE(ReadAll(c.file_path()).find("evict-together \"\"\n"), std::string::npos);
  Config again;
  ASSERT_EQ(again.LoadFile(c.file_path()), std::nullopt);
  EXPECT_EQ(again.values().evict_together, SuffixPairs{});
}

TEST_F(ConfigTest, GetMatchesRedisGlobsAndFormatsLikeRedis) {
  Config c;
  EXPECT_EQ(c.Get("port"), (Pairs{{"port", "6379"}}));
  EXPECT_EQ(c.Get("PORT"), (Pairs{{"port", "6379"}}));
  EXPECT_EQ(c.Get("*threads"), (Pairs{{"io-threads", "0"}, {"engine-threads", "8"}}));
  EXPECT_EQ(c.Get("tcp-?eepalive"), (Pairs{{"tcp-keepalive", "300"}}));
  EXPECT_EQ(c.Get("wal*"), (Pairs{{"wal", "no"}, {"wal-sync", "no"}}));
  EXPECT_EQ(c.Get("[l]og*"), (Pairs{{"loglevel", "notice"}, {"logfile", ""}}));
  EXPECT_EQ(c.Get("max\\-key-bytes"), (Pairs{{"max-key-bytes", "65536"}}));
  EXPECT_EQ(c.Get("[^a-z]*"), Pairs{});
  EXPECT_EQ(c.Get("nothing"), Pairs{});
  EXPECT_EQ(c.Get("*").size(), OptionTable().size());
  EXPECT_EQ(c.Get("proto-max-bulk-len"), (Pairs{{"proto-max-bulk-len", "536870912"}}));
  EXPECT_EQ(c.Get("protected-mode"), (Pairs{{"protected-mode", "yes"}}));
  EXPECT_EQ(c.Get("client-output-buffer-limit"),
            (Pairs{{"client-output-buffer-limit", "normal 0 0 0 pubsub 33554432 8388608 60"}}));

  ASSERT_EQ(c.LoadFile(Write("g.conf",
                             "unixsocketperm 0700\nbind 127.0.0.1 ::1\nrequirepass \"a b\"\n"
                             "client-output-buffer-limit normal 1mb 512kb 60\n"
                             "max-reinsert-fraction .25\n")),
            std::nullopt);
  EXPECT_EQ(c.Get("unixsocketperm"), (Pairs{{"unixsocketperm", "700"}}));
  EXPECT_EQ(c.Get("bind"), (Pairs{{"bind", "127.0.0.1 ::1"}}));
  EXPECT_EQ(c.Get("requirepass"), (Pairs{{"requirepass", "a b"}}));
  EXPECT_EQ(c.Get("client-output-buffer-limit"),
            (Pairs{{"client-output-buffer-limit",
                    "normal 1048576 524288 60 pubsub 33554432 8388608 60"}}));
  EXPECT_EQ(c.Get("max-reinsert-fraction"), (Pairs{{"max-reinsert-fraction", "0.25"}}));
}

// notify-keyspace-events reads and prints its letters as Redis 7 does (the pairs were checked
// against redis-server 7.0: "KEAn" prints "AKE", "mKg" prints "gKm").
TEST_F(ConfigTest, KeyspaceEventFlagsFormatLikeRedis) {
  const std::pair<std::string, std::string> cases[] = {
      {"KEA", "AKE"},      {"KEAn", "AKE"}, {"Kx$g", "g$xK"}, {"En", "nE"}, {"Em", "Em"},
      {"g$lshzxetd", "A"}, {"mKg", "gKm"},  {"", ""},         {"EG", "EG"}, {"AGK", "AKG"},
  };
  for (const auto& [in, out] : cases) {
    Config c;
    ASSERT_EQ(c.Set(Pairs{{"notify-keyspace-events", in}}), std::nullopt) << in;
    EXPECT_EQ(c.Get("notify-keyspace-events"), (Pairs{{"notify-keyspace-events", out}})) << in;
  }
  Config c;
  ASSERT_EQ(c.Set(Pairs{{"notify-keyspace-events", "KEx"}}), std::nullopt);
  EXPECT_EQ(c.Set(Pairs{{"notify-keyspace-events", "KEz9"}}),
            "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - "
            "Invalid event class character. Use 'Ag$lshzxeKEtmdnG'.");
  EXPECT_EQ(c.Get("notify-keyspace-events"), (Pairs{{"notify-keyspace-events", "xKE"}}));
}

TEST_F(ConfigTest, SetRefusesImmutableUnknownAndBadValues) {
  Config c;
  for (const char* name : {"port", "dir", "logfile", "pidfile", "unixsocket", "bind"}) {
    EXPECT_EQ(c.Set(name, "/etc"), Immutable(name)) << name;
  }
  EXPECT_EQ(c.Set("prot", "1"),
            "ERR Unknown option or number of arguments for CONFIG SET - 'prot'");
  EXPECT_EQ(c.Set("maxclients", "0"),
            Failed("maxclients", "'0' is not an integer in [1, 1000000]"));
  EXPECT_EQ(c.Set("maxclients", "1 2"),
            Failed("maxclients", "'1 2' is not an integer in [1, 1000000]"));
  EXPECT_EQ(c.Set("max-reinsert-fraction", "0.1"), Immutable("max-reinsert-fraction"));
  EXPECT_EQ(c.Set("eviction-policy", "fifo"), Immutable("eviction-policy"));
  EXPECT_EQ(c.Set("requirepass", "a\r\nb"),
            Failed("requirepass", "password contains control characters"));
  EXPECT_EQ(c.Set("requirepass", std::string(513, 'x')),
            Failed("requirepass", "password longer than 512 bytes"));
  EXPECT_EQ(c.Set("client-output-buffer-limit", "normal 1mb"),
            Failed("client-output-buffer-limit", "wrong number of arguments"));
  EXPECT_EQ(c.Set("timeout", "1\r\n"),
            Failed("timeout", "'1\\x0d\\x0a' is not an integer in [0, 2147483647]"));
  EXPECT_EQ(c.Set("slowlog-log-slower-than", "-2"),  // Redis's range: -1 (none) and up
            Failed("slowlog-log-slower-than", "'-2' is not an integer >= -1"));
  EXPECT_EQ(AllValues(c), AllValues(Config()));

  EXPECT_EQ(c.Set("requirepass", std::string(512, 'x')), std::nullopt);
  EXPECT_EQ(c.Set("MAXCLIENTS", "5"), std::nullopt);
  EXPECT_EQ(c.Set("loglevel", "WARNING"), std::nullopt);
  EXPECT_EQ(c.Set("proto-max-bulk-len", "2gb"), std::nullopt);
  EXPECT_EQ(c.Set("client-output-buffer-limit", " normal  1mb 2mb  3 "), std::nullopt);
  EXPECT_EQ(c.values().maxclients, 5);
  EXPECT_EQ(c.values().loglevel, "warning");
  EXPECT_EQ(c.values().proto_max_bulk_len, 2ull << 30);
  EXPECT_EQ(c.values().client_output_buffer_limit.soft_bytes, 2u << 20);
  EXPECT_EQ(c.values().client_output_buffer_limit.soft_seconds, 3);
}

TEST_F(ConfigTest, MultiSetIsAllOrNothing) {
  Config c;
  EXPECT_EQ(c.Set(Pairs{{"maxclients", "100"}, {"timeout", "5"}, {"tcp-keepalive", "-1"}}),
            Failed("tcp-keepalive", "'-1' is not an integer in [0, 2147483647]"));
  EXPECT_EQ(c.Set(Pairs{{"maxclients", "100"}, {"dir", "/x"}}), Immutable("dir"));
  EXPECT_EQ(c.Set(Pairs{{"maxclients", "100"}, {"bogus", "1"}}),
            "ERR Unknown option or number of arguments for CONFIG SET - 'bogus'");
  EXPECT_EQ(c.Set(Pairs{{"timeout", "1"}, {"TIMEOUT", "2"}}),
            Failed("TIMEOUT", "duplicate parameter"));
  EXPECT_EQ(c.Set(Pairs{}), "ERR wrong number of arguments for 'config|set' command");
  EXPECT_EQ(AllValues(c), AllValues(Config()));

  EXPECT_EQ(c.Set(Pairs{{"maxclients", "100"}, {"timeout", "5"}}), std::nullopt);
  EXPECT_EQ(c.values().maxclients, 100);
  EXPECT_EQ(c.values().timeout, 5);
}

TEST_F(ConfigTest, ApplyFnsRunOnChangeAndRollBack) {
  Config c;
  std::vector<int64_t> maxclients_seen;
  ASSERT_EQ(c.SetApplyFn("maxclients",
                         [&](const ServerConfig& next) -> std::optional<std::string> {
                           EXPECT_EQ(c.values().maxclients, 10000);  // not committed yet
                           maxclients_seen.push_back(next.maxclients);
                           return std::nullopt;
                         }),
            std::nullopt);
  ASSERT_EQ(c.SetApplyFn("timeout",
                         [](const ServerConfig& next) -> std::optional<std::string> {
                           if (next.timeout == 13) return std::string("unlucky");
                           return std::nullopt;
                         }),
            std::nullopt);
  EXPECT_EQ(c.SetApplyFn("dir", nullptr), "option 'dir': cannot change at runtime");
  EXPECT_EQ(c.SetApplyFn("nope", nullptr), "unknown option 'nope'");

  EXPECT_EQ(c.Set("maxclients", "10000"), std::nullopt);  // unchanged: not applied
  EXPECT_TRUE(maxclients_seen.empty());

  // maxclients is applied, timeout refuses, maxclients is re-applied with the old value.
  EXPECT_EQ(c.Set(Pairs{{"maxclients", "200"}, {"timeout", "13"}}), Failed("timeout", "unlucky"));
  EXPECT_EQ(maxclients_seen, (std::vector<int64_t>{200, 10000}));
  EXPECT_EQ(c.values().maxclients, 10000);
  EXPECT_EQ(c.values().timeout, 0);
}

}  // namespace
}  // namespace larder::config
